package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// profileFile is a calibration as a file: every coefficient, times in
// microseconds, so that a fit can be reviewed, kept and loaded
// (--sim-calibration).
type profileFile struct {
	Hardware string `yaml:"hardware"`
	Note     string `yaml:"note,omitempty"`

	GEMMEfficiency   float64 `yaml:"gemm_efficiency"`
	WeightLoadFactor float64 `yaml:"weight_load_factor"`
	KVReadFactor     float64 `yaml:"kv_read_factor"`
	ActivationPasses float64 `yaml:"activation_passes"`

	StepOverheadUS     float64 `yaml:"step_overhead_us"`
	LayerOverheadUS    float64 `yaml:"layer_overhead_us"`
	RequestOverheadUS  float64 `yaml:"request_overhead_us"`
	HostStepOverheadUS float64 `yaml:"host_step_overhead_us"`
	HostSeqOverheadUS  float64 `yaml:"host_seq_overhead_us"`
	AllReduceLatencyUS float64 `yaml:"all_reduce_latency_us"`
	ActivationReserve  float64 `yaml:"activation_reserve_bytes"`

	FrontendArrivalUS  float64 `yaml:"frontend_arrival_us"`
	FrontendPerTokenUS float64 `yaml:"frontend_per_token_us"`
	FrontendFinishUS   float64 `yaml:"frontend_finish_us"`
	FrontendLagSteps   float64 `yaml:"frontend_lag_steps"`
	// The API server's per-token work, queued (profiles.Frontend.Stream);
	// a file without it models none.
	FrontendStreamUS float64 `yaml:"frontend_stream_us,omitempty"`

	// Terms of a probe's fit (calibrate --from-probe); a file without them
	// prices GEMMs additively, attention at the GEMMs' rate, no FP8, and
	// keeps the hardware's built-in counters.
	GEMMOverlap                float64            `yaml:"gemm_overlap,omitempty"`
	GEMMKernelLatencyUS        float64            `yaml:"gemm_kernel_latency_us,omitempty"`
	AttentionEfficiency        float64            `yaml:"attention_efficiency,omitempty"`
	ContextAttentionEfficiency float64            `yaml:"context_attention_efficiency,omitempty"`
	FP8                        *fp8File           `yaml:"fp8,omitempty"`
	Counters                   *profiles.Counters `yaml:"counters,omitempty"`
	// A mixture of experts' terms; a file without them keeps the
	// hardware's built-in ones.
	MoE *moeFile `yaml:"moe,omitempty"`
}

type moeFile struct {
	GEMMEfficiency  float64 `yaml:"gemm_efficiency"`
	ReadFactor      float64 `yaml:"read_factor"`
	Imbalance       float64 `yaml:"imbalance"`
	LayerOverheadUS float64 `yaml:"layer_overhead_us"`
}

type fp8File struct {
	GEMMEfficiency      float64 `yaml:"gemm_efficiency"`
	WeightLoadFactor    float64 `yaml:"weight_load_factor"`
	GEMMKernelLatencyUS float64 `yaml:"gemm_kernel_latency_us"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func fromUS(v float64) time.Duration {
	return time.Duration(v * float64(time.Microsecond))
}

// WriteProfile writes c, fitted for hardware, as a profile file.
func WriteProfile(w io.Writer, hardware, note string, c profiles.Calibration) error {
	f := profileFile{Hardware: hardware, Note: note,
		GEMMEfficiency: c.GEMMEfficiency, WeightLoadFactor: c.WeightLoadFactor, KVReadFactor: c.KVReadFactor, ActivationPasses: c.ActivationPasses,
		StepOverheadUS: us(c.StepOverhead), LayerOverheadUS: us(c.LayerOverhead), RequestOverheadUS: us(c.RequestOverhead),
		HostStepOverheadUS: us(c.HostStepOverhead), HostSeqOverheadUS: us(c.HostSeqOverhead), AllReduceLatencyUS: us(c.AllReduceLatency),
		ActivationReserve: c.ActivationReserveBytes,
		FrontendArrivalUS: us(c.Frontend.Arrival), FrontendPerTokenUS: us(c.Frontend.PerToken), FrontendFinishUS: us(c.Frontend.Finish),
		FrontendLagSteps: c.Frontend.LagSteps, FrontendStreamUS: us(c.Frontend.Stream),
		GEMMOverlap: c.GEMMOverlap, GEMMKernelLatencyUS: us(c.GEMMKernelLatency),
		AttentionEfficiency: c.AttentionEfficiency, ContextAttentionEfficiency: c.ContextAttentionEfficiency}
	if c.FP8 != nil {
		f.FP8 = &fp8File{GEMMEfficiency: c.FP8.GEMMEfficiency, WeightLoadFactor: c.FP8.WeightLoadFactor, GEMMKernelLatencyUS: us(c.FP8.GEMMKernelLatency)}
	}
	if c.Counters.EngineActive > 0 {
		k := c.Counters
		f.Counters = &k
	}
	if e := c.MoE; e != (profiles.MoECalibration{}) {
		f.MoE = &moeFile{GEMMEfficiency: e.GEMMEfficiency, ReadFactor: e.ReadFactor, Imbalance: e.Imbalance, LayerOverheadUS: us(e.LayerOverhead)}
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadProfile reads a profile file: the hardware it was fitted for and its
// coefficients. Every field must be there and be sane.
func ReadProfile(r io.Reader) (string, profiles.Calibration, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", profiles.Calibration{}, err
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: %w", err)
	}
	var f profileFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: %w", err)
	}
	// Every field the file format has, read off its tags: a missing term
	// would silently be 0 (a KV cache without its activation reserve, say).
	ft := reflect.TypeFor[profileFile]()
	for i := range ft.NumField() {
		k, opts, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ",")
		if _, ok := raw[k]; !ok && opts != "omitempty" {
			return "", profiles.Calibration{}, fmt.Errorf("read profile: %s is missing", k)
		}
	}
	hw, err := profiles.LookupHardware(f.Hardware)
	if err != nil {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: %w", err)
	}
	switch {
	case !(f.GEMMEfficiency > 0 && f.GEMMEfficiency <= 1):
		return "", profiles.Calibration{}, fmt.Errorf("read profile: gemm_efficiency %v is not in (0, 1]", f.GEMMEfficiency)
	case !(f.WeightLoadFactor >= 1 && f.KVReadFactor >= 1):
		return "", profiles.Calibration{}, fmt.Errorf("read profile: weight_load_factor %v and kv_read_factor %v must be at least 1", f.WeightLoadFactor, f.KVReadFactor)
	}
	if f.GEMMOverlap < 0 || f.GEMMOverlap > 100 || f.AttentionEfficiency < 0 || f.AttentionEfficiency > 1 ||
		f.ContextAttentionEfficiency < 0 || f.ContextAttentionEfficiency > 1 {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: gemm_overlap %v, attention_efficiency %v or context_attention_efficiency %v out of range",
			f.GEMMOverlap, f.AttentionEfficiency, f.ContextAttentionEfficiency)
	}
	if f.FP8 != nil && !(f.FP8.GEMMEfficiency > 0 && f.FP8.GEMMEfficiency <= 1 && f.FP8.WeightLoadFactor >= 1 && f.FP8.GEMMKernelLatencyUS >= 0) {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: fp8 terms out of range (%+v)", *f.FP8)
	}
	if e := f.MoE; e != nil && !(e.GEMMEfficiency > 0 && e.GEMMEfficiency <= 1 && e.ReadFactor >= 1 && e.Imbalance >= 1 && e.Imbalance <= 2 && e.LayerOverheadUS >= 0 && e.LayerOverheadUS < 1e6) {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: moe terms out of range (%+v): gemm_efficiency in (0, 1], read_factor ≥ 1, imbalance in [1, 2]", *e)
	}
	if k := f.Counters; k != nil && !(k.EngineActive > 0 && k.EngineActive <= 1 && k.DRAMBandwidth > 0 && k.IdleWatts >= 0 && k.ClockExponent >= 0) {
		return "", profiles.Calibration{}, fmt.Errorf("read profile: counters out of range (engine active %v, DRAM bandwidth %v)", k.EngineActive, k.DRAMBandwidth)
	}
	for _, v := range []float64{f.GEMMKernelLatencyUS, f.ActivationPasses, f.StepOverheadUS, f.LayerOverheadUS, f.RequestOverheadUS, f.HostStepOverheadUS, f.HostSeqOverheadUS,
		f.AllReduceLatencyUS, f.ActivationReserve, f.FrontendArrivalUS, f.FrontendPerTokenUS, f.FrontendFinishUS, f.FrontendLagSteps, f.FrontendStreamUS} {
		if !(v >= 0) || v > 1e12 {
			return "", profiles.Calibration{}, fmt.Errorf("read profile: a term is negative or out of range (%v)", v)
		}
	}
	c := profiles.Calibration{GEMMEfficiency: f.GEMMEfficiency, WeightLoadFactor: f.WeightLoadFactor, KVReadFactor: f.KVReadFactor, ActivationPasses: f.ActivationPasses,
		StepOverhead: fromUS(f.StepOverheadUS), LayerOverhead: fromUS(f.LayerOverheadUS), RequestOverhead: fromUS(f.RequestOverheadUS),
		HostStepOverhead: fromUS(f.HostStepOverheadUS), HostSeqOverhead: fromUS(f.HostSeqOverheadUS), AllReduceLatency: fromUS(f.AllReduceLatencyUS),
		ActivationReserveBytes: f.ActivationReserve,
		Frontend: profiles.Frontend{Arrival: fromUS(f.FrontendArrivalUS), PerToken: fromUS(f.FrontendPerTokenUS), Finish: fromUS(f.FrontendFinishUS), LagSteps: f.FrontendLagSteps,
			Stream: fromUS(f.FrontendStreamUS)},
		GEMMOverlap: f.GEMMOverlap, GEMMKernelLatency: fromUS(f.GEMMKernelLatencyUS),
		AttentionEfficiency: f.AttentionEfficiency, ContextAttentionEfficiency: f.ContextAttentionEfficiency,
		Counters: hw.Calib.Counters, MoE: hw.Calib.MoE}
	if f.FP8 != nil {
		c.FP8 = &profiles.FP8Calibration{GEMMEfficiency: f.FP8.GEMMEfficiency, WeightLoadFactor: f.FP8.WeightLoadFactor, GEMMKernelLatency: fromUS(f.FP8.GEMMKernelLatencyUS)}
	}
	if f.Counters != nil {
		c.Counters = *f.Counters
	}
	if e := f.MoE; e != nil {
		c.MoE = profiles.MoECalibration{GEMMEfficiency: e.GEMMEfficiency, ReadFactor: e.ReadFactor, Imbalance: e.Imbalance, LayerOverhead: fromUS(e.LayerOverheadUS)}
	}
	return f.Hardware, c, nil
}

// ReadProfileFile reads a profile file from disk.
func ReadProfileFile(path string) (string, profiles.Calibration, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", profiles.Calibration{}, err
	}
	defer fh.Close()
	return ReadProfile(fh)
}
