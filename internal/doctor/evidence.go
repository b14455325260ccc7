package doctor

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// source is where a signal came from: what a finding that uses it may
// claim rests on it.
type source string

const (
	srcNone     source = ""
	srcGlassbox source = "glassbox"         // glassbox's own series
	srcDCGM     source = "dcgm"             // dcgm-exporter beside the target
	srcVLLM     source = "vllm"             // vLLM's series (which glassbox exports too)
	srcFlag     source = "flag"             // the user said so
	srcGPU      source = "gpu-profile"      // the GPU's datasheet, from --gpu or DCGM's modelName
	srcInferred source = "inferred"         // read off the series' shape or vLLM's defaults
	srcEstimate source = "vllm-estimate"    // derived from vLLM's step and latency series
	srcPlateau  source = "inferred-plateau" // the running gauge's plateau
)

// resolveHardware finds the GPU's peaks, then MFU and memory-bandwidth
// utilisation from vLLM's estimate counters.
func (s *signals) resolveHardware(per func(string) float64) {
	peakF, peakB := s.peaks()
	s.mfu = per(metricspec.EstimatedFLOPsPerGPU) / peakF
	s.mbu = per(metricspec.EstimatedReadBytesPerGPU) / peakB // per is NaN without the counter
}

// peaks are the GPU's peak FLOP/s and bandwidth (NaN when unknown) from
// glassbox's gauges, else the profile --gpu names, else the one DCGM's
// modelName matches; it sets peakSrc and gpu to say which.
func (s *signals) peaks() (flops, bandwidth float64) {
	w := s.w
	if g := w.Gauge(metricspec.ExecutorPeakFLOPs); len(g) > 0 && g[len(g)-1].V > 0 {
		bandwidth = math.NaN()
		if b := w.Gauge(metricspec.ExecutorPeakMemBandwidth); len(b) > 0 {
			bandwidth = b[len(b)-1].V
		}
		s.peakSrc, s.gpu = srcGlassbox, s.cfg.hardware
		return g[len(g)-1].V, bandwidth
	}
	if hw, ok := s.hardwareHint(); ok {
		s.peakSrc, s.gpu = srcGPU, hw.Name
		return hw.PeakFLOPs, hw.MemBandwidth
	}
	return math.NaN(), math.NaN()
}

// hardwareHint is the profile of --gpu, or of DCGM's modelName.
func (s *signals) hardwareHint() (profiles.Hardware, bool) {
	if g := s.w.Hints.GPU; g != "" {
		hw, err := profiles.LookupHardware(g)
		return hw, err == nil
	}
	if name := s.w.Info[infoDCGM]["modelName"]; name != "" {
		return profiles.HardwareByDeviceName(name)
	}
	return profiles.Hardware{}, false
}

// resolveBusy takes the executor's utilisation from the best source the
// window has: glassbox's busy counter; DCGM's graphics-engine activity
// (like glassbox's, near 1 whenever a kernel runs); else an estimate from
// vLLM alone: engine steps per second × the mean inter-token latency,
// which is a decode step's length as requests see it.
func (s *signals) resolveBusy(per func(string) float64) {
	w := s.w
	mean := func(key string) float64 {
		return summarise(w.Gauge(key)).mean
	}
	s.dcgmSM, s.dcgmTensor, s.dcgmDRAM = math.NaN(), math.NaN(), math.NaN()
	if w.Has(metricspec.DCGMGREngineActive) {
		s.dcgmSM, s.dcgmTensor, s.dcgmDRAM = mean(metricspec.DCGMSMActive), mean(metricspec.DCGMTensorActive), mean(metricspec.DCGMDRAMActive)
	}
	switch {
	case w.Has(metricspec.ExecutorBusySeconds):
		s.busy, s.busySrc = per(metricspec.ExecutorBusySeconds), srcGlassbox
	case w.Has(metricspec.DCGMGREngineActive):
		// The median reading: each is an average over dcgm-exporter's
		// last interval, so the first ones of a window can lag its start.
		s.busy, s.busySrc = median(w.Gauge(metricspec.DCGMGREngineActive)), srcDCGM
	default:
		if s.busy = s.busyEstimate(); !math.IsNaN(s.busy) {
			s.busySrc = srcEstimate
		}
	}
}

// busyEstimate is vLLM's view of utilisation: engine steps per second ×
// the mean inter-token latency (a decode step's length as requests see
// it), at most 1; NaN without steps or decodes.
func (s *signals) busyEstimate() float64 {
	w := s.w
	if s.seconds <= 0 {
		return math.NaN()
	}
	steps := w.Increase(metricspec.IterationTokens+"_count") / s.seconds
	itl := w.Increase(metricspec.InterTokenLatency+"_sum") / w.Increase(metricspec.InterTokenLatency+"_count")
	if !(steps > 0 && itl > 0) {
		return math.NaN()
	}
	return math.Min(1, steps*itl)
}

// resolveLimits fills max_num_batched_tokens and max_num_seqs where the
// target's series do not give them: the user's flags, else inferred.
func (s *signals) resolveLimits() {
	c, h := &s.cfg, s.w.Hints
	switch {
	case c.maxBatchedTokens > 0:
		s.budgetSrc = srcGlassbox
	case h.MaxNumBatchedTokens > 0:
		c.maxBatchedTokens, s.budgetSrc = h.MaxNumBatchedTokens, srcFlag
	default:
		// vLLM exports no budget. Budgets are round numbers (2048 is the
		// smallest anyone sets; 8192 vLLM's default on big GPUs), and a
		// step can hold no more than its budget on average (prompt tokens
		// count when a prefill completes, so one step's count can exceed
		// it): the smallest round budget the mean step fits in.
		c.maxBatchedTokens, s.budgetSrc = 2048, srcInferred
		for _, b := range []int{2048, 4096, 8192, 16384} {
			c.maxBatchedTokens = b
			if !(s.tokPerStp > 1.02*float64(b)) {
				break
			}
		}
	}
	s.stepFill = s.tokPerStp / float64(c.maxBatchedTokens)
	switch {
	case c.maxNumSeqs > 0:
		s.seqsSrc = srcGlassbox
	case h.MaxNumSeqs > 0:
		c.maxNumSeqs, s.seqsSrc = h.MaxNumSeqs, srcFlag
	default:
		// A plateau of the running gauge with requests waiting is a cap,
		// unless the KV cache holds it there, or full steps (the token
		// budget admits no more prefill) do.
		if n := s.run.max; n >= 2 && s.queued() && !s.kvLimited() && !(s.stepFill >= fillHigh) &&
			fraction(s.running, func(v float64) bool { return v >= 0.9*n-1 }) >= pinnedShare {
			c.maxNumSeqs, s.seqsSrc = int(n), srcPlateau
		}
	}
}

// provenance lists the sources of the signals a finding used and how sure
// it can be: high when every one was measured or given, medium when one
// was inferred, low when utilisation was estimated from vLLM alone.
func (s *signals) provenance(busy, budget, seqs, peak bool) ([]string, string) {
	srcs := []string{string(srcVLLM)}
	add := func(use bool, src source) {
		if use && src != srcNone && !strings.Contains(strings.Join(srcs, ","), string(src)) {
			srcs = append(srcs, string(src))
		}
	}
	add(busy, s.busySrc)
	add(budget, s.budgetSrc)
	add(seqs, s.seqsSrc)
	add(peak, s.peakSrc)
	conf := "high"
	for _, used := range []struct {
		use bool
		src source
	}{{budget, s.budgetSrc}, {seqs, s.seqsSrc}} {
		if used.use && (used.src == srcInferred || used.src == srcPlateau) {
			conf = "medium"
		}
	}
	if busy && (s.busySrc == srcEstimate || s.busySrc == srcNone) {
		conf = "low"
	}
	return srcs, conf
}

// conflict says where two readings of the same thing disagree: the
// utilisation measured (glassbox's or DCGM's) and vLLM's own estimate of
// it (steps per second × step time), or full steps on a GPU DCGM sees
// idle. A busy GPU with small steps is no conflict: decode steps are
// bound by reading weights and KV, not by their token count.
func (s *signals) conflict() string {
	if s.busySrc == srcGlassbox || s.busySrc == srcDCGM {
		if est := s.busyEstimate(); !math.IsNaN(est) && math.Abs(est-s.busy) > 0.4 {
			return fmt.Sprintf(" The readings conflict: %s says the GPU was busy %.0f%% of the time, vLLM's steps × their latency %.0f%%; trust the measurement, and suspect the step latency (a frontend that falls behind stretches it).",
				s.busySrc, 100*s.busy, 100*est)
		}
	}
	if s.busySrc == srcDCGM && s.busy < busyLow && s.stepFill >= fillHigh {
		return fmt.Sprintf(" The readings conflict: steps were %.0f%% full, yet DCGM saw the GPU active only %.0f%% of the time: the host leaves the GPU idle between steps.", 100*s.stepFill, 100*s.busy)
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

func median(ps []Point) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	v := make([]float64, len(ps))
	for i, p := range ps {
		v[i] = p.V
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// Peaks are the target's GPU peak FLOP/s and bandwidth as the doctor finds
// them (glassbox's gauges, --gpu, or DCGM's modelName), and where from; NaN
// and "" when unknown.
func (w *Window) Peaks() (flops, bandwidth float64, src string) {
	s := &signals{w: w, cfg: readConfig(w), peakSrc: srcNone}
	flops, bandwidth = s.peaks()
	switch s.peakSrc {
	case srcNone:
		return flops, bandwidth, ""
	case srcGPU:
		return flops, bandwidth, string(s.peakSrc) + ":" + s.gpu
	}
	return flops, bandwidth, string(s.peakSrc)
}
