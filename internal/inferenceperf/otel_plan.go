package inferenceperf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// OTelTraceReplay is data.otel_trace_replay: agent traces recorded as
// OpenTelemetry spans, replayed call graph and all (inference-perf's
// docs/otel_trace_replay.md).
type OTelTraceReplay struct {
	TraceDirectory            *string           `yaml:"trace_directory"`
	TraceFiles                []string          `yaml:"trace_files"`
	HFDatasetPath             any               `yaml:"hf_dataset_path"`
	UseStaticModel            bool              `yaml:"use_static_model"`
	StaticModelName           string            `yaml:"static_model_name"`
	ModelMapping              map[string]string `yaml:"model_mapping"`
	DefaultMaxTokens          *int              `yaml:"default_max_tokens"`
	OverrideToolCallMaxTokens *bool             `yaml:"override_tool_call_max_tokens"` // default true
	InjectRandomSessionID     bool              `yaml:"inject_random_session_id"`
	DuplicateSessionsTarget   *int              `yaml:"duplicate_sessions_target"`
	MaxWaitMS                 *int              `yaml:"max_wait_ms"`                  // default 15000
	PredecessorWaitTimeoutSec *float64          `yaml:"predecessor_wait_timeout_sec"` // default 3600, 0 none
	IncludeErrors             *bool             `yaml:"include_errors"`               // default true
	SkipInvalidFiles          bool              `yaml:"skip_invalid_files"`
	Filter                    *string           `yaml:"filter"`
	DisableOutputSubstitution bool              `yaml:"disable_output_substitution"`
	AttributeToHeaderMap      map[string]string `yaml:"attribute_to_header_map"`
	AttributeToLabelMap       map[string]string `yaml:"attribute_to_label_map"`
	BadToolCallHandling       string            `yaml:"bad_tool_call_handling"` // none (default) or use_recorded
}

const defaultMaxWaitMS = 15000

// traceFiles are the configuration's trace files, sorted.
func (o *OTelTraceReplay) traceFiles() ([]string, error) {
	if d := o.TraceDirectory; d != nil {
		st, err := os.Stat(*d)
		if err != nil || !st.IsDir() {
			return nil, fmt.Errorf("trace_directory %s is not a directory", *d)
		}
		files, err := filepath.Glob(filepath.Join(*d, "*.json"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("trace_directory %s has no .json files", *d)
		}
		slices.Sort(files)
		return files, nil
	}
	var out []string
	for _, f := range o.TraceFiles {
		if strings.ContainsAny(f, "*?") {
			m, err := filepath.Glob(f)
			if err != nil {
				return nil, fmt.Errorf("trace_files: %q: %w", f, err)
			}
			for _, x := range m {
				if st, err := os.Stat(x); err == nil && !st.IsDir() {
					out = append(out, x)
				}
			}
			continue
		}
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			return nil, fmt.Errorf("trace_files: trace file %s does not exist", f)
		}
		if filepath.Ext(f) != ".json" {
			return nil, fmt.Errorf("trace_files: trace file %s is not a .json file", f)
		}
		out = append(out, f)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("trace_files %v name no trace file", o.TraceFiles)
	}
	return out, nil
}

// tracedSession is one trace file's calls and graph.
type tracedSession struct {
	name, source string
	calls        []otelCall
	graph        *otelGraph
}

// otelReplayPlan makes the plan's requests the calls of the traces'
// sessions: each file one session, in an order shuffled with the run's
// seed (inference-perf shuffles with its base seed; Python's generator is
// not reproduced), named trace<slot>_<session or trace id>, padded to
// duplicate_sessions_target with copies. It returns a sample per session
// (its first call's recorded messages) for warm-ups.
func otelReplayPlan(ctx context.Context, c *Config, p *workload.Plan, tk workload.Tokenizer, rng *rand.Rand) ([]workload.Sample, error) {
	o := c.Data.OTelTraceReplay
	files, err := o.traceFiles()
	if err != nil {
		return nil, fmt.Errorf("otel_trace_replay: %w", err)
	}
	includeErrors := o.IncludeErrors == nil || *o.IncludeErrors
	var traced []tracedSession
	for _, f := range files {
		t, err := readTracedSession(f, includeErrors)
		if err != nil {
			if o.SkipInvalidFiles {
				c.note("data.otel_trace_replay: skipped %v", err)
				continue
			}
			return nil, fmt.Errorf("otel_trace_replay: %w (skip_invalid_files skips such a file)", err)
		}
		if len(t.calls) == 0 {
			c.note("data.otel_trace_replay: %s has no LLM calls (chat spans with gen_ai.input.messages): no session", f)
			continue
		}
		traced = append(traced, t)
	}
	if len(traced) == 0 {
		return nil, errors.New("otel_trace_replay: no trace has an LLM call to replay")
	}
	rng.Shuffle(len(traced), func(i, j int) { traced[i], traced[j] = traced[j], traced[i] })
	g := &workload.GraphPlan{Recorded: o.DisableOutputSubstitution, BadToolCalls: o.BadToolCallHandling == "use_recorded", WaitTimeout: time.Hour}
	if t := o.PredecessorWaitTimeoutSec; t != nil {
		g.WaitTimeout = workload.Seconds(*t)
	}
	ids := make([]string, len(traced))
	for i, t := range traced {
		name := t.name
		if name == "" {
			name = fmt.Sprintf("session_%d", i)
		}
		ids[i] = fmt.Sprintf("trace%d_%s", i, name)
	}
	slots := make([]int, len(traced)) // the traced session each slot replays
	for i := range slots {
		slots[i] = i
	}
	if n := o.DuplicateSessionsTarget; n != nil {
		for k := 1; len(slots) < *n; k++ {
			src := (k - 1) % len(traced)
			slots = append(slots, src)
			ids = append(ids, fmt.Sprintf("%s_dup%d", ids[src], k))
		}
	}
	memo := map[string]workload.Sample{}
	for slot, src := range slots {
		tag := ""
		if o.InjectRandomSessionID || slot >= len(traced) {
			tag = fmt.Sprintf("%016x", rng.Uint64())
		}
		s, err := graphSession(ctx, &traced[src], ids[slot], tag, o, tk, memo)
		if err != nil {
			return nil, fmt.Errorf("otel_trace_replay: %s: %w", traced[src].source, err)
		}
		g.Sessions = append(g.Sessions, s)
	}
	p.Graph = g
	if err := p.SetSeparator(ctx, tk); err != nil {
		return nil, err
	}
	prompts := make([]workload.Sample, len(g.Sessions))
	for i, s := range g.Sessions {
		first := s.Calls[0]
		prompts[i] = workload.Sample{Messages: first.Messages, OutputLen: first.OutputLen}
		for _, m := range first.Messages {
			prompts[i].Prompt += workload.MessageText(m) + " "
		}
		for _, n := range first.Tokens {
			prompts[i].PromptLen += n
		}
	}
	return prompts, nil
}

// readTracedSession reads and graphs one trace file.
func readTracedSession(path string, includeErrors bool) (tracedSession, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tracedSession{}, fmt.Errorf("read trace %s: %w", path, err)
	}
	name, calls, err := parseOTelTrace(data, includeErrors)
	if err != nil {
		return tracedSession{}, fmt.Errorf("read trace %s: %w", path, err)
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	for _, c := range calls {
		if _, err := cleanTools(c.tools); err != nil {
			return tracedSession{}, fmt.Errorf("read trace %s: span %s: %w", path, c.id, err)
		}
	}
	t := tracedSession{name: name, source: path, calls: calls}
	if len(calls) > 0 {
		t.graph = buildOTelGraph(calls)
	}
	return t, nil
}

// graphSession makes a traced session a workload session: its calls'
// messages (tag before the text of each of their own, when set), segments,
// waits (at most max_wait_ms), max_tokens and tools.
func graphSession(ctx context.Context, t *tracedSession, id, tag string, o *OTelTraceReplay, tk workload.Tokenizer, memo map[string]workload.Sample) (workload.GraphSession, error) {
	maxWait := int64(defaultMaxWaitMS)
	if o.MaxWaitMS != nil {
		maxWait = int64(*o.MaxWaitMS)
	}
	s := workload.GraphSession{ID: id, Source: t.source}
	for i := range t.calls {
		rc := &t.calls[i]
		gc := workload.GraphCall{ID: fmt.Sprintf("event_%03d_%s", i, rc.id), After: t.graph.preds[i], Segments: t.graph.segs[i],
			Wait: time.Duration(min(t.graph.waits[i], maxWait)) * time.Millisecond, OutputLen: rc.outputTokens()}
		k := 0
		for _, sg := range gc.Segments {
			for range sg.Count {
				m := rc.msgs[k].wire
				m.ToolCalls = slices.Clone(m.ToolCalls)
				if tag != "" && sg.Kind == workload.Unique {
					m.Content = "[SESS:" + tag + "] " + m.Content
				}
				gc.Messages = append(gc.Messages, m)
				k++
			}
		}
		tools, err := cleanTools(rc.tools)
		if err != nil {
			return s, fmt.Errorf("span %s: %w", rc.id, err)
		}
		if len(tools) > 0 {
			gc.Tools = &workload.ToolUse{Tools: tools}
			if rc.out != nil && len(rc.out.names) > 0 {
				// The recorded answer called a tool: force one, as
				// inference-perf does, with room for the call.
				gc.ToolNames = rc.out.names
				gc.Tools.Choice = "required"
				if len(gc.ToolNames) == 1 && slices.Contains(flatToolNames(rc.tools), gc.ToolNames[0]) {
					gc.Tools.Choice = map[string]any{"type": "function", "function": map[string]any{"name": gc.ToolNames[0]}}
				}
				if o.OverrideToolCallMaxTokens == nil || *o.OverrideToolCallMaxTokens {
					gc.Tools.MaxTokens = max(4*gc.OutputLen, 4096)
				}
			}
		}
		if err := gc.CountMessages(ctx, tk, memo); err != nil {
			return s, err
		}
		s.Calls = append(s.Calls, gc)
	}
	s.SetDepths()
	return s, s.Check()
}

// flatToolNames are the names of the flat-format tool definitions
// ({"type", "name", …}): those inference-perf finds a recorded call's
// function among (a nested definition's name is not looked at).
func flatToolNames(defs []any) []string {
	var out []string
	for _, d := range defs {
		if m, ok := d.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// cleanTools makes recorded tool definitions the request's tools, as
// inference-perf's chat client does: OpenAI's nested form, the flat form
// ({"type", "name", …}) nested, each schema cleaned to what vLLM accepts.
func cleanTools(defs []any) ([]any, error) {
	var out []any
	for i, d := range defs {
		t, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("gen_ai.tool.definitions[%d] is not a tool", i)
		}
		fn, nested := t["function"].(map[string]any)
		typ := t["type"]
		if !nested {
			if typ == nil {
				return nil, fmt.Errorf("gen_ai.tool.definitions[%d] has neither a function nor a type", i)
			}
			fn = t
		} else if typ == nil {
			typ = "function"
		}
		name, ok := fn["name"].(string)
		if !ok {
			return nil, fmt.Errorf("gen_ai.tool.definitions[%d] has no name", i)
		}
		f := map[string]any{"name": name}
		if v := fn["description"]; v != nil {
			f["description"] = v
		}
		if v := fn["parameters"]; v != nil {
			f["parameters"] = cleanSchema(v, false)
		}
		out = append(out, map[string]any{"type": typ, "function": f})
	}
	return out, nil
}

// schemaKeys are the JSON Schema keys inference-perf keeps in a tool's
// parameters: vLLM's and its simulators' validators refuse the others
// (numeric and array bounds among them), which a load test does not need.
var schemaKeys = map[string]bool{"type": true, "description": true, "enum": true, "properties": true, "required": true, "items": true,
	"anyOf": true, "oneOf": true, "allOf": true, "$ref": true, "const": true, "additionalProperties": true}

// cleanSchema is inference-perf's _clean_schema: unknown keys dropped,
// additionalProperties a boolean, a typeless or anyOf/oneOf schema a
// string, an object with properties.
func cleanSchema(v any, properties bool) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cleanSchema(e, false)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		if properties {
			for k, e := range x {
				out[k] = cleanSchema(e, false)
			}
			return out
		}
		for k, e := range x {
			if !schemaKeys[k] {
				continue
			}
			if _, isBool := e.(bool); k == "additionalProperties" && !isBool {
				e = false
			}
			out[k] = cleanSchema(e, k == "properties")
		}
		if _, ok := out["type"]; !ok {
			delete(out, "anyOf")
			delete(out, "oneOf")
			out["type"] = "string"
		} else {
			delete(out, "anyOf")
			delete(out, "oneOf")
		}
		if _, ok := out["properties"]; out["type"] == "object" && !ok {
			out["properties"] = map[string]any{}
		}
		return out
	}
	return v
}

// checkOTelTraceReplay checks data.otel_trace_replay, as inference-perf's
// validators do, and refuses by name what glassbox does not run.
func (c *Config) checkOTelTraceReplay() error {
	const p = "data.otel_trace_replay"
	o := c.Data.OTelTraceReplay
	switch {
	case o == nil:
		return c.at("data.type", "data.type otel_trace_replay needs data.otel_trace_replay")
	case c.Load.Type != "trace_session_replay":
		return c.at("load.type", "data.type otel_trace_replay requires load.type trace_session_replay, as in inference-perf")
	case c.API.Type != "chat":
		return c.at("api.type", "otel_trace_replay replays chat calls: it needs api.type chat")
	case o.HFDatasetPath != nil:
		return c.at(p+".hf_dataset_path", "glassbox reads local trace files: download the dataset and give its directory as trace_directory")
	case (o.TraceDirectory != nil) == (o.TraceFiles != nil):
		return c.at(p, "give one of trace_directory or trace_files")
	case o.Filter != nil:
		return c.at(p+".filter", "is a Python lambda, which glassbox does not evaluate: give the traces to replay as trace_files")
	case o.AttributeToHeaderMap != nil:
		return c.at(p+".attribute_to_header_map", "is not built in glassbox: its requests carry no per-call headers from span attributes")
	case o.UseStaticModel && o.StaticModelName == "":
		return c.at(p+".static_model_name", "is required when use_static_model is true")
	case !o.UseStaticModel && o.StaticModelName != "" && o.ModelMapping == nil:
		return c.at(p+".static_model_name", "needs use_static_model true or a model_mapping, as in inference-perf")
	case o.DefaultMaxTokens != nil && *o.DefaultMaxTokens < 1:
		return c.at(p+".default_max_tokens", "must be positive, got %d", *o.DefaultMaxTokens)
	case o.DuplicateSessionsTarget != nil && (*o.DuplicateSessionsTarget < 1 || *o.DuplicateSessionsTarget > workload.MaxRequests):
		return c.at(p+".duplicate_sessions_target", "want 1 to %d, got %d", workload.MaxRequests, *o.DuplicateSessionsTarget)
	case o.MaxWaitMS != nil && *o.MaxWaitMS < 0:
		return c.at(p+".max_wait_ms", "must not be negative, got %d", *o.MaxWaitMS)
	case o.PredecessorWaitTimeoutSec != nil && !(*o.PredecessorWaitTimeoutSec >= 0 && *o.PredecessorWaitTimeoutSec < 1e9):
		return c.at(p+".predecessor_wait_timeout_sec", "want 0 (no limit) or a number of seconds, got %v", *o.PredecessorWaitTimeoutSec)
	case o.BadToolCallHandling != "" && o.BadToolCallHandling != "none" && o.BadToolCallHandling != "use_recorded":
		return c.at(p+".bad_tool_call_handling", "%q: want none or use_recorded", o.BadToolCallHandling)
	case o.DisableOutputSubstitution && (o.InjectRandomSessionID || o.DuplicateSessionsTarget != nil):
		return c.at(p+".disable_output_substitution", "cannot be combined with inject_random_session_id or duplicate_sessions_target, as in inference-perf: they substitute")
	}
	if o.UseStaticModel || o.ModelMapping != nil || o.DefaultMaxTokens != nil {
		c.note("data.otel_trace_replay: use_static_model, static_model_name, model_mapping and default_max_tokens do not change an OTel replay (as in inference-perf, each call goes to the served model with its recorded max_tokens)")
	}
	if o.AttributeToLabelMap != nil {
		c.note("data.otel_trace_replay.attribute_to_label_map: glassbox's per-request records carry no labels")
	}
	return nil
}

// sessionStages makes trace_session_replay's stages: each the next
// num_sessions of the sessions (all that are left without it), as
// inference-perf's session cursor takes them, refused when the stages
// ask for more than there are; the next stage starts load.interval after
// the last ended.
func sessionStages(p *workload.Plan, c *Config) error {
	total, asked, open := len(p.Graph.Sessions), 0, false
	for _, s := range c.Load.Stages {
		if s.NumSessions == nil {
			open = true
		} else {
			asked += *s.NumSessions
		}
	}
	if !open && asked > total {
		return c.at("load.stages", "the stages ask for %d sessions but the traces have %d: set data.otel_trace_replay.duplicate_sessions_target: %d to replay copies, or ask for fewer", asked, total, asked)
	}
	p.Interval = time.Second
	if c.Load.Interval != nil {
		p.Interval = workload.Seconds(*c.Load.Interval)
	}
	left := total
	for _, s := range c.Load.Stages {
		st := workload.Stage{Sessions: left}
		if s.ConcurrentSessions != nil {
			st.MaxConcurrency = *s.ConcurrentSessions
		}
		if s.NumSessions != nil {
			st.Sessions = min(*s.NumSessions, left)
		}
		if s.SessionRate != nil {
			st.Rate = *s.SessionRate
		}
		if s.Timeout != nil {
			st.Timeout = workload.Seconds(*s.Timeout)
		}
		left -= st.Sessions
		p.Stages = append(p.Stages, st)
	}
	return nil
}
