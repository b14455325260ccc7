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
	v := values{}
	for _, f := range metricspec.DCGMFields() {
		v[f.Name] = r.value(f.Name)
	}
	vals := make([]values, len(e.labels))
	for i := range vals {
		vals[i] = v
	}
	return writeExposition(w, e.labels, vals)
}

// value is a field's reading.
func (r *reading) value(name string) float64 {
	switch name {
	case metricspec.DCGMSMClock:
		return math.Round(r.SMClockMHz)
	case metricspec.DCGMMemClock:
		return float64(r.memClock)
	case metricspec.DCGMMemoryTemp:
		return float64(r.memTemp)
	case metricspec.DCGMGPUTemp:
		return float64(r.temp)
	case metricspec.DCGMPowerUsage:
		return r.Watts
	case metricspec.DCGMTotalEnergy:
		return r.energyMJ
	case metricspec.DCGMGPUUtil:
		return r.GPUUtil
	case metricspec.DCGMMemCopyUtil:
		return r.CopyUtil
	case metricspec.DCGMFBFree:
		return float64(r.fbFree)
	case metricspec.DCGMFBUsed:
		return float64(r.fbUsed)
	case metricspec.DCGMFBReserved:
		return float64(r.fbReserved)
	case metricspec.DCGMGREngineActive:
		return r.EngineActive
	case metricspec.DCGMSMActive:
		return r.SMActive
	case metricspec.DCGMSMOccupancy:
		return r.SMOccupancy
	case metricspec.DCGMTensorActive:
		return r.TensorActive
	case metricspec.DCGMDRAMActive:
		return r.DRAMActive
	case metricspec.DCGMPCIeTxBytes:
		return r.txBps
	case metricspec.DCGMPCIeRxBytes:
		return r.rxBps
	}
	return 0 // errors, retries, remaps, encoder, decoder, licence
}
