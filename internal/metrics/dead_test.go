package metrics

import (
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// TestEngineDeadGauge: glassbox_engine_dead reads the engine's stats at
// scrape time: every reason 0 while it serves, then 1 for the one that
// killed it and 0 for the others, with --disable-log-stats too.
func TestEngineDeadGauge(t *testing.T) {
	for _, disable := range []bool{false, true} {
		var st engine.Stats
		cfg := testConfig()
		cfg.DisableLogStats = disable
		cfg.Stats = func() engine.Stats { return st }
		_, reg := newTestMetrics(t, cfg)
		read := func() map[string]float64 {
			out := map[string]float64{}
			for _, m := range parse(t, scrape(t, reg))["glassbox_engine_dead"].GetMetric() {
				out[labelMap(m)["reason"]] = m.GetGauge().GetValue()
			}
			return out
		}
		if got := read(); len(got) != 3 || got["executor_error"]+got["step_timeout"]+got["executor_panic"] != 0 {
			t.Errorf("disable-log-stats %v: serving engine reads %v, want three reasons at 0", disable, got)
		}
		st.Dead = engine.DeathStepTimeout
		if got := read(); got["step_timeout"] != 1 || got["executor_error"] != 0 || got["executor_panic"] != 0 {
			t.Errorf("disable-log-stats %v: engine dead of step_timeout reads %v", disable, got)
		}
	}
}

// TestEngineDeadReasonsAreTheEngines: the reasons the doctor and the alert
// read (metricspec, which must not import the engine) are the engine's.
func TestEngineDeadReasonsAreTheEngines(t *testing.T) {
	var want []string
	for _, r := range engine.DeathReasons {
		want = append(want, string(r))
	}
	if !slices.Equal(metricspec.EngineDeadReasons, want) {
		t.Errorf("metricspec.EngineDeadReasons %v, the engine's %v", metricspec.EngineDeadReasons, want)
	}
}
