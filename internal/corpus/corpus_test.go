package corpus

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// defaults is the doctor the corpus judges: its default thresholds.
var defaults = doctor.NewDiagnoser(doctor.DefaultThresholds(), doctor.Hints{})

var update = flag.Bool("update", false, "rewrite the golden reports and docs/doctor-corpus.md's direct-source tables from the recorded windows")

const docPath = "../../docs/doctor-corpus.md"

// readAll reads every scenario's recorded window and judges it in every
// clothes.
func readAll(t *testing.T) []Result {
	t.Helper()
	var out []Result
	for _, sc := range Scenarios() {
		w, err := ReadFile(filepath.Join("testdata", sc.File()+".window.json.gz"))
		if err != nil {
			t.Fatalf("%s: %v (regenerate: go test ./cmd/glassbox -run TestDoctorCorpusRegenerate -args -corpus.run=. -corpus.update)", sc.Name, err)
		}
		for _, c := range Clothes {
			out = append(out, Judge(defaults, sc, In(w, c), c, "direct"))
		}
	}
	return out
}

// TestCorpus: every scenario, read in every clothes, meets its class's
// expectations: the doctor names the class (or says why it cannot), names
// nothing that contradicts it, answers the three questions as the
// construction says, and prints no fix pointing at a finding it lacks.
func TestCorpus(t *testing.T) {
	results := readAll(t)
	if n := len(Scenarios()); n < 40 {
		t.Errorf("the corpus has %d scenarios, want at least 40", n)
	}
	for _, r := range results {
		if len(r.Misses) > 0 {
			t.Errorf("%s read as %s: %s", r.Scenario.Name, r.Clothes, strings.Join(r.Misses, "; "))
		}
	}
	byScenario := map[string][]Result{}
	for _, r := range results {
		byScenario[r.Scenario.File()] = append(byScenario[r.Scenario.File()], r)
	}
	for _, sc := range Scenarios() {
		path := filepath.Join("testdata", sc.File()+".golden.txt")
		got := stripPromQL(Golden(byScenario[sc.File()]))
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update)", sc.Name, err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("%s: the reports changed (-golden +now); if meant, rerun with -update and review the diff:\n%s", sc.Name, d)
		}
	}
}

func stripPromQL(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "promql:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestCorpusTablesInDocs: docs/doctor-corpus.md's confusion table, answers
// and limits are those of the recorded corpus.
func TestCorpusTablesInDocs(t *testing.T) {
	results := readAll(t)
	sections := map[string]string{"confusion": Confusion(results), "limits": Limits(), "scenarios": ScenarioTable()}
	doc, err := os.ReadFile(docPath)
	if err != nil && !*update {
		t.Fatal(err)
	}
	text := string(doc)
	for name, body := range sections {
		var ok bool
		text, ok = replaceSection(text, name, body)
		if !ok && !*update {
			t.Errorf("%s has no generated section %q", docPath, name)
		}
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if text != string(doc) {
		t.Errorf("%s is stale: rerun go test ./internal/corpus -update", docPath)
	}
}

// replaceSection puts body between <!-- corpus:NAME --> and
// <!-- /corpus:NAME -->.
func replaceSection(doc, name, body string) (string, bool) {
	re := regexp.MustCompile(`(?s)(<!-- corpus:` + name + ` -->\n).*?(<!-- /corpus:` + name + ` -->)`)
	if !re.MatchString(doc) {
		return doc, false
	}
	return re.ReplaceAllLiteralString(doc, "<!-- corpus:"+name+" -->\n"+body+"<!-- /corpus:"+name+" -->"), true
}

// TestWindowRoundTrip: a recorded window reads back as written.
func TestWindowRoundTrip(t *testing.T) {
	sc := Scenarios()[0]
	w, err := ReadFile(filepath.Join("testdata", sc.File()+".window.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Write(&b, w); err != nil {
		t.Fatal(err)
	}
	back, err := Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w.Snapshots, back.Snapshots); d != "" {
		t.Errorf("round trip (-wrote +read):\n%s", d)
	}
	if !slices.Equal(defaults.Diagnose(w, nil).Names(), defaults.Diagnose(back, nil).Names()) {
		t.Error("the window diagnoses differently after a round trip")
	}
}

// TestClothesDropWhatTheyLack: vLLM's clothes carry no glassbox_* series
// or info, vLLM's alone no DCGM either, glassbox's no DCGM.
func TestClothesDropWhatTheyLack(t *testing.T) {
	sc := Scenarios()[0]
	full, err := ReadFile(filepath.Join("testdata", sc.File()+".window.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Clothes {
		w := In(full, c)
		for k := range w.Snapshots[0].Values {
			if (c != Glassbox && strings.HasPrefix(k, "glassbox_")) || (c != VLLMDCGM && strings.HasPrefix(k, "DCGM_")) {
				t.Errorf("%s clothes keep %s", c, k)
			}
		}
		if _, ok := w.Info["glassbox_scheduler_config_info"]; ok != (c == Glassbox) {
			t.Errorf("%s clothes: scheduler info present %v", c, ok)
		}
	}
}

// TestCorpusSizeInDocs: docs/doctor.md says how many scenarios and classes
// the corpus holds, as Scenarios and Classes do.
func TestCorpusSizeInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/doctor.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("**%d scenarios in %d classes**", len(Scenarios()), len(Classes()))
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/doctor.md does not say the corpus holds %s", want)
	}
}
