package dcgm

import (
	"io"
	"math"
	"net/http"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// ServeHTTP writes the current reading in dcgm-exporter's format.
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) { serveText(w, r, e.WriteText) }

// WriteText writes the exposition for the engine clock's now: every
// family, the same values for every GPU (each GPU of a tensor-parallel
// group does the same share of each step).
func (e *Exporter) WriteText(w io.Writer) error {
	r := e.read(e.cfg.Now())
	v := r.values()
	vals := make([]values, len(e.labels))
	for i := range vals {
		vals[i] = v
	}
	return writeExposition(w, e.labels, vals)
}

// values is the reading by field: every field dcgm-exporter writes, 0
// where the simulated GPU has nothing to count (errors, retries, remaps,
// encoder, decoder, licence).
func (r *reading) values() values {
	v := values{
		metricspec.DCGMSMClock:        math.Round(r.SMClockMHz),
		metricspec.DCGMMemClock:       float64(r.memClock),
		metricspec.DCGMMemoryTemp:     float64(r.memTemp),
		metricspec.DCGMGPUTemp:        float64(r.temp),
		metricspec.DCGMPowerUsage:     r.Watts,
		metricspec.DCGMTotalEnergy:    r.energyMJ,
		metricspec.DCGMGPUUtil:        r.GPUUtil,
		metricspec.DCGMMemCopyUtil:    r.CopyUtil,
		metricspec.DCGMFBFree:         float64(r.fbFree),
		metricspec.DCGMFBUsed:         float64(r.fbUsed),
		metricspec.DCGMFBReserved:     float64(r.fbReserved),
		metricspec.DCGMGREngineActive: r.EngineActive,
		metricspec.DCGMSMActive:       r.SMActive,
		metricspec.DCGMSMOccupancy:    r.SMOccupancy,
		metricspec.DCGMTensorActive:   r.TensorActive,
		metricspec.DCGMDRAMActive:     r.DRAMActive,
		metricspec.DCGMPCIeTxBytes:    r.txBps,
		metricspec.DCGMPCIeRxBytes:    r.rxBps,
	}
	for _, f := range metricspec.DCGMFields() {
		if _, ok := v[f.Name]; !ok {
			v[f.Name] = 0
		}
	}
	return v
}
