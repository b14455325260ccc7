package calibrate

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteProbeReport writes what a probe fit found: every measured step
// against the fitted profile, every counter load against the simulated
// GPU's reading of it, the GEMMs alone, and the fitted terms.
func WriteProbeReport(w io.Writer, f *ProbeFit) {
	c := f.Hardware.Calib
	fmt.Fprintf(w, "Steps of %s on %s (fused; the faster attention kernel's time):\n\n", f.Model.Name, f.Hardware.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "decode seqs\tcontext\tprefill\tat\tmeasured ms\tfitted ms\terror\t")
	var sum, worst float64
	for _, s := range f.Steps {
		e := s.Err()
		sum, worst = sum+math.Abs(e), max(worst, math.Abs(e))
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.2f\t%+.1f%%\t\n", s.B, s.Ctx, s.N, s.Pos, s.MS, s.PredictedMS, 100*e)
	}
	tw.Flush()
	if n := len(f.Steps); n > 0 {
		fmt.Fprintf(w, "\nmean |error| %.1f%%, worst %.1f%% over %d steps\n", 100*sum/float64(n), 100*worst, n)
	}
	if len(f.Loads) > 0 {
		fmt.Fprintln(w, "\nCounters under steady loads, measured / simulated (ratios; power W; SM clock MHz):")
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "load\tkernel\tbusy\tGR_ENGINE\tSM_ACTIVE\tSM_OCCUP\tTENSOR\tDRAM\tpower\tSM clock\t")
		for _, l := range f.Loads {
			p := l.Predicted
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f / %.2f\t%.2f / %.2f\t%.2f / %.2f\t%.2f / %.2f\t%.2f / %.2f\t%.0f / %.0f\t%.0f / %.0f\t\n",
				l.Label, l.Kernel, l.Busy, l.Graphics, p.EngineActive, l.SMActive, p.SMActive, l.SMOccupancy, p.SMOccupancy,
				l.Tensor, p.TensorActive, l.DRAM, p.DRAMActive, l.Watts, p.Watts, l.SMClockMHz, p.SMClockMHz)
		}
		tw.Flush()
	}
	for _, g := range []*GEMMFit{f.Burst, f.BurstFP8} {
		if g != nil {
			fmt.Fprintf(w, "\nGEMMs alone, %s (%d shapes, bursts on a cool GPU): %.3f of peak, weight read ×%.3f of the bandwidth bound, %v a GEMM, overlap p=%.2f; mean |error| %.1f%%\n",
				g.DType, g.Rows, g.Efficiency, g.WeightLoadFactor, g.Latency.Round(10*time.Nanosecond), g.Overlap, 100*g.MeanAbsErr)
		}
	}
	fmt.Fprintf(w, "\nFitted terms: the GEMMs' arithmetic at %.3f of peak sustained", c.GEMMEfficiency)
	if f.SustainedClock > 0 {
		fmt.Fprintf(w, " (the bursts' rate at the SM clock of a long prefill, %.0f%% of boost)", 100*f.SustainedClock)
	}
	fmt.Fprintf(w, "; weight read ×%.3f plus %v a GEMM, overlapped at p=%.2f; decode KV read ×%.3f of the bandwidth bound;\n",
		c.WeightLoadFactor, c.GEMMKernelLatency.Round(10*time.Nanosecond), c.GEMMOverlap, c.KVReadFactor)
	fmt.Fprintf(w, "prefill attention at %.3f of peak, a chunk's attention to its cached context at %.3f (%s); %.1f hidden vectors of elementwise traffic per token and layer;\n",
		c.AttentionEfficiency, c.ContextAttentionEfficiency, f.ContextFrom, c.ActivationPasses)
	fmt.Fprintf(w, "overheads %v a step, %v a layer, %v a sequence", c.StepOverhead.Round(10*time.Nanosecond), c.LayerOverhead.Round(10*time.Nanosecond), c.RequestOverhead.Round(10*time.Nanosecond))
	if c.FP8 != nil {
		fmt.Fprintf(w, "; FP8 GEMMs at %.3f of the FP8 peak sustained, weight read ×%.3f plus %v a GEMM", c.FP8.GEMMEfficiency, c.FP8.WeightLoadFactor, c.FP8.GEMMKernelLatency.Round(10*time.Nanosecond))
	}
	fmt.Fprintln(w, ".")
	k := c.Counters
	fmt.Fprintf(w, "Counters: GR_ENGINE_ACTIVE %.3f while busy; idle %.0f W, %.0f W per unit of DRAM activity, %.0f of tensor, %.0f of SM; clock ∝ (limit/demand)^%.2f past the limit.\n",
		k.EngineActive, k.IdleWatts, k.DRAMWatts, k.TensorWatts, k.SMWatts, k.ClockExponent)
}

// ProbeMarkdown is docs/simulator.md's tables of a probe fit: every step
// (measured, simulated, error) and every steady load's counters
// (measured / simulated).
func ProbeMarkdown(f *ProbeFit) string {
	var b strings.Builder
	b.WriteString("| file | decode | prefill | measured ms (FA2 / cuDNN) | simulated ms | error |\n|---|---|---|---|---|---|\n")
	var sum, worst float64
	for _, s := range f.Steps {
		e := s.Err()
		sum, worst = sum+math.Abs(e), max(worst, math.Abs(e))
		dec, pre := "—", "—"
		if s.B > 0 {
			dec = fmt.Sprintf("%d × %d", s.B, s.Ctx)
		}
		if s.N > 0 {
			pre = fmt.Sprintf("%d @ %d", s.N, s.Pos)
		}
		both := ""
		if s.FA2MS > 0 && s.CuDNNMS > 0 {
			both = fmt.Sprintf(" (%.2f / %.2f)", s.FA2MS, s.CuDNNMS)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f%s | %.2f | %+.1f%% |\n", s.Source, dec, pre, s.MS, both, s.PredictedMS, 100*e)
	}
	if n := len(f.Steps); n > 0 {
		fmt.Fprintf(&b, "| **mean \\|error\\|** | | | | | **%.1f%%** (worst %.1f%%) |\n", 100*sum/float64(n), 100*worst)
	}
	b.WriteString("\n| file | load | kernel | busy | GR_ENGINE_ACTIVE | SM_ACTIVE | SM_OCCUPANCY | PIPE_TENSOR_ACTIVE | DRAM_ACTIVE | power W | SM clock MHz |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range f.Loads {
		p := l.Predicted
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f | %.0f / %.0f |\n",
			l.Source, l.Label, l.Kernel, l.Busy, l.Graphics, p.EngineActive, l.SMActive, p.SMActive, l.SMOccupancy, p.SMOccupancy,
			l.Tensor, p.TensorActive, l.DRAM, p.DRAMActive, l.Watts, p.Watts, l.SMClockMHz, p.SMClockMHz)
	}
	return b.String()
}
