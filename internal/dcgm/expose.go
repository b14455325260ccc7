package dcgm

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// This file is dcgm-exporter's text format, for both sources: the
// simulated GPUs (Exporter) and a real one read through NVML
// (NVMLExporter). Each hands the writer one label block and one set of
// values per GPU.

// values is one GPU's readings at a scrape, by field name. A field that
// is not in it is not written: dcgm-exporter writes what it can read (a
// board without DCP has no DCGM_FI_PROF_* series; a counter the driver
// refuses is left out).
type values map[string]float64

// gpuLabels is a GPU's label block in dcgm-exporter's order: gpu, UUID,
// pci_bus_id, device, modelName, Hostname, then DCGM_FI_DRIVER_VERSION.
func gpuLabels(index int, uuid, pciBusID string, minor int, modelName, hostname, driver string) string {
	return fmt.Sprintf(`gpu="%d",UUID="%s",pci_bus_id="%s",device="nvidia%d",modelName="%s",Hostname="%s",%s="%s"`,
		index, uuid, pciBusID, minor, modelName, hostname, metricspec.DCGMDriverVersionKey, driver)
}

// writeExposition writes the families in field-id order, each with the
// series of the GPUs that have a value for it (a family none has is
// left out whole), integers for integer fields and six decimals for the
// others, no _created, no timestamps.
func writeExposition(w io.Writer, labels []string, vals []values) error {
	for _, f := range metricspec.DCGMFields() {
		header := false
		for i, l := range labels {
			v, ok := vals[i][f.Name]
			if !ok {
				continue
			}
			if !header {
				if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type); err != nil {
					return err
				}
				header = true
			}
			extra := ""
			if f.Name == metricspec.DCGMXIDErrors {
				extra = `,err_code="0",err_msg="No Error"`
			}
			if _, err := fmt.Fprintf(w, "%s{%s%s} %s\n", f.Name, l, extra, format(v, f.Float)); err != nil {
				return err
			}
		}
	}
	return nil
}

// serveText writes a source's exposition as dcgm-exporter serves it.
func serveText(w http.ResponseWriter, r *http.Request, write func(io.Writer) error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriter(w)
	_ = write(bw) // a write error means the scraper left
	_ = bw.Flush()
}

// format writes DCGM's int64 fields with %d and its doubles with %f.
func format(v float64, float bool) string {
	if float {
		return strconv.FormatFloat(v, 'f', 6, 64)
	}
	return strconv.FormatInt(int64(v), 10)
}
