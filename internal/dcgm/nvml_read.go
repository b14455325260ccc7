package dcgm

import (
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// reader gathers one reading: each field's value, or the error that lost
// it.
type reader struct {
	v       values
	failing map[string]string
}

func (r *reader) put(field string, x float64, err error) {
	if err != nil {
		r.failing[field] = err.Error()
		return
	}
	r.v[field] = x
}

// mib is bytes in MiB, as DCGM's framebuffer fields count them.
func mib(b uint64) float64 { return float64(b >> 20) }

// read is one reading of the board, NVML's units turned into DCGM's;
// with prof, GPM's metrics over the interval since the last reading
// too. Only the sampler (and NewNVML, before it starts) calls it.
func (e *NVMLExporter) read(prof bool) (values, map[string]string) {
	d := e.cfg.Device
	r := &reader{v: values{}, failing: map[string]string{}}
	n, err := d.SMClock()
	r.put(metricspec.DCGMSMClock, float64(n), err)
	n, err = d.MemClock()
	r.put(metricspec.DCGMMemClock, float64(n), err)
	n, err = d.MemoryTemperature()
	r.put(metricspec.DCGMMemoryTemp, float64(n), err)
	n, err = d.Temperature()
	r.put(metricspec.DCGMGPUTemp, float64(n), err)
	w, err := d.PowerUsage()
	r.put(metricspec.DCGMPowerUsage, w, err)
	mj, err := d.TotalEnergy()
	r.put(metricspec.DCGMTotalEnergy, float64(mj), err)
	replays, err := d.PCIeReplays()
	r.put(metricspec.DCGMPCIeReplay, float64(replays), err)
	gpu, mem, err := d.Utilization()
	r.put(metricspec.DCGMGPUUtil, float64(gpu), err)
	r.put(metricspec.DCGMMemCopyUtil, float64(mem), err)
	n, err = d.EncoderUtilization()
	r.put(metricspec.DCGMEncUtil, float64(n), err)
	n, err = d.DecoderUtilization()
	r.put(metricspec.DCGMDecUtil, float64(n), err)
	fb, err := d.Framebuffer()
	r.put(metricspec.DCGMFBFree, mib(fb.Free), err)
	r.put(metricspec.DCGMFBUsed, mib(fb.Used), err)
	r.put(metricspec.DCGMFBReserved, mib(fb.Reserved), err)
	corr, unc, failed, err := d.RemappedRows()
	r.put(metricspec.DCGMUncorrectedRows, float64(unc), err)
	r.put(metricspec.DCGMCorrectedRows, float64(corr), err)
	r.put(metricspec.DCGMRowRemapFailure, b2f(failed), err)
	// Not read: DCGM_FI_DEV_XID_ERRORS (NVML gives XIDs as events, not a
	// value) and DCGM_FI_DEV_VGPU_LICENSE_STATUS (vGPU guests only).
	if prof && e.gpm != nil {
		e.readGPM(r)
	}
	return r.v, r.failing
}

// profFields maps each GPM metric to its DCGM field and the factor from
// NVML's unit to DCGM's: percent to a ratio, MiB/s to bytes/s.
var profFields = [NumGPMMetrics]struct {
	field string
	scale float64
}{
	GPMGraphics:    {metricspec.DCGMGREngineActive, 0.01},
	GPMSMActive:    {metricspec.DCGMSMActive, 0.01},
	GPMSMOccupancy: {metricspec.DCGMSMOccupancy, 0.01},
	GPMTensor:      {metricspec.DCGMTensorActive, 0.01},
	GPMDRAM:        {metricspec.DCGMDRAMActive, 0.01},
	GPMPCIeTx:      {metricspec.DCGMPCIeTxBytes, 1 << 20},
	GPMPCIeRx:      {metricspec.DCGMPCIeRxBytes, 1 << 20},
}

// readGPM snapshots the counters and reads each metric since the last
// snapshot.
func (e *NVMLExporter) readGPM(r *reader) {
	err := e.gpm.Sample()
	for m, f := range profFields {
		if err != nil {
			r.put(f.field, 0, err)
			continue
		}
		x, err := e.gpm.Metric(GPMMetric(m))
		r.put(f.field, x*f.scale, err)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
