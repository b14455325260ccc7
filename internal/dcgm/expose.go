package dcgm

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// ServeHTTP writes the current reading in dcgm-exporter's format: families
// in field-id order, fixed label order (gpu, UUID, pci_bus_id, device,
// modelName, Hostname, then DCGM_FI_DRIVER_VERSION), integers for integer
// fields and six decimals for the others, no _created, no timestamps.
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriter(w)
	_ = e.WriteText(bw) // a write error means the scraper left
	_ = bw.Flush()
}

// WriteText writes the exposition for the engine clock's now.
func (e *Exporter) WriteText(w io.Writer) error {
	r := e.read(e.cfg.Now())
	for _, f := range metricspec.DCGMFields() {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type); err != nil {
			return err
		}
		v := r.value(f.Name)
		for _, labels := range e.labels {
			extra := ""
			if f.Name == metricspec.DCGMXIDErrors {
				extra = `,err_code="0",err_msg="No Error"`
			}
			if _, err := fmt.Fprintf(w, "%s{%s%s} %s\n", f.Name, labels, extra, format(v, f.Float)); err != nil {
				return err
			}
		}
	}
	return nil
}

// value is a field's reading; every GPU of a tensor-parallel group does
// the same share of each step, so all report the same.
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

// format writes DCGM's int64 fields with %d and its doubles with %f.
func format(v float64, float bool) string {
	if float {
		return strconv.FormatFloat(v, 'f', 6, 64)
	}
	return strconv.FormatInt(int64(v), 10)
}
