package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// checklist counts one client check's conditions, failing the test on each
// that does not hold and saying at the end how many did.
type checklist struct {
	t             *testing.T
	name          string
	passed, total int
}

func newChecklist(t *testing.T, name string) *checklist {
	c := &checklist{t: t, name: name}
	t.Cleanup(func() { t.Logf("%s: %d of %d checks pass", name, c.passed, c.total) })
	return c
}

// that records one condition; what (with args) says what failed.
func (c *checklist) that(ok bool, what string, args ...any) {
	c.t.Helper()
	c.total++
	if ok {
		c.passed++
		return
	}
	c.t.Errorf(c.name+": "+what, args...)
}

// apiRefusal is an API error as the openai SDK raised it (null: none).
type apiRefusal struct {
	Status         int
	Param, Message string
}

// refusedNaming reports a 400 naming param.
func (r *apiRefusal) refusedNaming(param string) bool {
	return r != nil && r.Status == 400 && r.Param == param
}

// checkStore: the openai SDK's responses.inputItems.list (walked page by
// page), responses.delete, background responses polled with retrieve and
// one cancelled with responses.cancel; reasoning and verbosity that ask for
// nothing served; malformed tool schemas refused under auto and none.
func checkStore(t *testing.T, node func(string, any, ...string), longTokens string) {
	var r struct {
		InputItems struct {
			Error   string
			Walked  []struct{ ID, Type, Role, Text string }
			Pages   int
			Asc     []string
			AscMore bool `json:"ascHasMore"`
		}
		Deleted struct {
			Error       string
			AfterDelete *apiRefusal
		}
		Background struct {
			Error, Queued, Status, Text string
			Background                  bool
			Seen                        []string
			OutputTokens                int
		}
		Cancel struct {
			Error, Status, Final string
			Background           bool
		}
		CancelSync *apiRefusal
		Reasoning  struct {
			AgentDefaults struct{ Error, Status, Verbosity string }
			Empty         struct{ Error, Status string }
			Effort        *apiRefusal
		}
		Malformed map[string]*apiRefusal
	}
	node("openai-store.mjs", &r, "LONG_TOKENS="+longTokens)
	c := newChecklist(t, "responses store")
	w := r.InputItems.Walked
	texts := make([]string, len(w))
	for i, it := range w {
		texts[i] = it.Text
	}
	c.that(slices.Equal(texts, []string{"third", "second", "first"}) && w[1].Role == "developer", "inputItems.list walked %+v (%s), want the 3 input messages newest first", w, r.InputItems.Error)
	c.that(len(w) == 3 && strings.HasPrefix(w[0].ID, "msg_") && w[0].Type == "message", "input items %+v, want message items with ids", w)
	c.that(r.InputItems.Pages == 2, "inputItems.list in pages of 2: %d pages, want 2", r.InputItems.Pages)
	c.that(len(w) == 3 && slices.Equal(r.InputItems.Asc, []string{w[2].ID, w[1].ID}) && r.InputItems.AscMore, "order asc: %v (has_more %v)", r.InputItems.Asc, r.InputItems.AscMore)
	d := r.Deleted
	c.that(d.Error == "" && d.AfterDelete != nil && d.AfterDelete.Status == 404, "responses.delete, then retrieve: %+v, want a 404", d)
	b := r.Background
	c.that(b.Queued == "queued" && b.Background, "background create answered %q (background %v; %s), want queued", b.Queued, b.Background, b.Error)
	c.that((b.Status == "completed" || b.Status == "incomplete") && b.Text != "" && b.OutputTokens > 0, "background response polled to %+v", b)
	c.that(len(b.Seen) >= 2 && b.Seen[0] == "queued" && !slices.Contains(b.Seen[1:], "queued"), "background statuses %v, want queued first, then on", b.Seen)
	c.that(r.Cancel.Status == "cancelled" && r.Cancel.Final == "cancelled" && r.Cancel.Background, "responses.cancel: %+v", r.Cancel)
	c.that(r.CancelSync.refusedNaming("response_id") && strings.Contains(r.CancelSync.Message, "synchronous"), "cancelling a synchronous response: %+v", r.CancelSync)
	ok := func(status string) bool { return status == "completed" || status == "incomplete" }
	a := r.Reasoning.AgentDefaults
	c.that(ok(a.Status) && a.Verbosity == "low", "reasoning effort none, verbosity low: %+v", a)
	c.that(ok(r.Reasoning.Empty.Status), "reasoning {}: %+v", r.Reasoning.Empty)
	c.that(r.Reasoning.Effort.refusedNaming("reasoning.effort"), "reasoning effort high: %+v, want a 400 naming reasoning.effort", r.Reasoning.Effort)
	for _, k := range []string{"responsesAuto", "chatAuto", "chatNone"} {
		e := r.Malformed[k]
		c.that(e.refusedNaming("tools") && strings.Contains(e.Message, "objekt"), "a tool schema of type objekt (%s): %+v, want a 400 naming tools", k, e)
	}
}

// agentRequest is what the Agents SDK sent, as agents.mjs records it.
type agentRequest struct {
	Model      string
	Reasoning  *struct{ Effort string }
	Verbosity  string
	Format     string
	ToolChoice string
	InputTypes []string
}

// agentRun is one run of an Agent.
type agentRun struct {
	Output   json.RawMessage
	Error    string
	Executed int
	Ended    bool
	Sent     []agentRequest
}

// checkAgents: the OpenAI Agents SDK's Agents with no model send the SDK's
// default model and its default settings (reasoning effort none,
// verbosity low) and are served: structured output, a tool the SDK
// executes, and where the model ends its prose (prose), an answer in
// prose, the tool loop sending the call's output back, and an Agent that
// names the model.
func checkAgents(t *testing.T, node func(string, any, ...string), prose bool) {
	var r struct {
		DefaultModel          string
		Structured, FirstTool agentRun
		Plain, Loop, Named    *agentRun
	}
	env := "PROSE=0"
	if prose {
		env = "PROSE=1"
	}
	node("agents.mjs", &r, env)
	c := newChecklist(t, "agents")
	defaults := func(name string, run *agentRun) {
		c.that(run.Error == "" && len(run.Sent) > 0, "%s: %s", name, run.Error)
		sent := len(run.Sent) > 0
		for _, s := range run.Sent {
			sent = sent && s.Model == r.DefaultModel && s.Reasoning != nil && s.Reasoning.Effort == "none" && s.Verbosity == "low"
		}
		c.that(sent, "%s sent %+v, want the SDK's default model %s with reasoning effort none and verbosity low", name, run.Sent, r.DefaultModel)
	}
	defaults("an Agent with an outputType", &r.Structured)
	var film struct {
		Title  *string
		Year   *int
		Genres []string
	}
	c.that(json.Unmarshal(r.Structured.Output, &film) == nil && film.Title != nil && utf8.RuneCountInString(*film.Title) <= 30 &&
		film.Year != nil && *film.Year >= 1900 && *film.Year <= 2100 && len(film.Genres) <= 2, "outputType: %s", r.Structured.Output)
	c.that(len(r.Structured.Sent) == 1 && r.Structured.Sent[0].Format == "json_schema", "outputType sent %+v, want text.format json_schema", r.Structured.Sent)
	defaults("an Agent with a tool", &r.FirstTool)
	var out string
	c.that(r.FirstTool.Executed == 1 && json.Unmarshal(r.FirstTool.Output, &out) == nil && strings.HasSuffix(out, ": a happy accident"),
		"the tool: executed %d times, output %s", r.FirstTool.Executed, r.FirstTool.Output)
	if !prose {
		return
	}
	for name, run := range map[string]*agentRun{"an Agent in prose": r.Plain, "the tool loop": r.Loop} {
		if run == nil {
			c.that(false, "%s did not run", name)
			return
		}
		defaults(name, run)
	}
	c.that(json.Unmarshal(r.Plain.Output, &out) == nil && out != "", "an Agent in prose answered %s", r.Plain.Output)
	l := r.Loop
	c.that(l.Executed >= 1 && len(l.Sent) >= 2, "the tool loop executed %d calls in %d requests", l.Executed, len(l.Sent))
	c.that(len(l.Sent) >= 2 && l.Sent[0].ToolChoice == "required" && slices.Contains(l.Sent[1].InputTypes, "function_call") &&
		slices.Contains(l.Sent[1].InputTypes, "function_call_output"), "the tool loop's requests %+v, want the call and its output sent back", l.Sent)
	c.that(r.Named != nil && r.Named.Error == "" && len(r.Named.Sent) == 1 && r.Named.Sent[0].Model == "m" && r.Named.Sent[0].Reasoning == nil,
		"an Agent naming the model: %+v", r.Named)
}

// checkSimJSON: where a schema leaves a choice, the simulated model fills
// it as a model does, seeded: arrays without minItems hold values, objects
// take optional properties, json_object's keys are words and its numbers
// short.
func checkSimJSON(t *testing.T, node func(string, any, ...string)) {
	var r struct {
		Reports []struct {
			Scores []json.Number
			Tags   []string
		}
		Optionals []map[string]any
		Objects   []struct{ Text, Finish string }
	}
	node("openai-json.mjs", &r)
	c := newChecklist(t, "simulated JSON")
	number := regexp.MustCompile(`^-?(0|[1-9][0-9]{0,4})(\.[0-9]{1,2})?$`)
	word := regexp.MustCompile(`^[a-z]+$`)
	scores, tags, optionals, keys := 0, 0, 0, 0
	var notNumbers, notWords, notObjects []string
	for _, rep := range r.Reports {
		if len(rep.Scores) > 0 {
			scores++
		}
		if len(rep.Tags) > 0 {
			tags++
		}
		for _, s := range rep.Scores {
			if !number.MatchString(s.String()) {
				notNumbers = append(notNumbers, s.String())
			}
		}
	}
	for _, o := range r.Optionals {
		if len(o) > 0 {
			optionals++
		}
	}
	for _, o := range r.Objects {
		var m map[string]any
		if o.Finish != "stop" || json.Unmarshal([]byte(o.Text), &m) != nil {
			notObjects = append(notObjects, o.Text)
		}
		keys += len(m)
		for k := range m {
			if !word.MatchString(k) {
				notWords = append(notWords, k)
			}
		}
	}
	n := len(r.Reports)
	c.that(n == 8 && scores >= n*3/4 && tags >= n/2, "arrays without minItems: %d of %d lists of numbers and %d of strings hold values", scores, n, tags)
	c.that(len(notNumbers) == 0, "numbers that are not short decimals: %q", notNumbers)
	c.that(len(r.Optionals) == 8 && optionals >= len(r.Optionals)*3/4, "objects of optional properties: %d of %d have any", optionals, len(r.Optionals))
	c.that(len(r.Objects) == 8 && len(notObjects) == 0, "json_object answers that are not objects ending by themselves: %q", notObjects)
	c.that(len(notWords) == 0, "json_object keys that are not words: %q", notWords)
	c.that(keys > len(r.Objects), "json_object: %d keys in %d objects", keys, len(r.Objects))
}
