package dcgm

import (
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

func h100(t *testing.T) profiles.Hardware {
	t.Helper()
	hw, err := profiles.LookupHardware("h100")
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// run feeds steps of busy seconds every period over d, each with the
// activity a while it runs, and returns the exporter and the clock's end.
func run(t *testing.T, gpus int, busy, period, d time.Duration, a costmodel.Activity) (*Exporter, time.Time) {
	t.Helper()
	hw := h100(t)
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	e, err := New(Config{Hardware: hw, GPUs: gpus, GPUMemoryUtilization: 0.9, Hostname: "node-1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for at := t0; at.Before(t0.Add(d)); at = at.Add(period) {
		e.Observe(Step{Start: at, Busy: busy, Tokens: 64, Sampled: 64, Activity: a})
	}
	now = t0.Add(d)
	return e, now
}

var light = costmodel.Activity{EngineActive: 0.9, SMActive: 0.6, SMOccupancy: 0.1, TensorActive: 0.3, DRAMActive: 0.5, Watts: 400}

func TestReadingFollowsTheSteps(t *testing.T) {
	hw := h100(t)
	k := hw.Calib.Counters
	e, now := run(t, 1, 10*time.Millisecond, 20*time.Millisecond, 3*time.Second, light)
	r := e.read(now)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		// Busy half the time: every activity is half the kernels'.
		{"engine active", r.EngineActive, 0.45},
		{"SM active", r.SMActive, 0.3},
		{"SM occupancy", r.SMOccupancy, 0.05},
		{"tensor active", r.TensorActive, 0.15},
		{"DRAM active", r.DRAMActive, 0.25},
		{"GPU utilisation", r.GPUUtil, 50},
		{"copy utilisation", r.CopyUtil, math.Round(100 * k.CopyUtilPerDRAM * 0.25)},
		{"power", r.Watts, k.IdleWatts + 200},
		{"SM clock", r.SMClockMHz, float64(hw.Device.SMClockMHz)},
	} {
		if math.Abs(c.got-c.want) > 0.01*math.Max(1, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if want := int(math.Round(0.9 * float64(hw.Device.FramebufferMiB))); r.fbUsed != want ||
		r.fbUsed+r.fbFree+r.fbReserved != hw.Device.FramebufferMiB {
		t.Errorf("FB used %d free %d reserved %d, want %d used of %d", r.fbUsed, r.fbFree, r.fbReserved, want, hw.Device.FramebufferMiB)
	}
	// Two seconds later, with nothing running: idle.
	idle := e.read(now.Add(2 * time.Second))
	if idle.EngineActive != 0 || idle.TensorActive != 0 || idle.GPUUtil != 0 || idle.Watts != k.IdleWatts ||
		idle.SMClockMHz != float64(hw.Device.IdleSMClockMHz) {
		t.Errorf("idle reading %+v", idle)
	}
	if idle.fbUsed != r.fbUsed {
		t.Errorf("FB used moved from %d to %d: vLLM's preallocation is flat", r.fbUsed, idle.fbUsed)
	}
	if idle.energyMJ <= r.energyMJ {
		t.Errorf("energy went from %v to %v mJ", r.energyMJ, idle.energyMJ)
	}
}

// TestPowerCapThrottlesTheClock: kernels that would draw more than the
// board's limit hold it there, and the SM clock falls below boost, as a
// real Hopper's does under sustained GEMMs.
func TestPowerCapThrottlesTheClock(t *testing.T) {
	hw := h100(t)
	k, d := hw.Calib.Counters, hw.Device
	heavy := light
	heavy.Watts = 2 * (d.TDPWatts - k.IdleWatts)
	e, now := run(t, 1, 20*time.Millisecond, 20*time.Millisecond, 3*time.Second, heavy)
	r := e.read(now)
	if r.Watts != d.TDPWatts || !r.Capped {
		t.Errorf("power %v W (capped %v), want the board's %v W", r.Watts, r.Capped, d.TDPWatts)
	}
	if want := float64(d.SMClockMHz) * math.Pow(0.5, k.ClockExponent); math.Abs(r.SMClockMHz-want) > 1 || r.SMClockMHz >= float64(d.SMClockMHz) {
		t.Errorf("SM clock %v MHz at twice the limit's demand, want %v", r.SMClockMHz, want)
	}
	if r.GPUUtil != 100 || r.EngineActive >= 1 {
		t.Errorf("GPU util %v and engine active %v: a GPU fed back to back reads 100 %% utilisation and engine activity below 1", r.GPUUtil, r.EngineActive)
	}
}

// TestSimulatedSaturatedGPUReadsLikeAReal: decode steps of the simulated
// H200 back to back read what the measured H200 reads for them: engine
// activity 0.88–0.96, not 1; NVML utilisation 100.
func TestSimulatedSaturatedGPUReadsLikeAReal(t *testing.T) {
	hw, err := profiles.LookupHardware("h200")
	if err != nil {
		t.Fatal(err)
	}
	m, err := profiles.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	cm := costmodel.Model{HW: hw, Model: m, TP: 1}
	var b []costmodel.Seq
	for range 64 {
		b = append(b, costmodel.Seq{Tokens: 1, Pos: 2047, NumPrompt: 1, Sample: true})
	}
	c := cm.Step(b)
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	e, err := New(Config{Hardware: hw, GPUs: 1, GPUMemoryUtilization: 0.9, Hostname: "node-1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for at := t0; at.Before(t0.Add(3 * time.Second)); at = at.Add(c.Duration) {
		e.Observe(Step{Start: at, Busy: c.Duration, Activity: c.Activity})
	}
	now = t0.Add(3 * time.Second)
	r := e.read(now)
	if r.EngineActive < 0.88 || r.EngineActive > 0.96 || r.GPUUtil != 100 {
		t.Errorf("engine active %.3f, GPU util %v; the measured H200 reads 0.90–0.96 and 100 on this load", r.EngineActive, r.GPUUtil)
	}
	if r.SMActive < 0.65 || r.SMActive > 0.85 || r.TensorActive < 0.25 || r.TensorActive > 0.45 {
		t.Errorf("SM active %.3f, tensor %.3f; measured 0.75–0.81 and 0.35–0.37", r.SMActive, r.TensorActive)
	}
}

var dcgmLine = regexp.MustCompile(`^(DCGM_FI_\w+)\{gpu="(\d)",UUID="GPU-[0-9a-f-]+",pci_bus_id="00000000:[0-9A-F]{2}:00\.0",device="nvidia(\d)",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",DCGM_FI_DRIVER_VERSION="[0-9.]+"(,err_code="0",err_msg="No Error")?\} (\S+)$`)

// TestExpositionIsDCGMExporters: the families in dcgm-exporter's order and
// format, one series per GPU, readable by the parsers scrapers use.
func TestExpositionIsDCGMExporters(t *testing.T) {
	e, _ := run(t, 2, 10*time.Millisecond, 20*time.Millisecond, 3*time.Second, light)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := rec.Body.String()
	var order []string
	values := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			order = append(order, strings.Fields(name)[0])
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := dcgmLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a dcgm-exporter line: %q", line)
		}
		if m[2] != m[3] {
			t.Errorf("gpu %s on device nvidia%s", m[2], m[3])
		}
		values[m[1]+"/"+m[2]] = m[5]
	}
	var names []string
	for _, f := range metricspec.DCGMFields() {
		names = append(names, f.Name)
	}
	if strings.Join(order, ",") != strings.Join(names, ",") {
		t.Errorf("families %v, want %v", order, names)
	}
	for _, f := range metricspec.DCGMFields() {
		v0, v1 := values[f.Name+"/0"], values[f.Name+"/1"]
		if v0 == "" || v0 != v1 {
			t.Errorf("%s: gpu 0 %q, gpu 1 %q", f.Name, v0, v1)
		}
		if f.Float != strings.Contains(v0, ".") || (f.Float && len(v0)-strings.IndexByte(v0, '.') != 7) {
			t.Errorf("%s = %q: doubles have six decimals, integers none", f.Name, v0)
		}
	}
	if values[metricspec.DCGMGREngineActive+"/0"] != "0.450000" || values[metricspec.DCGMGPUUtil+"/0"] != "50" {
		t.Errorf("engine active %s, GPU util %s, want 0.450000 and 50", values[metricspec.DCGMGREngineActive+"/0"], values[metricspec.DCGMGPUUtil+"/0"])
	}
	// The endpoint picker's parser (legacy names) and Prometheus' accept it.
	for _, scheme := range []model.ValidationScheme{model.LegacyValidation, model.UTF8Validation} {
		p := expfmt.NewTextParser(scheme)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil || len(fams) != len(metricspec.DCGMFields()) {
			t.Errorf("parse (%v): %d families, %v", scheme, len(fams), err)
		}
	}
}

func TestNewRejects(t *testing.T) {
	hw := h100(t)
	for name, cfg := range map[string]Config{
		"no GPU":           {Hardware: hw},
		"no device":        {Hardware: profiles.Hardware{Name: "x"}, GPUs: 1},
		"window too big":   {Hardware: hw, GPUs: 1, Window: 2 * time.Minute},
		"window too short": {Hardware: hw, GPUs: 1, Window: 50 * time.Millisecond},
		"negative window":  {Hardware: hw, GPUs: 1, Window: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
