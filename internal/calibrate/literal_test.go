package calibrate

import (
	"flag"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

var printH200 = flag.Bool("print-h200", false, "print the H200 fit as the Go literal of internal/profiles/h200.go")

// TestPrintH200 prints the fitted H200 profile as Go, for h200.go, when
// asked (go test -run TestPrintH200 ./internal/calibrate -args -print-h200).
func TestPrintH200(t *testing.T) {
	if !*printH200 {
		t.Skip("SKIPPED: a tool, not a test: -args -print-h200 prints the fitted H200 profile as Go")
	}
	fmt.Println(goLiteral(fitH200(t).Hardware.Calib))
}

func goLiteral(c sim.Calibration) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	d := func(x time.Duration) string { return strconv.FormatInt(x.Nanoseconds(), 10) + "*time.Nanosecond" }
	fam := func(f sim.Families) string {
		return "Families{Read: " + g(f.Read) + ", Compute: " + g(f.Compute) + ", DecodeAttention: " + g(f.DecodeAttention) +
			", PrefillAttention: " + g(f.PrefillAttention) + ", Other: " + g(f.Other) + "}"
	}
	k := c.Counters
	return fmt.Sprintf(`	c.GEMMEfficiency, c.WeightLoadFactor, c.GEMMOverlap, c.GEMMKernelLatency = %s, %s, %s, %s
	c.AttentionEfficiency, c.ContextAttentionEfficiency, c.KVReadFactor, c.ActivationPasses = %s, %s, %s, %s
	c.StepOverhead, c.LayerOverhead, c.RequestOverhead = %s, %s, %s
	c.FP8 = &FP8Calibration{GEMMEfficiency: %s, WeightLoadFactor: %s, GEMMKernelLatency: %s}
	c.Counters = Counters{EngineActive: %s,
		SMActive: %s,
		SMOccupancy: %s,
		TensorPadTokens: %s, TensorSmallFactor: %s, TensorLargeFactor: %s, TensorKneeTokens: %s, TensorDecodeAttentionFactor: %s,
		DRAMBandwidth: %s, DRAMBytesPerFLOP: %s, CopyUtilPerDRAM: %s,
		IdleWatts: %s, DRAMWatts: %s, TensorWatts: %s, SMWatts: %s, ClockExponent: %s}`,
		g(c.GEMMEfficiency), g(c.WeightLoadFactor), g(c.GEMMOverlap), d(c.GEMMKernelLatency),
		g(c.AttentionEfficiency), g(c.ContextAttentionEfficiency), g(c.KVReadFactor), g(c.ActivationPasses),
		d(c.StepOverhead), d(c.LayerOverhead), d(c.RequestOverhead),
		g(c.FP8.GEMMEfficiency), g(c.FP8.WeightLoadFactor), d(c.FP8.GEMMKernelLatency),
		g(k.EngineActive), fam(k.SMActive), fam(k.SMOccupancy), g(k.TensorPadTokens), g(k.TensorSmallFactor), g(k.TensorLargeFactor),
		g(k.TensorKneeTokens), g(k.TensorDecodeAttentionFactor), g(k.DRAMBandwidth), g(k.DRAMBytesPerFLOP), g(k.CopyUtilPerDRAM),
		g(k.IdleWatts), g(k.DRAMWatts), g(k.TensorWatts), g(k.SMWatts), g(k.ClockExponent))
}
