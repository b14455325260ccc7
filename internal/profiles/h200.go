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
	c.GEMMEfficiency, c.WeightLoadFactor, c.GEMMOverlap, c.GEMMKernelLatency = 0.5925, 1.152, 2.97, 6212*time.Nanosecond
	c.AttentionEfficiency, c.ContextAttentionEfficiency, c.KVReadFactor, c.ActivationPasses = 0.5405, 0.2152, 1.062, 19.46
	c.StepOverhead, c.LayerOverhead, c.RequestOverhead = 183675*time.Nanosecond, 15456*time.Nanosecond, 3529*time.Nanosecond
	c.FP8 = &FP8Calibration{GEMMEfficiency: 0.5498, WeightLoadFactor: 1, GEMMKernelLatency: 12874 * time.Nanosecond}
	c.Counters = Counters{EngineActive: 0.9125,
		SMActive:        Families{Read: 0.5844, Compute: 0.8484, DecodeAttention: 0.9377, PrefillAttention: 0.8907, Other: 0.5357},
		SMOccupancy:     Families{Read: 0.08651, Compute: 0.2442, DecodeAttention: 0.1271, PrefillAttention: 0.2057, Other: 0.05246},
		TensorPadTokens: 6.156, TensorSmallFactor: 1.012, TensorLargeFactor: 1.177, TensorKneeTokens: 41.4, TensorDecodeAttentionFactor: 34.64,
		DRAMBandwidth: 5.986e+12, DRAMBytesPerFLOP: 0.0009991, CopyUtilPerDRAM: 1.425,
		IdleWatts: 125, DRAMWatts: 185, TensorWatts: 806.2, SMWatts: 358.5, ClockExponent: 0.5807}
	return c
}
