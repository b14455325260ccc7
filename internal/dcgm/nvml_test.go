package dcgm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// fakeBoard is a GPU's NVML readings, changed by the test while the
// sampler reads them; errs fails a method by name.
type fakeBoard struct {
	mu        sync.Mutex
	errs      map[string]error
	sm, mem   int
	temp, hbm int
	watts     float64
	energy    uint64
	gpu, copy int
	fb        Framebuffer
	noGPM     bool
	gpm       fakeGPM
}

func (b *fakeBoard) fail(method string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.errs == nil {
		b.errs = map[string]error{}
	}
	if err == nil {
		delete(b.errs, method)
		return
	}
	b.errs[method] = err
}

func (b *fakeBoard) set(f func(*fakeBoard)) { b.mu.Lock(); defer b.mu.Unlock(); f(b) }

func (b *fakeBoard) err(method string) error { b.mu.Lock(); defer b.mu.Unlock(); return b.errs[method] }

func (b *fakeBoard) Name() (string, error) { return "NVIDIA H200", b.err("Name") }
func (b *fakeBoard) UUID() (string, error) {
	return "GPU-5d2b7c4e-6a1f-4b3e-9c2d-0e8f7a6b5c4d", b.err("UUID")
}
func (b *fakeBoard) Index() (int, error)       { return 3, b.err("Index") }
func (b *fakeBoard) Minor() (int, error)       { return 5, b.err("Minor") }
func (b *fakeBoard) PCIBusID() (string, error) { return "00000000:5D:00.0", b.err("PCIBusID") }

func (b *fakeBoard) SMClock() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sm, b.errs["SMClock"]
}
func (b *fakeBoard) MemClock() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mem, b.errs["MemClock"]
}
func (b *fakeBoard) Temperature() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.temp, b.errs["Temperature"]
}
func (b *fakeBoard) MemoryTemperature() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hbm, b.errs["MemoryTemperature"]
}
func (b *fakeBoard) PowerUsage() (float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.watts, b.errs["PowerUsage"]
}
func (b *fakeBoard) TotalEnergy() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.energy, b.errs["TotalEnergy"]
}
func (b *fakeBoard) Utilization() (int, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gpu, b.copy, b.errs["Utilization"]
}
func (b *fakeBoard) EncoderUtilization() (int, error) { return 0, b.err("EncoderUtilization") }
func (b *fakeBoard) DecoderUtilization() (int, error) { return 0, b.err("DecoderUtilization") }
func (b *fakeBoard) Framebuffer() (Framebuffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fb, b.errs["Framebuffer"]
}
func (b *fakeBoard) PCIeReplays() (uint64, error) { return 2, b.err("PCIeReplays") }
func (b *fakeBoard) RemappedRows() (int, int, bool, error) {
	return 1, 0, false, b.err("RemappedRows")
}

func (b *fakeBoard) GPM() (GPM, error) {
	if b.noGPM {
		return nil, errors.New("GPM: not supported on this board or driver")
	}
	return &b.gpm, nil
}

// fakeGPM reads vals (NVML's units) over every interval; it counts
// snapshots and fails a metric by its index.
type fakeGPM struct {
	b       *fakeBoard
	vals    [NumGPMMetrics]float64
	bad     map[GPMMetric]error
	samples int
	closed  bool
}

func (g *fakeGPM) Sample() error { g.b.mu.Lock(); defer g.b.mu.Unlock(); g.samples++; return nil }
func (g *fakeGPM) Metric(m GPMMetric) (float64, error) {
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	if g.samples < 2 {
		return 0, errors.New("GPM: one sample")
	}
	return g.vals[m], g.bad[m]
}
func (g *fakeGPM) Close() { g.b.mu.Lock(); defer g.b.mu.Unlock(); g.closed = true }

// h200 reads as the measured H200 of docs/gpu.md's run 1 under a
// memory-bound kernel.
func h200() *fakeBoard {
	b := &fakeBoard{sm: 1980, mem: 3201, temp: 52, hbm: 61, watts: 412.5, energy: 98_765_432, gpu: 100, copy: 41,
		fb: Framebuffer{Free: 13_000 << 20, Used: 129_000 << 20, Reserved: 1_771 << 20}}
	b.gpm = fakeGPM{b: b, vals: [NumGPMMetrics]float64{74.6, 73.7, 51.7, 0, 40.9, 120, 30}}
	return b
}

var nvmlLine = regexp.MustCompile(`^(DCGM_FI_\w+)\{gpu="3",UUID="GPU-5d2b7c4e-6a1f-4b3e-9c2d-0e8f7a6b5c4d",pci_bus_id="00000000:5D:00\.0",device="nvidia5",modelName="NVIDIA H200",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580\.159\.04"\} (\S+)$`)

// scrape writes the exposition and returns each family's value, checking
// every line is dcgm-exporter's and the families come in its order.
func scrape(t *testing.T, e *NVMLExporter) map[string]string {
	t.Helper()
	var sb strings.Builder
	if err := e.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	text := sb.String()
	got := map[string]string{}
	var order []string
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			order = append(order, strings.Fields(name)[0])
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := nvmlLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a dcgm-exporter line: %q", line)
		}
		got[m[1]] = m[2]
	}
	var want []string
	for _, f := range metricspec.DCGMFields() {
		if _, ok := got[f.Name]; ok {
			want = append(want, f.Name)
			if f.Float != strings.Contains(got[f.Name], ".") {
				t.Errorf("%s = %q: doubles have six decimals, integers none", f.Name, got[f.Name])
			}
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("families %v, want those with values in field order %v", order, want)
	}
	for _, scheme := range []model.ValidationScheme{model.LegacyValidation, model.UTF8Validation} {
		p := expfmt.NewTextParser(scheme)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil || len(fams) != len(got) {
			t.Errorf("parse (%v): %d families of %d, %v", scheme, len(fams), len(got), err)
		}
	}
	return got
}

func newNVML(t *testing.T, b *fakeBoard) *NVMLExporter {
	t.Helper()
	e, err := NewNVML(NVMLConfig{Device: b, DriverVersion: "580.159.04", Hostname: "node-7"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNVMLExpositionFollowsTheBoard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := h200()
		e := newNVML(t, b)
		defer e.Close()
		first := scrape(t, e)
		for _, f := range profFields {
			if v, ok := first[f.field]; ok {
				t.Errorf("%s = %s before GPM's first interval ended", f.field, v)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := scrape(t, e)
		for field, want := range map[string]string{
			metricspec.DCGMSMClock: "1980", metricspec.DCGMMemClock: "3201", metricspec.DCGMGPUTemp: "52", metricspec.DCGMMemoryTemp: "61",
			metricspec.DCGMPowerUsage: "412.500000", metricspec.DCGMTotalEnergy: "98765432",
			metricspec.DCGMGPUUtil: "100", metricspec.DCGMMemCopyUtil: "41",
			metricspec.DCGMFBFree: "13000", metricspec.DCGMFBUsed: "129000", metricspec.DCGMFBReserved: "1771",
			metricspec.DCGMPCIeReplay: "2", metricspec.DCGMCorrectedRows: "1", metricspec.DCGMUncorrectedRows: "0", metricspec.DCGMRowRemapFailure: "0",
			// GPM's percent as DCGM's ratios, its MiB/s as bytes/s.
			metricspec.DCGMGREngineActive: "0.746000", metricspec.DCGMSMActive: "0.737000", metricspec.DCGMSMOccupancy: "0.517000",
			metricspec.DCGMTensorActive: "0.000000", metricspec.DCGMDRAMActive: "0.409000",
			metricspec.DCGMPCIeTxBytes: "125829120", metricspec.DCGMPCIeRxBytes: "31457280",
		} {
			if got[field] != want {
				t.Errorf("%s = %q, want %q", field, got[field], want)
			}
		}
		// What NVML does not give as a value is not made up.
		for _, field := range []string{metricspec.DCGMXIDErrors, metricspec.DCGMVGPULicense} {
			if v, ok := got[field]; ok {
				t.Errorf("%s = %s: NVML has no such reading", field, v)
			}
		}
		// The board changes; the next interval's reading follows it, and
		// GPM is snapshotted once per interval.
		b.set(func(b *fakeBoard) { b.watts, b.gpm.vals[GPMTensor], b.gpu = 699.25, 35.5, 3 })
		time.Sleep(time.Second)
		synctest.Wait()
		got = scrape(t, e)
		if got[metricspec.DCGMPowerUsage] != "699.250000" || got[metricspec.DCGMTensorActive] != "0.355000" || got[metricspec.DCGMGPUUtil] != "3" {
			t.Errorf("after the board changed: power %s, tensor %s, GPU util %s", got[metricspec.DCGMPowerUsage], got[metricspec.DCGMTensorActive], got[metricspec.DCGMGPUUtil])
		}
		if b.gpm.samples != 3 {
			t.Errorf("%d GPM snapshots after two intervals, want 3 (one at start)", b.gpm.samples)
		}
	})
}

// TestNVMLErrorsLoseOnlyThatField: dcgm-exporter writes what it can.
func TestNVMLErrorsLoseOnlyThatField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := h200()
		e := newNVML(t, b)
		defer e.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		all := scrape(t, e)
		notSupported := errors.New("nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED (3)")
		b.fail("PowerUsage", notSupported)
		b.fail("Utilization", errors.New("nvmlDeviceGetUtilizationRates: NVML_ERROR_GPU_IS_LOST (15)"))
		b.set(func(b *fakeBoard) {
			b.gpm.bad = map[GPMMetric]error{GPMPCIeRx: errors.New("GPM metric 21: NVML_ERROR_NOT_SUPPORTED (3)")}
		})
		time.Sleep(time.Second)
		synctest.Wait()
		got := scrape(t, e)
		lost := []string{metricspec.DCGMPowerUsage, metricspec.DCGMGPUUtil, metricspec.DCGMMemCopyUtil, metricspec.DCGMPCIeRxBytes}
		for field := range all {
			if _, ok := got[field]; ok == slices.Contains(lost, field) {
				t.Errorf("%s: present %v after its read failed %v", field, ok, slices.Contains(lost, field))
			}
		}
		failing := e.Failing()
		if len(failing) != len(lost) || !strings.Contains(strings.Join(failing, "\n"), notSupported.Error()) {
			t.Errorf("Failing() = %q, want the %d lost fields with their errors", failing, len(lost))
		}
		b.fail("PowerUsage", nil)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := scrape(t, e); got[metricspec.DCGMPowerUsage] != "412.500000" {
			t.Errorf("power %q once the read works again", got[metricspec.DCGMPowerUsage])
		}
	})
}

// TestNVMLWithoutGPM: a board before Hopper has no DCGM_FI_PROF_* series,
// as dcgm-exporter's on a board without DCP; the rest is there.
func TestNVMLWithoutGPM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := h200()
		b.noGPM = true
		e := newNVML(t, b)
		defer e.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		got := scrape(t, e)
		for field := range got {
			if strings.HasPrefix(field, "DCGM_FI_PROF_") {
				t.Errorf("%s without GPM", field)
			}
		}
		if got[metricspec.DCGMGPUUtil] != "100" || got[metricspec.DCGMPowerUsage] == "" || e.GPMMissing() == "" || len(e.Failing()) != 0 {
			t.Errorf("GPU util %q, power %q, GPMMissing %q, failing %q", got[metricspec.DCGMGPUUtil], got[metricspec.DCGMPowerUsage], e.GPMMissing(), e.Failing())
		}
	})
}

// TestNVMLCloseEndsTheSampler: after Close no goroutine is left and GPM's
// samples are released; scrapes still write the last reading.
func TestNVMLCloseEndsTheSampler(t *testing.T) {
	b := h200()
	e, err := NewNVML(NVMLConfig{Device: b, DriverVersion: "580.159.04", Hostname: "node-7", Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e.Close() // twice is fine
	goleak.VerifyNone(t)
	if !b.gpm.closed {
		t.Error("GPM's samples not released")
	}
	if v := scrape(t, e); v[metricspec.DCGMSMClock] != "1980" {
		t.Errorf("after Close: SM clock %q", v[metricspec.DCGMSMClock])
	}
}

func TestNewNVMLRejects(t *testing.T) {
	lost := h200()
	lost.fail("UUID", errors.New("nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST (15)"))
	for name, cfg := range map[string]NVMLConfig{
		"no device":                  {},
		"interval too long":          {Device: h200(), Interval: 2 * time.Minute},
		"interval too short for GPM": {Device: h200(), Interval: 50 * time.Millisecond},
		"no identity":                {Device: lost},
	} {
		if e, err := NewNVML(cfg); err == nil {
			e.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	goleak.VerifyNone(t)
}

// TestDoctorReadsTheNVMLExporter: the doctor's --dcgm-url scrape reads a
// real GPU's exposition as it reads dcgm-exporter's: the board's name and
// its GPM activities.
func TestDoctorReadsTheNVMLExporter(t *testing.T) {
	b := h200()
	e, err := NewNVML(NVMLConfig{Device: b, DriverVersion: "580.159.04", Hostname: "node-7", Interval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The minute-long interval keeps the sampler asleep: take GPM's
	// first interval here.
	e.mu.Lock()
	e.latest, e.failing = e.read(true)
	e.mu.Unlock()
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE %s gauge\n%s{engine=\"0\",model_name=\"m\"} 3\n", metricspec.NumRequestsRunning, metricspec.NumRequestsRunning)
	}))
	defer vllm.Close()
	gpu := httptest.NewServer(e)
	defer gpu.Close()
	ms, err := source.Scrape{URL: vllm.URL, DCGMURL: gpu.URL, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := ms[0].Window
	if len(w.Snapshots) == 0 || len(w.Problems) > 0 {
		t.Fatalf("%d readings, problems %v", len(w.Snapshots), w.Problems)
	}
	for key, want := range map[string]float64{metricspec.DCGMGREngineActive: 0.746, metricspec.DCGMSMActive: 0.737, metricspec.DCGMDRAMActive: 0.409, metricspec.DCGMTensorActive: 0} {
		if got, ok := w.Snapshots[0].Values[key]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("the doctor read %s = %v (%v), want %v", key, got, ok, want)
		}
	}
	if m := w.Info[doctor.InfoDCGM]["modelName"]; m != "NVIDIA H200" {
		t.Errorf("the doctor names the GPU %q", m)
	}
}
