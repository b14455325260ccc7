package profiles

import "time"

// h200Calibration is the H200 as measured (reference/calibration/h200):
// its step terms fitted to the fused steps of a Llama-3.1-8B-shaped
// forward pass (the GEMMs' read and overlap to the projections timed
// alone, the arithmetic's rate sustained at the board's power limit),
// its counters to the GPU's own under steady loads. `glassbox simulate
// calibrate --from-probe` on those files reproduces these numbers
// (calibrate's TestFitH200Probe); docs/simulator.md has the table.
func h200Calibration() Calibration {
	c := baseCalibration()
	c.GEMMEfficiency, c.WeightLoadFactor, c.GEMMOverlap, c.GEMMKernelLatency = 0.6083, 1.152, 2.97, 6212*time.Nanosecond
	c.AttentionEfficiency, c.ContextAttentionEfficiency, c.KVReadFactor, c.ActivationPasses = 0.5085, 0.2207, 1.131, 25.4
	c.StepOverhead, c.LayerOverhead, c.RequestOverhead = 142939*time.Nanosecond, 16433*time.Nanosecond, 2508*time.Nanosecond
	c.FP8 = &FP8Calibration{GEMMEfficiency: 0.5644, WeightLoadFactor: 1, GEMMKernelLatency: 12874 * time.Nanosecond}
	c.Counters = Counters{EngineActive: 0.9137,
		SMActive:        Families{Read: 0.6252, Compute: 0.882, DecodeAttention: 0.937, PrefillAttention: 0.8736, Other: 0.3456},
		SMOccupancy:     Families{Read: 0.08901, Compute: 0.246, DecodeAttention: 0.1262, PrefillAttention: 0.2163, Other: 0.0505},
		TensorPadTokens: 6.24, TensorSmallFactor: 1.018, TensorLargeFactor: 1.206, TensorKneeTokens: 41.49, TensorDecodeAttentionFactor: 34.58,
		DRAMBandwidth: 5.779e+12, DRAMBytesPerFLOP: 0.001131, CopyUtilPerDRAM: 1.425,
		IdleWatts: 123.6, DRAMWatts: 308.5, TensorWatts: 813.4, SMWatts: 268.8, ClockExponent: 0.6072}
	return c
}
