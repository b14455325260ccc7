// Package corpus is the doctor's incidents: scenarios whose bottleneck is
// known by construction (the serve flags and load of each are a glassbox
// simulate command line), the expectations a report of each must meet in
// each of the three clothes (glassbox's series, vLLM's with DCGM, vLLM's
// alone), the windows recorded from them in testdata/, and the confusion
// table that judges a change to a rule or a threshold.
//
// It generates nothing itself (cmd/glassbox's tests run the scenarios
// through simulate and record them) and, like the doctor, never reaches the
// engine.
package corpus

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// Scenario is one incident.
type Scenario struct {
	Name  string // class/hardware/model/shape
	Class string
	Why   string   // the construction: why the class holds
	Serve []string // glassbox serve's flags
	Load  []string // bench's load flags, less --duration
	// Skip is the warm-up before the window; Window its length; Interval
	// the time between readings (and --metrics-interval).
	Skip, Window, Interval time.Duration
	// Fast scenarios are regenerated and read through a real Prometheus by
	// the tests that run on every change; the rest in the full run.
	Fast bool
	// In overrides the class's expectation in some clothes for this
	// scenario alone, with the reason.
	In map[string]Override
}

// Duration is how long the load is sent: through the whole window.
func (s Scenario) Duration() time.Duration { return s.Skip + s.Window }

// Args are the simulate command line's arguments, less --metrics-out.
// Unless the load says otherwise, the dataset holds a prompt per request
// (up to maxPrompts), so that cycled prompts do not turn into prefix-cache
// hits: a reused prompt comes back after thousands of others, long after
// its blocks were evicted.
func (s Scenario) Args() []string {
	out := append(append(slices.Clone(s.Serve), s.Load...), "--duration", s.Duration().String(), "--seed", "1")
	if !slices.Contains(s.Load, "--num-prompts") {
		n := int(math.Ceil(peakRate(s.Load)*s.Duration().Seconds())) + 1
		out = append(out, "--num-prompts", strconv.Itoa(min(n, maxPrompts)))
	}
	return out
}

// maxPrompts bounds a scenario's dataset (it is held in memory).
const maxPrompts = 4000

// peakRate is the load's highest request rate: --request-rate, or a
// ramp's end.
func peakRate(load []string) float64 {
	rate := 1.0
	for i := 0; i+1 < len(load); i++ {
		if load[i] == "--request-rate" || load[i] == "--ramp-up-end-rps" {
			if r, err := strconv.ParseFloat(load[i+1], 64); err == nil {
				rate = r
			}
		}
	}
	return rate
}

// Command is the command line that reproduces the incident, its metrics
// written as OpenMetrics for promtool.
func (s Scenario) Command() string {
	args := s.Args()
	for i, a := range args {
		if strings.ContainsAny(a, `{}"' `) { // --speculative-config's JSON: one word to a shell
			args[i] = "'" + a + "'"
		}
	}
	return "glassbox simulate " + strings.Join(args, " ") + " --metrics-interval " + s.Interval.String() + " --metrics-out incident.om"
}

// File is the scenario's name as a file name.
func (s Scenario) File() string { return strings.ReplaceAll(s.Name, "/", "_") }

// The clothes a recorded window is read in.
const (
	Glassbox  = "glassbox"  // glassbox's own series (no DCGM)
	VLLMDCGM  = "vllm+dcgm" // vLLM's series and dcgm-exporter's
	VLLMAlone = "vllm"      // vLLM's series alone
)

// Clothes are the three, in report order.
var Clothes = []string{Glassbox, VLLMDCGM, VLLMAlone}

// Expect is what a report must show.
type Expect struct {
	Must    []string // findings it names
	MustNot []string // findings it must not name
	// Answers are the required answers by question: "yes", "no",
	// "yes(kind)", or alternatives joined by "|"; absent is any.
	Answers map[doctor.Question]string
}

// Class is a bottleneck and the expectations of its reports.
type Class struct {
	Name    string
	Finding string // the finding that names it
	Expect  Expect
	// In overrides Expect in some clothes, where those series cannot
	// show what the class is (with the reason, for the docs).
	In map[string]Override
}

// Override is a class's expectation in one clothes.
type Override struct {
	Expect Expect
	Why    string
}

// capacity are the findings that say what holds the queue: one class
// names one of them.
var capacity = []string{"kv-capacity-bound", "compute-bound", "compute-and-kv-bound", "concurrency-cap", "token-budget", "under-loaded"}

func others(name string, from []string) []string {
	return slices.DeleteFunc(slices.Clone(from), func(s string) bool { return s == name })
}

// Classes are the bottleneck classes of the corpus.
func Classes() []Class {
	q := func(c, kv, s string) map[doctor.Question]string {
		m := map[doctor.Question]string{}
		for k, v := range map[doctor.Question]string{doctor.QCompute: c, doctor.QKV: kv, doctor.QScheduler: s} {
			if v != "" {
				m[k] = v
			}
		}
		return m
	}
	return []Class{
		{Name: "healthy", Finding: "under-loaded",
			Expect: Expect{Must: []string{"under-loaded"}, MustNot: append(others("under-loaded", capacity), "host-bound", "preemption-storm", "queueing-dominates"),
				Answers: q("no", "no", "yes(no-work)")}},
		{Name: "kv-capacity", Finding: "kv-capacity-bound",
			Expect: Expect{Must: []string{"kv-capacity-bound"}, MustNot: others("kv-capacity-bound", capacity), Answers: q("no", "yes(capacity)", "")}},
		{Name: "kv-admission", Finding: "kv-capacity-bound",
			Expect: Expect{Must: []string{"kv-capacity-bound"}, MustNot: append(others("kv-capacity-bound", capacity), "preemption-storm"), Answers: q("no", "yes(admission)", "")}},
		{Name: "compute", Finding: "compute-bound",
			Expect: Expect{Must: []string{"compute-bound"}, MustNot: others("compute-bound", capacity), Answers: q("yes", "no", "no")}},
		{Name: "compute-and-kv", Finding: "compute-and-kv-bound",
			Expect: Expect{Must: []string{"compute-and-kv-bound"}, MustNot: others("compute-and-kv-bound", capacity), Answers: q("yes", "yes", "")},
			In: map[string]Override{VLLMAlone: {Why: "vLLM's series alone estimate utilisation from the engine loop, which counts host time: unless the steps sit at their budget, the doctor names the KV limit and says it cannot tell whether compute binds too",
				Expect: Expect{MustNot: []string{"compute-bound", "concurrency-cap", "under-loaded"}, Answers: q("yes|can't tell", "yes", "")}}}},
		{Name: "concurrency-cap", Finding: "concurrency-cap",
			Expect: Expect{Must: []string{"concurrency-cap"}, MustNot: others("concurrency-cap", capacity), Answers: q("no", "no", "yes(cap)")}},
		{Name: "host", Finding: "host-bound",
			Expect: Expect{Must: []string{"host-bound"}, MustNot: []string{"under-loaded", "compute-bound", "compute-and-kv-bound"}, Answers: q("no", "", "yes(host)")},
			In: map[string]Override{VLLMAlone: {Why: "vLLM's series alone time the engine's steps but not the GPU's share of them: the doctor cannot tell (it says so, and names what would), or sees only the sequence cap the host-bound steps run against",
				Expect: Expect{MustNot: []string{"under-loaded", "compute-bound", "compute-and-kv-bound"}, Answers: q("", "", "can't tell|yes(cap)")}}}},
		{Name: "near-capacity", Finding: "",
			Expect: Expect{MustNot: append(others("under-loaded", capacity), "host-bound", "preemption-storm", "queueing-dominates"), Answers: q("no", "no", "")}},
		{Name: "prefill", Finding: "prefill-bound",
			Expect: Expect{Must: []string{"prefill-bound"}, MustNot: []string{"decode-bound"}}},
		{Name: "decode", Finding: "decode-bound",
			Expect: Expect{Must: []string{"decode-bound"}, MustNot: []string{"prefill-bound"}}},
		{Name: "client-timeouts", Finding: "client-timeouts",
			Expect: Expect{Must: []string{"client-timeouts"}}},
		{Name: "prefix-off", Finding: "prefix-caching",
			Expect: Expect{Must: []string{"prefix-caching"}}},
		{Name: "speculation-pays", Finding: "",
			Expect: Expect{MustNot: []string{"speculation-costly"}}},
		{Name: "speculation-costly", Finding: "speculation-costly",
			Expect: Expect{Must: []string{"speculation-costly"}}},
		agentClass(),
		budgetClass(),
	}
}

// ClassByName finds a class.
func ClassByName(name string) (Class, bool) {
	for _, c := range Classes() {
		if c.Name == name {
			return c, true
		}
	}
	return Class{}, false
}

// Expect is what the scenario's report must show in the clothes.
func (s Scenario) Expect(clothes string) Expect {
	if o, ok := s.In[clothes]; ok {
		return o.Expect
	}
	c, _ := ClassByName(s.Class)
	return c.ExpectIn(clothes)
}

// ExpectIn is the class's expectation in the clothes. vLLM's series alone
// never show the GPU's share of a step, so where a class wants the
// scheduler answered "no", they may say they cannot tell.
func (c Class) ExpectIn(clothes string) Expect {
	if o, ok := c.In[clothes]; ok {
		return o.Expect
	}
	e := c.Expect
	if clothes == VLLMAlone && e.Answers[doctor.QScheduler] == "no" {
		e.Answers = maps.Clone(e.Answers)
		e.Answers[doctor.QScheduler] = "no|can't tell"
	}
	return e
}

// Check lists how the report falls short of e, one sentence each.
func Check(rep *doctor.Report, e Expect) []string {
	var out []string
	names := rep.Names()
	for _, m := range e.Must {
		if !slices.Contains(names, m) {
			out = append(out, fmt.Sprintf("does not name %s", m))
		}
	}
	for _, m := range e.MustNot {
		if slices.Contains(names, m) {
			out = append(out, fmt.Sprintf("names %s", m))
		}
	}
	if rep.Questions == nil {
		return append(out, "has no three answers")
	}
	got := map[doctor.Question]doctor.Answer{doctor.QCompute: rep.Questions.Compute, doctor.QKV: rep.Questions.KV, doctor.QScheduler: rep.Questions.Scheduler}
	for _, q := range []doctor.Question{doctor.QCompute, doctor.QKV, doctor.QScheduler} {
		want, ok := e.Answers[q]
		if !ok {
			continue
		}
		if a := got[q]; !answerMatches(a, want) {
			out = append(out, fmt.Sprintf("answers %s %q, want %s", q, answerText(a), want))
		}
	}
	out = append(out, danglingFixes(rep)...)
	return out
}

func answerText(a doctor.Answer) string {
	if a.Kind != "" {
		return a.Answer + "(" + a.Kind + ")"
	}
	return a.Answer
}

func answerMatches(a doctor.Answer, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if w == a.Answer || w == answerText(a) {
			return true
		}
	}
	return false
}

// danglingFixes are remedies that point at a finding the report does not
// contain.
func danglingFixes(rep *doctor.Report) []string {
	var out []string
	names := rep.Names()
	for _, f := range rep.Findings {
		for _, c := range f.Changes {
			for _, other := range doctor.RuleNames() {
				if other != f.Name && strings.Contains(c.Why, other) && !strings.Contains(c.Why, "no capacity finding") && !slices.Contains(names, other) {
					out = append(out, fmt.Sprintf("%s's fix points at %s, which the report does not contain", f.Name, other))
				}
			}
		}
	}
	return out
}
