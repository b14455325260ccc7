package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// Fleet is the doctor's answer for a selector matching many instances:
// one report per instance, worst first. What only the fleet shows (load
// imbalance between replicas of one model) is the Report's own Findings.
type Fleet struct {
	Instances []Instance `json:"instances"`
}

// Instance is one replica's report and the numbers the summary ranks by.
type Instance struct {
	Instance  string  `json:"instance"`
	ModelName string  `json:"model_name"`
	Running   float64 `json:"mean_running"`
	Waiting   float64 `json:"mean_waiting"`
	KVUsage   float64 `json:"mean_kv_usage"`
	Report    *Report `json:"report"`
}

// instances lists the instances the selector matches, from the running
// gauge over the window, each with the model names it served (one, unless
// it was restarted with another model within the window).
func (p *promSource) instances(ctx context.Context) ([][2]string, error) {
	m, err := p.queryRange(ctx, "count by (instance, model_name) ("+sel(metricspec.NumRequestsRunning, p.selector)+")", p.end.Add(-p.since))
	if err != nil {
		return nil, err
	}
	models := map[string][]string{}
	for _, s := range m {
		if in := s.Metric["instance"]; in != "" && !slices.Contains(models[in], s.Metric["model_name"]) {
			models[in] = append(models[in], s.Metric["model_name"])
		}
	}
	var out [][2]string
	for _, in := range slices.Sorted(maps.Keys(models)) {
		slices.Sort(models[in])
		out = append(out, [2]string{in, strings.Join(models[in], ",")})
	}
	return out, nil
}

// Member is one instance of a fleet and its window.
type Member struct {
	Instance, ModelName string
	Window              *Window
}

// CollectFleet reads, through Prometheus (cfg.PrometheusURL), the window
// cfg describes of every instance its selector matches, each instance's
// series alone: what the doctor reads of a fleet, and the live page of a
// past incident.
func CollectFleet(ctx context.Context, cfg Config) ([]Member, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.PrometheusURL == "" {
		return nil, errors.New("collect fleet: give a Prometheus URL")
	}
	matchers, err := ParseSelector(c.Selector)
	if err != nil {
		return nil, err
	}
	src := newPromSource(c, matchers)
	insts, err := src.instances(ctx)
	if err != nil {
		return nil, err
	}
	if len(insts) == 0 {
		return nil, fmt.Errorf("collect fleet: prometheus has no %s series matching {%s} between %s and %s", metricspec.NumRequestsRunning, matchers,
			src.end.Add(-src.since).UTC().Format(time.RFC3339), src.end.UTC().Format(time.RFC3339))
	}
	c.End = src.end // every instance over the same window
	return collectMembers(ctx, c, matchers, insts)
}

func collectMembers(ctx context.Context, cfg Config, matchers string, insts [][2]string) ([]Member, error) {
	var ms []Member
	for _, in := range insts {
		one := cfg
		one.Selector = "{" + strings.Join(nonEmpty(matchers, fmt.Sprintf("instance=%q", in[0])), ", ") + "}"
		w, err := Collect(ctx, one)
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", in[0], err)
		}
		ms = append(ms, Member{Instance: in[0], ModelName: in[1], Window: w})
	}
	return ms, nil
}

// runFleet diagnoses every instance and the fleet.
func runFleet(ctx context.Context, cfg Config, matchers string, insts [][2]string) (*Report, error) {
	ms, err := collectMembers(ctx, cfg, matchers, insts)
	if err != nil {
		return nil, err
	}
	return DiagnoseFleet(cfg.PrometheusURL, "{"+matchers+"}", ms), nil
}

// DiagnoseFleet diagnoses every member's window and ranks them worst
// first (then by mean requests waiting); the report's own findings are
// what only the fleet shows.
func DiagnoseFleet(target, selector string, ms []Member) *Report {
	fl := &Fleet{}
	for _, m := range ms {
		rep := Diagnose(m.Window, nil)
		s := evaluate(m.Window, DefaultThresholds())
		fl.Instances = append(fl.Instances, Instance{Instance: m.Instance, ModelName: m.ModelName, Running: s.v(sigRunning), Waiting: s.v(sigWaiting), KVUsage: s.v(sigKV), Report: rep})
	}
	sort.SliceStable(fl.Instances, func(i, j int) bool {
		a, b := fl.Instances[i], fl.Instances[j]
		if a.Report.Worst() != b.Report.Worst() {
			return a.Report.Worst() > b.Report.Worst()
		}
		return a.Waiting > b.Waiting
	})
	top := &Report{Source: "prometheus", Target: target, Selector: selector, Findings: imbalance(fl.Instances, DefaultThresholds()), Fleet: fl}
	if len(fl.Instances) > 0 {
		first := fl.Instances[0].Report
		top.Source, top.Engine, top.Start, top.End = first.Source, first.Engine, first.Start, first.End
	}
	for _, in := range fl.Instances {
		top.Readings += in.Report.Readings
		top.Missed += in.Report.Missed
	}
	return top
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			out = append(out, x)
		}
	}
	return out
}

// imbalance finds, per model_name, a replica that queues while another of
// the same model sits idle: a router that does not balance by load.
func imbalance(insts []Instance, th Thresholds) []Finding {
	by := map[string][]Instance{}
	var models []string
	for _, in := range insts {
		if _, ok := by[in.ModelName]; !ok {
			models = append(models, in.ModelName)
		}
		by[in.ModelName] = append(by[in.ModelName], in)
	}
	sort.Strings(models)
	var out []Finding
	for _, m := range models {
		group := by[m]
		if len(group) < 2 {
			continue
		}
		hot, cold := group[0], group[0]
		sum := 0.0
		for _, in := range group {
			sum += in.Waiting
			if in.Waiting > hot.Waiting {
				hot = in
			}
			if in.Waiting < cold.Waiting || in.Waiting == cold.Waiting && in.KVUsage < cold.KVUsage {
				cold = in
			}
		}
		others := (sum - hot.Waiting) / float64(len(group)-1)
		if !(hot.Waiting >= 1 && hot.Waiting > th.ImbalanceRatio*others && cold.Waiting < 0.5) {
			continue
		}
		out = append(out, Finding{Name: "load-imbalance", Severity: Warning, Sources: []string{string(srcVLLM)}, Confidence: "high",
			Title: fmt.Sprintf("load imbalance: %s queues while %s of the same model has room", hot.Instance, cold.Instance),
			Evidence: []Evidence{ev("mean requests waiting on "+hot.Instance, hot.Waiting, "", ""), ev("mean requests waiting on the other replicas", others, "", ""),
				ev("mean KV-cache usage on "+hot.Instance, hot.KVUsage, "ratio", ""), ev("mean KV-cache usage on "+cold.Instance, cold.KVUsage, "ratio", ""),
				ev("replicas of "+m, float64(len(group)), "", "")},
			Inference: fmt.Sprintf("Replicas of %s are not equally loaded: %s had %.1f requests waiting on average, the others %.1f, and %s none. The fleet has capacity the router is not using: it sends work by something other than load (round robin, session affinity, a stale view).",
				m, hot.Instance, hot.Waiting, others, cold.Instance),
			Changes: []Change{{Why: "route by load: the endpoint picker's queue and KV-cache scorers read vllm:num_requests_waiting and vllm:kv_cache_usage_perc"},
				{Why: "or, if affinity is intended (prefix-aware routing), give the hot prefixes more replicas"}}})
	}
	return out
}

// Worst over the fleet.
func (f *Fleet) worst() Severity {
	w := Info
	for _, in := range f.Instances {
		w = max(w, in.Report.Worst())
	}
	return w
}

func (f *Fleet) writeText(b *strings.Builder) {
	fmt.Fprintf(b, "\nfleet: %d instances, worst first\n", len(f.Instances))
	fmt.Fprintf(b, "  %-24s %-20s %-9s %8s %8s %6s  %s\n", "instance", "model_name", "worst", "running", "waiting", "KV", "findings")
	for _, in := range f.Instances {
		fmt.Fprintf(b, "  %-24s %-20s %-9s %8.1f %8.1f %6.2f  %s\n", in.Instance, in.ModelName, in.Report.Worst(), in.Running, in.Waiting,
			zeroNaN(in.KVUsage), strings.Join(in.Report.Names(), ", "))
	}
	for _, in := range f.Instances {
		var sub strings.Builder
		_ = in.Report.WriteText(&sub)
		fmt.Fprintf(b, "\n--- %s ---\n%s", in.Instance, sub.String())
	}
}
