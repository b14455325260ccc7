package corpus

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// Result is one scenario read in one clothes from one source.
type Result struct {
	Scenario Scenario
	Clothes  string
	Source   string // direct (the recorded readings) or prometheus
	Report   *doctor.Report
	Misses   []string
}

// Judge diagnoses a scenario's window in the clothes with d and checks
// it: the corpus judges d's thresholds (the defaults, for its confusion
// table).
func Judge(d doctor.Diagnoser, sc Scenario, w *doctor.Window, clothes, source string) Result {
	rep := d.Diagnose(w, nil)
	return Result{Scenario: sc, Clothes: clothes, Source: source, Report: rep, Misses: Check(rep, sc.Expect(clothes))}
}

// columns are the findings the confusion table counts.
var columns = []string{"kv-capacity-bound", "compute-bound", "compute-and-kv-bound", "concurrency-cap", "token-budget", "host-bound", "under-loaded",
	"preemption-storm", "prefill-bound", "decode-bound", "queueing-dominates", "client-timeouts", "prefix-caching", "speculation-costly"}

// Confusion is the class × finding table of results: in each cell, how
// many of the class's reports named the finding; the class's own finding
// is bold. Then the answers, and the reports that fell short.
func Confusion(results []Result) string {
	var b strings.Builder
	byClass := map[string][]Result{}
	for _, r := range results {
		byClass[r.Scenario.Class] = append(byClass[r.Scenario.Class], r)
	}
	short := map[string]string{"kv-capacity-bound": "kv-cap", "compute-bound": "compute", "compute-and-kv-bound": "both", "concurrency-cap": "cap",
		"token-budget": "budget", "host-bound": "host", "under-loaded": "under", "preemption-storm": "preempt", "prefill-bound": "prefill", "decode-bound": "decode",
		"queueing-dominates": "queue", "client-timeouts": "timeouts", "prefix-caching": "prefix", "speculation-costly": "spec"}
	b.WriteString("| class (finding) | reports | right |")
	for _, c := range columns {
		b.WriteString(" " + short[c] + " |")
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(columns)) + "\n")
	for _, cl := range Classes() {
		rs := byClass[cl.Name]
		if len(rs) == 0 {
			continue
		}
		right := 0
		for _, r := range rs {
			if len(r.Misses) == 0 {
				right++
			}
		}
		name := cl.Name
		if cl.Finding != "" {
			name += " (" + cl.Finding + ")"
		}
		fmt.Fprintf(&b, "| %s | %d | %d |", name, len(rs), right)
		for _, c := range columns {
			n := 0
			for _, r := range rs {
				if slices.Contains(r.Report.Names(), c) {
					n++
				}
			}
			cell := fmt.Sprint(n)
			if n == 0 {
				cell = "·"
			}
			if c == cl.Finding {
				cell = "**" + cell + "**"
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nThe three answers, by class (yes / no / can't tell, over every report of the class):\n\n")
	b.WriteString("| class | compute saturated? | KV cache the limit? | scheduler idle? |\n|---|---|---|---|\n")
	for _, cl := range Classes() {
		rs := byClass[cl.Name]
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s |", cl.Name)
		for _, pick := range []func(*doctor.Questions) doctor.Answer{
			func(q *doctor.Questions) doctor.Answer { return q.Compute },
			func(q *doctor.Questions) doctor.Answer { return q.KV },
			func(q *doctor.Questions) doctor.Answer { return q.Scheduler },
		} {
			count := map[string]int{}
			var order []string
			for _, r := range rs {
				a := answerText(pick(r.Report.Questions))
				if count[a] == 0 {
					order = append(order, a)
				}
				count[a]++
			}
			slices.Sort(order)
			var parts []string
			for _, a := range order {
				parts = append(parts, fmt.Sprintf("%s %d", a, count[a]))
			}
			b.WriteString(" " + strings.Join(parts, ", ") + " |")
		}
		b.WriteString("\n")
	}
	var misses []string
	for _, r := range results {
		if len(r.Misses) > 0 {
			misses = append(misses, fmt.Sprintf("| %s | %s | %s | %s |", r.Scenario.Name, r.Clothes, r.Source, strings.Join(r.Misses, "; ")))
		}
	}
	b.WriteString("\nReports that fell short of their expectations:\n\n")
	if len(misses) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString("| scenario | clothes | source | how |\n|---|---|---|---|\n" + strings.Join(misses, "\n") + "\n")
	}
	return b.String()
}

// Limits lists where an expectation is narrower than the class's, with
// the reason: what a clothes cannot show.
func Limits() string {
	var b strings.Builder
	b.WriteString("| where | clothes | expected instead | why |\n|---|---|---|---|\n")
	row := func(where, clothes string, o Override) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", where, clothes, describe(o.Expect), o.Why)
	}
	for _, cl := range Classes() {
		for _, c := range Clothes {
			if o, ok := cl.In[c]; ok {
				row("class "+cl.Name, c, o)
			}
		}
	}
	for _, sc := range Scenarios() {
		for _, c := range Clothes {
			if o, ok := sc.In[c]; ok {
				row(sc.Name, c, o)
			}
		}
	}
	b.WriteString("| every class that answers the scheduler \"no\" | vllm | no or can't tell | vLLM's series alone never show the GPU's share of a step |\n")
	return b.String()
}

func describe(e Expect) string {
	var parts []string
	if len(e.Must) > 0 {
		parts = append(parts, "names "+strings.Join(e.Must, ", "))
	}
	for _, q := range []doctor.Question{doctor.QCompute, doctor.QKV, doctor.QScheduler} {
		if a, ok := e.Answers[q]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", q, strings.ReplaceAll(a, "|", " or ")))
		}
	}
	if len(e.MustNot) > 0 {
		parts = append(parts, "not "+strings.Join(e.MustNot, ", "))
	}
	return strings.Join(parts, "; ")
}

// ScenarioTable lists the scenarios: name, class, the construction.
func ScenarioTable() string {
	var b strings.Builder
	b.WriteString("| scenario | class | construction |\n|---|---|---|\n")
	for _, sc := range Scenarios() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", sc.Name, sc.Class, sc.Why)
	}
	return b.String()
}

// Golden is a scenario's reports in every clothes, as text: what -update
// records and a change to a rule or threshold shows in review.
func Golden(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "=== %s, read as %s (%s)\n", r.Scenario.Name, r.Clothes, r.Source)
		if len(r.Misses) > 0 {
			fmt.Fprintf(&b, "misses: %s\n", strings.Join(r.Misses, "; "))
		}
		var t strings.Builder
		_ = r.Report.WriteText(&t)
		b.WriteString(t.String())
		b.WriteString("\n")
	}
	return b.String()
}
