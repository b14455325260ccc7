package dashboards

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// band is a panel's colour steps, as Grafana reads them.
type band struct {
	Color string
	Value *float64
}

// panelBands are the colour steps and descriptions of a dashboard's panels
// whose title contains any of titles.
func panelBands(t *testing.T, raw []byte, titles ...string) (map[string][]band, map[string]string) {
	t.Helper()
	var d struct {
		Panels []struct {
			Title, Description string
			FieldConfig        struct {
				Defaults struct{ Thresholds struct{ Steps []band } }
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	steps, desc := map[string][]band{}, map[string]string{}
	for _, p := range d.Panels {
		if slices.ContainsFunc(titles, func(s string) bool { return strings.Contains(p.Title, s) }) {
			steps[p.Title], desc[p.Title] = p.FieldConfig.Defaults.Thresholds.Steps, p.Description
		}
	}
	return steps, desc
}

// bandsOf writes steps as "base <value> colour …" for comparison.
func bandsOf(steps []band) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteString(" ")
		}
		if s.Value != nil {
			b.WriteString(strconv.FormatFloat(*s.Value, 'g', -1, 64) + " ")
		}
		b.WriteString(s.Color)
	}
	return b.String()
}

// TestBandsFollowThresholds: the overview's colour bands are the doctor's
// thresholds, not literals: the KV panel is orange from kv_watermark and
// red from kv_full, the SLO tiles red below slo_attained_low and green
// from slo_attained (their descriptions say so), and moving a threshold
// moves its band.
func TestBandsFollowThresholds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		move          func(c *Config)
		kv, slo, text string
	}{
		{"defaults", func(*Config) {}, "green 0.9 orange 0.98 red", "red 0.9 orange 0.99 green", "Red below 90%, green from 99%."},
		{"moved", func(c *Config) {
			c.Thresholds.KVWatermark, c.Thresholds.KVFull = 0.8, 0.95
			c.Thresholds.SLOAttainedLow, c.Thresholds.SLOAttained = 0.95, 0.995
		}, "green 0.8 orange 0.95 red", "red 0.95 orange 0.995 green", "Red below 95%, green from 99.5%."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.move(&c)
			steps, desc := panelBands(t, generated(t, c)[OverviewPath], "KV-cache usage", "≤")
			if got := bandsOf(steps["KV-cache usage"]); got != tc.kv {
				t.Errorf("KV-cache usage bands %q, want %q", got, tc.kv)
			}
			tiles := 0
			for title, s := range steps {
				if !strings.Contains(title, "≤") {
					continue
				}
				tiles++
				if got := bandsOf(s); got != tc.slo {
					t.Errorf("%s bands %q, want %q", title, got, tc.slo)
				}
				if !strings.HasSuffix(desc[title], tc.text) {
					t.Errorf("%s says %q, want it to end %q", title, desc[title], tc.text)
				}
			}
			if tiles != 3 {
				t.Errorf("%d SLO tiles, want 3 (TTFT, inter-token, end-to-end)", tiles)
			}
		})
	}
}
