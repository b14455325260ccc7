package calibrate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Probe is what a GPU probe measured: scripts/gpu-probe.py's output, or
// the reference files of the measured H200 (reference/calibration/h200),
// which have the same layout. Several files merge into one.
type Probe struct {
	GPU   string      // NVIDIA's name of the GPU, where a file gives it
	GEMMs []ProbeGEMM // projections alone, at M tokens
	Steps []ProbeStep // whole engine steps
	Loads []ProbeLoad // the GPU's counters under steady loads
	// Decode and Prefill are attention kernels timed alone.
	Decode, Prefill []ProbeAttention
	Idle            []float64 // watts of the idle GPU
}

// ProbeGEMM is one projection's time alone (weights rotated past the L2).
type ProbeGEMM struct {
	Model, Name, DType string
	M, N, K            int
	MS                 float64
}

// ProbeStep is one step composition's time: B sequences decoding at Ctx
// tokens of context and a prefill chunk of N tokens at Pos. Fused steps
// ran their elementwise kernels compiled (as vLLM V1 does); MS is the
// faster of the attention kernels tried (FA2MS, CuDNNMS where both ran).
type ProbeStep struct {
	Source         string // the file it came from
	Model          string
	Fused          bool
	B, Ctx, N      int
	Pos            int
	MS             float64
	FA2MS, CuDNNMS float64
	Kernel         string
}

// ProbeLoad is the counters under a steady stream of one step
// composition, Busy the share of the time the GPU had work (host gaps
// between steps lower it). Counters are ratios (DCGM's scale); Watts and
// SMClockMHz are NVML's readings while it ran; CopyUtil is NVML's memory
// utilisation (%).
type ProbeLoad struct {
	Source string // the file it came from
	Label  string
	// Fused loads ran the fused steps the step model prices; Gaps loads
	// came from a run of host gaps (the reference's read ~20 % less power
	// than its steady loads for the same work).
	Fused, Gaps                                             bool
	Kernel                                                  string
	B, Ctx, N                                               int
	StepMS, Busy                                            float64
	Graphics, SMActive, SMOccupancy, Tensor, DRAM, CopyUtil float64
	Watts, SMClockMHz                                       float64
}

// probeFile is the union of the files' layouts.
type probeFile struct {
	Meta  map[string]any `json:"meta"`
	GEMM  []rawGEMM      `json:"gemm"`
	Steps []rawStep      `json:"steps"`
	GPM   []rawLoad      `json:"gpm"`
	Loads []rawLoad      `json:"loads"`
	// The reference's attention kernels alone.
	AttentionFA2 []rawAttention `json:"attention_alone_fa2"`
	Decode       []rawAttention `json:"decode_attention"`
}

type rawGEMM struct {
	Model string  `json:"model"`
	Name  string  `json:"gemm"`
	DType string  `json:"dtype"`
	M     int     `json:"M"`
	N     int     `json:"N"`
	K     int     `json:"K"`
	MS    float64 `json:"ms"`
}

type rawStep struct {
	Model  string   `json:"model"`
	Fused  bool     `json:"fused"`
	B      int      `json:"decode_seqs"`
	Ctx    int      `json:"ctx"`
	N      int      `json:"prefill_tokens"`
	Pos    int      `json:"chunk_pos"`
	Median float64  `json:"median_ms"`
	FA2    *float64 `json:"fa2_ms"`
	CuDNN  *float64 `json:"cudnn_ms"`
	Kernel string   `json:"attention_kernel"`
	Tag    string   `json:"tag"`
	Layers int      `json:"layers"`
}

type rawLoad struct {
	Load    string             `json:"load"`
	Kernel  string             `json:"attention_kernel"`
	B       *int               `json:"B"`
	Ctx     int                `json:"ctx"`
	N       int                `json:"N"`
	StepMS  float64            `json:"step_ms"`
	GapMS   float64            `json:"gap_ms"`
	Busy    *float64           `json:"busy_share"`
	BusyExp *float64           `json:"busy_share_expected"`
	GPM     map[string]float64 `json:"gpm"`
	NVML    map[string]float64 `json:"nvml"`
}

type rawAttention struct {
	Kind    string  `json:"kind"`
	Backend string  `json:"backend"`
	B       int     `json:"B"`
	Ctx     int     `json:"ctx"`
	N       int     `json:"N"`
	MS      float64 `json:"ms"`
}

// ProbeAttention is an attention kernel alone over all the layers: decode
// of B sequences at Ctx tokens of KV, or a causal prefill of N tokens.
type ProbeAttention struct {
	Backend   string
	B, Ctx, N int
	MS        float64
}

// ReadProbe reads and merges probe files.
func ReadProbe(paths ...string) (*Probe, error) {
	p := &Probe{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read probe: %w", err)
		}
		if err := p.add(b, filepath.Base(path)); err != nil {
			return nil, fmt.Errorf("read probe %s: %w", path, err)
		}
	}
	if len(p.Steps) == 0 && len(p.GEMMs) == 0 && len(p.Loads) == 0 {
		return nil, fmt.Errorf("read probe: no steps, GEMMs or counter loads in %s", strings.Join(paths, ", "))
	}
	return p, nil
}

// ParseProbe reads one probe file's bytes.
func ParseProbe(b []byte) (*Probe, error) {
	p := &Probe{}
	if err := p.add(b, ""); err != nil {
		return nil, fmt.Errorf("parse probe: %w", err)
	}
	return p, nil
}

func (p *Probe) add(b []byte, source string) error {
	var f probeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	for _, k := range []string{"gpu", "name"} {
		if s, ok := f.Meta[k].(string); ok && s != "" && p.GPU == "" {
			p.GPU = s
		}
	}
	for _, g := range f.GEMM {
		if g.M < 1 || g.N < 1 || g.K < 1 || !(g.MS > 0) {
			return fmt.Errorf("gemm %q: M, N, K and ms must be positive (%+v)", g.Name, g)
		}
		model, name := g.Model, g.Name
		if model == "" {
			// The extras name the shape in the GEMM: "8b_qkv", "70b_tp2_down".
			if i := strings.Index(name, "_"); i > 0 {
				model, name = "llama-3.1-"+name[:i], name[i+1:]
			}
		}
		p.GEMMs = append(p.GEMMs, ProbeGEMM{Model: model, Name: name, DType: cmp.Or(g.DType, "bf16"), M: g.M, N: g.N, K: g.K, MS: g.MS})
	}
	for _, s := range f.Steps {
		if s.Tag == "compile" || s.Tag == "gpm" || s.Layers > 0 {
			continue // a warm-up, a counters run's own timing, a cut-down model
		}
		if s.B < 0 || s.N < 0 || s.Pos < 0 || s.B+s.N == 0 || !(s.Median > 0) {
			return fmt.Errorf("step %+v: needs decode sequences or prefill tokens, and a positive time", s)
		}
		st := ProbeStep{Source: source, Model: s.Model, Fused: s.Fused, B: s.B, Ctx: s.Ctx, N: s.N, Pos: s.Pos, MS: s.Median, Kernel: s.Kernel}
		if s.B == 0 {
			st.Ctx = 0
		}
		if s.FA2 != nil {
			st.FA2MS = *s.FA2
		}
		if s.CuDNN != nil {
			st.CuDNNMS = *s.CuDNN
		}
		p.Steps = append(p.Steps, st)
	}
	// The counters of fused steps: glassbox's probe runs every load
	// fused; the reference's fused file says so in its steps.
	_, fused := f.Meta["probe"]
	for _, s := range f.Steps {
		fused = fused || s.Fused
	}
	for i, l := range append(f.GPM, f.Loads...) {
		if l.Load == "idle" {
			if w, ok := l.NVML["power_w"]; ok && w > 0 {
				p.Idle = append(p.Idle, w)
			}
			continue
		}
		if l.GPM == nil {
			continue // the counters could not be read
		}
		ld := ProbeLoad{Source: source, Label: l.Load, Fused: fused, Gaps: i >= len(f.GPM), Kernel: l.Kernel, Ctx: l.Ctx, N: l.N, StepMS: l.StepMS,
			Graphics: l.GPM["graphics"] / 100, SMActive: l.GPM["sm_active"] / 100, SMOccupancy: l.GPM["sm_occupancy"] / 100,
			Tensor: l.GPM["any_tensor"] / 100, DRAM: l.GPM["dram_bw"] / 100,
			CopyUtil: l.NVML["util_mem"], Watts: l.NVML["power_w"], SMClockMHz: l.NVML["sm_mhz"]}
		switch {
		case l.B != nil:
			ld.B = *l.B
		default:
			var ok bool
			if ld.B, ld.Ctx, ld.N, ok = parseLoad(l.Load); !ok {
				return fmt.Errorf("gpm load %q: no composition", l.Load)
			}
		}
		switch {
		case l.Busy != nil:
			ld.Busy = *l.Busy
		case l.BusyExp != nil:
			ld.Busy = *l.BusyExp
		default:
			ld.Busy = 1
		}
		if strings.Contains(l.Load, "host gap") || l.GapMS > 0 {
			ld.Label += fmt.Sprintf(" gap %.2f ms", l.GapMS)
		}
		if !(ld.Busy > 0 && ld.Busy <= 1) || ld.StepMS <= 0 {
			return fmt.Errorf("gpm load %q: busy share %v and step time %v ms out of range", l.Load, ld.Busy, ld.StepMS)
		}
		p.Loads = append(p.Loads, ld)
	}
	for _, a := range f.AttentionFA2 {
		switch {
		case !(a.MS > 0):
		case a.Kind == "decode":
			p.Decode = append(p.Decode, ProbeAttention{Backend: "FLASH_ATTENTION", B: a.B, Ctx: a.Ctx, MS: a.MS})
		case a.Kind == "prefill" && a.N > 0:
			p.Prefill = append(p.Prefill, ProbeAttention{Backend: "FLASH_ATTENTION", N: a.N, MS: a.MS})
		}
	}
	for _, a := range f.Decode {
		if a.MS > 0 {
			p.Decode = append(p.Decode, ProbeAttention{Backend: a.Backend, B: a.B, Ctx: a.Ctx, MS: a.MS})
		}
	}
	return nil
}

var loadRE = regexp.MustCompile(`^(decode|prefill|mixed)((?: [A-Za-z]+=\d+)+)`)

// parseLoad reads a load's composition from its label: "decode B=64
// ctx=2048", "prefill N=8192", "mixed B=64 ctx=2048 N=1024".
func parseLoad(label string) (b, ctx, n int, ok bool) {
	m := loadRE.FindStringSubmatch(label)
	if m == nil {
		return 0, 0, 0, false
	}
	for _, kv := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(kv, "=")
		x, err := strconv.Atoi(v)
		if err != nil {
			return 0, 0, 0, false
		}
		switch k {
		case "B":
			b = x
		case "ctx":
			ctx = x
		case "N":
			n = x
		}
	}
	return b, ctx, n, b+n > 0
}
