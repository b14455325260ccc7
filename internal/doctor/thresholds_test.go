package doctor

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/doctor.md's threshold table from Thresholds")

const doctorDoc = "../../docs/doctor.md"

// thresholdTable is docs/doctor.md's table of every threshold, written
// from the struct's tags and the defaults.
func thresholdTable() string {
	var b strings.Builder
	b.WriteString("| threshold | default | meaning |\n|---|---|---|\n")
	th := DefaultThresholds()
	for _, name := range ThresholdNames() {
		v, _ := th.Get(name)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, strconv.FormatFloat(v, 'g', -1, 64), ThresholdDoc(name))
	}
	return b.String()
}

// TestThresholdsInDocs: docs/doctor.md lists every threshold at its
// default.
func TestThresholdsInDocs(t *testing.T) {
	doc, err := os.ReadFile(doctorDoc)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(<!-- thresholds -->\n).*?(<!-- /thresholds -->)`)
	if !re.Match(doc) {
		t.Fatalf("%s has no <!-- thresholds --> section", doctorDoc)
	}
	want := re.ReplaceAllLiteral(doc, []byte("<!-- thresholds -->\n"+thresholdTable()+"<!-- /thresholds -->"))
	if *updateDocs {
		if err := os.WriteFile(doctorDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(want) != string(doc) {
		t.Errorf("%s's threshold table is not Thresholds' (rerun go test ./internal/doctor -update)", doctorDoc)
	}
}

// TestAlertsShareTheThresholds: the alert rules glassbox ships fire on the
// numbers the doctor's findings use, so an alert and the finding that
// explains it agree.
func TestAlertsShareTheThresholds(t *testing.T) {
	b, err := os.ReadFile("../../monitoring/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	th := DefaultThresholds()
	want := map[string]float64{"GlassboxHighPreemptionRate": th.PreemptionRate, "GlassboxKVCacheNearlyFull": th.KVWatermark,
		"GlassboxQueueTimeDominates": th.QueueShare, "GlassboxHighAbortRate": th.AbortShare, "GlassboxSpecAcceptanceCollapsed": th.SpecAcceptanceLow}
	tail := regexp.MustCompile(`[<>]\s*([0-9.]+)\s*$`)
	found := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			w, ok := want[r.Alert]
			if !ok {
				continue
			}
			found++
			m := tail.FindStringSubmatch(r.Expr)
			if m == nil {
				t.Errorf("%s: no threshold at the end of %q", r.Alert, r.Expr)
				continue
			}
			if got, _ := strconv.ParseFloat(m[1], 64); got != w {
				t.Errorf("%s fires above %v, the doctor's threshold is %v", r.Alert, got, w)
			}
		}
	}
	if found != len(want) {
		t.Errorf("found %d of the %d alerts that share the doctor's thresholds", found, len(want))
	}
}
