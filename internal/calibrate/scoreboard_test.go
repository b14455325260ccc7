package calibrate

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestScoreboardHarness replays the scoreboard's experiments, shortened
// to a fiftieth (a tenth without -race), and checks what it writes: every
// experiment of both tables has its row, those not simulated say why, and
// the medians and P90s are over the simulated ones. TestScoreboardDocs
// checks the full-length numbers.
func TestScoreboardHarness(t *testing.T) {
	exps := readExperiments(t)
	cut := 10.0
	if raceEnabled {
		cut = 50
	}
	for i := range exps {
		for k := range exps[i].Run.Load.Load.Stages {
			exps[i].Run.Load.Load.Stages[k].Duration /= cut
		}
	}
	scores, err := Scoreboard(context.Background(), exps)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteScoreboard(&b, scores)
	md := b.String()
	t.Log("\n" + md)
	sum := SummarizeScores(scores)
	var errs []float64
	for _, sc := range scores {
		row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(sc.Table) + ` \| ` + regexp.QuoteMeta(strconv.Itoa(sc.ID)) + ` \| `)
		if !row.MatchString(md) {
			t.Errorf("exp %d has no row", sc.ID)
		}
		if sc.Prediction == nil {
			if sc.Why == "" || !strings.Contains(md, "- exp "+strconv.Itoa(sc.ID)+" ("+sc.Model+", "+sc.GPU+"): not simulated: "+sc.Why) {
				t.Errorf("exp %d is not simulated and the scoreboard does not say why (%q)", sc.ID, sc.Why)
			}
			continue
		}
		if sc.Prediction.Failed > 0 {
			t.Errorf("exp %d: %d requests failed", sc.ID, sc.Prediction.Failed)
		}
		errs = append(errs, math.Abs(sc.Prediction.Errors().E2E))
	}
	if sum.Total != 17 || sum.Simulated != len(errs) || sum.Simulated < 12 {
		t.Errorf("%d of %d simulated (%d with errors): table A's ten and A′'s dense two at least", sum.Simulated, sum.Total, len(errs))
	}
	if got, want := sum.Median.E2E, median(errs); got != want || !strings.Contains(md, "| glassbox, median over the "+strconv.Itoa(len(errs))+" simulated | ") {
		t.Errorf("median E2E error %v, want %v over %d", got, want, len(errs))
	}
	if !(sum.P90.E2E >= sum.Median.E2E) {
		t.Errorf("P90 %v below the median %v", sum.P90.E2E, sum.Median.E2E)
	}
}

// goalsMet are the goals the scoreboard meets today, which
// TestScoreboardDocs holds it to; a goal not met is in goalsNotMet with
// the scoreboard's median when this was written, and docs/simulator.md
// says so. A change either way fails the test, to be written down.
var (
	goalsMet    = []string{"TTFT", "E2E", "TPOT"} // over all 17
	goalsNotMet = map[string]float64{}
)

// TestScoreboardDocs: docs/simulator.md's scoreboard is every experiment
// of tables A and A′ replayed in full on its GPU's built-in profile
// (glassbox simulate calibrate --reference … --scoreboard); issue 46's
// median goals hold where goalsMet says they are met, and fail where
// goalsNotMet says they are not.
func TestScoreboardDocs(t *testing.T) {
	reftest.Long(t, "every experiment of tables A and A′ replayed in full")
	if raceEnabled {
		t.Skip("SKIPPED under -race: the scoreboard's numbers are the full-length replays', which -race slows sixteenfold; " +
			"TestScoreboardHarness runs them shortened here, and .ci/run runs this test without -race")
	}
	scores, err := Scoreboard(context.Background(), readExperiments(t))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteScoreboard(&b, scores)
	t.Log("\n" + b.String())
	held := heldOut(t)
	var h strings.Builder
	fmt.Fprintf(&h, "The first round's stages (`--table stages`):\n\n")
	WriteTable(&h, held[0].Preds)
	fmt.Fprintf(&h, "\nTensor parallelism 2, CodeLlama-34B (`--runs internal/calibrate/testdata/heldout`):\n\n")
	WriteTable(&h, held[1].Preds)
	fmt.Fprintln(&h, "\nFitted and held out, side by side:")
	fmt.Fprintln(&h)
	var tableA, primeH100 []Prediction
	for _, sc := range scores {
		switch {
		case sc.Prediction == nil:
		case sc.Table == "A":
			tableA = append(tableA, *sc.Prediction)
		case sc.GPU == "H100":
			primeH100 = append(primeH100, *sc.Prediction)
		}
	}
	WriteSplit(&h, append([]Split{{"fitted: table A (H100)", tableA},
		{"fitted: table A′'s A100 and L40S runs (one each)", append(Predictions(scores, "A100-80GB SXM"), Predictions(scores, "L40S")...)},
		{"not fitted: table A′'s H100 runs (mixture-of-experts models, Mistral-Nemo)", primeH100}}, held...))
	t.Log("\n" + h.String())
	const path = "../../docs/simulator.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(doc)
	for _, sec := range []struct{ name, body string }{{"scoreboard", b.String()}, {"heldout", h.String()}} {
		re := regexp.MustCompile(`(?s)(<!-- ` + sec.name + ` -->\n).*?(<!-- /` + sec.name + ` -->)`)
		if !re.MatchString(got) {
			t.Fatalf("%s has no <!-- %s --> section", path, sec.name)
		}
		got = re.ReplaceAllLiteralString(got, "<!-- "+sec.name+" -->\n"+sec.body+"<!-- /"+sec.name+" -->")
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if got != string(doc) {
		t.Errorf("%s's scoreboard is stale: go test ./internal/calibrate -run TestScoreboardDocs -update (with GLASSBOX_LONG_TESTS=1)", path)
	}
	if len(goalsMet)+len(goalsNotMet) != 3 {
		t.Errorf("goalsMet %v and goalsNotMet %v must name TTFT, E2E and TPOT once each", goalsMet, goalsNotMet)
	}
	sum := SummarizeScores(scores)
	medians := map[string]float64{"TTFT": sum.Median.TTFT, "E2E": sum.Median.E2E, "TPOT": sum.Median.TPOT}
	goals := map[string]float64{"TTFT": Goals.TTFT, "E2E": Goals.E2E, "TPOT": Goals.TPOT}
	for _, m := range goalsMet {
		if medians[m] > goals[m] {
			t.Errorf("median %s error %.1f%% over the %d simulated experiments: the goal is %.0f%%, and it was met", m, 100*medians[m], sum.Simulated, 100*goals[m])
		}
	}
	for m, was := range goalsNotMet {
		if medians[m] <= goals[m] {
			t.Errorf("median %s error %.1f%% (was %.1f%%) now meets the goal of %.0f%%: move it to goalsMet and say so in the docs", m, 100*medians[m], 100*was, 100*goals[m])
		}
	}
	if sum.Simulated < sum.Total {
		t.Logf("%d of %d experiments simulated: issue 46's goal is over every one of them", sum.Simulated, sum.Total)
	}
}

// heldOut replays the runs no profile was fitted on, on the H100 profile:
// the first round's stages and the TP 2 runs of testdata/heldout.
func heldOut(t *testing.T) []Split {
	f, err := os.Open(reftest.Path(t, "reference", "calibration", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages, err := ReadStageTable(f)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := ReadRuns("testdata/heldout")
	if err != nil {
		t.Fatal(err)
	}
	hw, _ := profiles.LookupHardware("h100")
	var out []Split
	for _, s := range []Split{{"held out: the first round's stages (H100)", nil}, {"held out: TP 2, CodeLlama-34B (H100)", nil}} {
		runs := stages
		if len(out) == 1 {
			runs = tp
		}
		s.Preds, err = Evaluate(context.Background(), runs, hw.Calib)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
