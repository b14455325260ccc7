package calibrate

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
