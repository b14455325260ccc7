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

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

func h100(t *testing.T) sim.Hardware {
	t.Helper()
	hw, err := sim.LookupHardware("h100")
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// run feeds steps of busy seconds every period over d, each doing the
// FLOPs and bytes that make its own tensor and DRAM utilisation tensor and
// dram, and returns the exporter and the clock's end.
func run(t *testing.T, gpus int, busy, period, d time.Duration, tensor, dram float64) (*Exporter, time.Time) {
	t.Helper()
	hw := h100(t)
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	e, err := New(Config{Hardware: hw, GPUs: gpus, GPUMemoryUtilization: 0.9, Hostname: "node-1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for at := t0; at.Before(t0.Add(d)); at = at.Add(period) {
		b := busy.Seconds()
		e.ObserveStep(&engine.StepEvent{Start: at, ExecuteTime: busy, End: at.Add(busy), NumTokens: 64, GenerationTokens: 64,
			FLOPs: tensor * hw.PeakFLOPs * b, ReadBytes: dram * hw.MemBandwidth * b})
	}
	now = t0.Add(d)
	return e, now
}

func TestReadingFollowsTheSteps(t *testing.T) {
	hw := h100(t)
	e, now := run(t, 1, 10*time.Millisecond, 20*time.Millisecond, 3*time.Second, 0.3, 0.6)
	r := e.read(now)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"engine active", r.active, 0.5},
		{"tensor active", r.tensor, 0.15},
		{"DRAM active", r.dram, 0.3},
		{"power", r.watts, hw.Device.IdleWatts + 0.5*(hw.Device.TDPWatts-hw.Device.IdleWatts)*(0.45+0.55*0.6)},
	} {
		if math.Abs(c.got-c.want) > 0.01*math.Max(1, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r.sm < r.tensor || r.sm > r.active || r.occupancy > r.sm {
		t.Errorf("SM active %v, occupancy %v: want tensor ≤ SM ≤ engine active, occupancy ≤ SM", r.sm, r.occupancy)
	}
	if want := int(math.Round(0.9 * float64(hw.Device.FramebufferMiB))); r.fbUsed != want ||
		r.fbUsed+r.fbFree+r.fbReserved != hw.Device.FramebufferMiB {
		t.Errorf("FB used %d free %d reserved %d, want %d used of %d", r.fbUsed, r.fbFree, r.fbReserved, want, hw.Device.FramebufferMiB)
	}
	if r.smClock != hw.Device.SMClockMHz {
		t.Errorf("SM clock %d under load, want %d", r.smClock, hw.Device.SMClockMHz)
	}
	// Two seconds later, with nothing running: idle.
	idle := e.read(now.Add(2 * time.Second))
	if idle.active != 0 || idle.tensor != 0 || idle.watts != hw.Device.IdleWatts || idle.smClock != hw.Device.IdleSMClockMHz {
		t.Errorf("idle reading %+v", idle)
	}
	if idle.fbUsed != r.fbUsed {
		t.Errorf("FB used moved from %d to %d: vLLM's preallocation is flat", r.fbUsed, idle.fbUsed)
	}
	if idle.energyMJ <= r.energyMJ {
		t.Errorf("energy went from %v to %v mJ", r.energyMJ, idle.energyMJ)
	}
}

var dcgmLine = regexp.MustCompile(`^(DCGM_FI_\w+)\{gpu="(\d)",UUID="GPU-[0-9a-f-]+",pci_bus_id="00000000:[0-9A-F]{2}:00\.0",device="nvidia(\d)",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",DCGM_FI_DRIVER_VERSION="[0-9.]+"(,err_code="0",err_msg="No Error")?\} (\S+)$`)

// TestExpositionIsDCGMExporters: the families in dcgm-exporter's order and
// format, one series per GPU, readable by the parsers scrapers use.
func TestExpositionIsDCGMExporters(t *testing.T) {
	e, _ := run(t, 2, 10*time.Millisecond, 20*time.Millisecond, 3*time.Second, 0.3, 0.6)
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
	if values[metricspec.DCGMGREngineActive+"/0"] != "0.500000" {
		t.Errorf("engine active %s, want 0.500000", values[metricspec.DCGMGREngineActive+"/0"])
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
		"no device":        {Hardware: sim.Hardware{Name: "x"}, GPUs: 1},
		"window too big":   {Hardware: hw, GPUs: 1, Window: 2 * time.Minute},
		"window too short": {Hardware: hw, GPUs: 1, Window: 50 * time.Millisecond},
		"negative window":  {Hardware: hw, GPUs: 1, Window: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
