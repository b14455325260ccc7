package doctor

import (
	"fmt"
	"sort"
	"strings"
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

// Member is one instance of a fleet and its window.
type Member struct {
	Instance, ModelName string
	Window              *Window
}

// Fleet diagnoses every member's window (once each) and ranks them worst
// first (then by mean requests waiting); the report's own findings are
// what only the fleet shows. target and selector say what was read (the
// Prometheus and the selector that matched the members).
func (d Diagnoser) Fleet(target, selector string, ms []Member) *Report {
	fl := &Fleet{}
	for _, m := range ms {
		rep := d.Diagnose(m.Window, nil)
		s := rep.signals
		fl.Instances = append(fl.Instances, Instance{Instance: m.Instance, ModelName: m.ModelName, Running: s.v(SigRunning), Waiting: s.v(SigWaiting), KVUsage: s.v(SigKV), Report: rep})
	}
	sort.SliceStable(fl.Instances, func(i, j int) bool {
		a, b := fl.Instances[i], fl.Instances[j]
		if a.Report.Worst() != b.Report.Worst() {
			return a.Report.Worst() > b.Report.Worst()
		}
		return a.Waiting > b.Waiting
	})
	top := &Report{Source: "prometheus", Target: target, Selector: selector, Findings: imbalance(fl.Instances, d.th), Fleet: fl}
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

// imbalance finds, per model_name, a replica whose mean queue is more
// than ImbalanceRatio times the mean of the model's replicas (itself
// included) and more than ImbalanceMinWaiting requests: a router that does
// not balance by load. It is GlassboxLoadImbalance's definition over the
// window (internal/dashboards writes the alert from the same thresholds).
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
		mean := sum / float64(len(group))
		if !Imbalanced(hot.Waiting, mean, th) {
			continue
		}
		others := (sum - hot.Waiting) / float64(len(group)-1)
		out = append(out, Finding{Name: "load-imbalance", Severity: Warning, Sources: []string{string(srcVLLM)}, Confidence: "high",
			Title: fmt.Sprintf("load imbalance: %s queues more than %g× its fleet's mean while %s of the same model queues least", hot.Instance, th.ImbalanceRatio, cold.Instance),
			Evidence: []Evidence{ev("mean requests waiting on "+hot.Instance, hot.Waiting, "", ""), ev("mean requests waiting over the replicas of "+m, mean, "", ""),
				ev("mean requests waiting on the other replicas", others, "", ""),
				ev("mean KV-cache usage on "+hot.Instance, hot.KVUsage, "ratio", ""), ev("mean KV-cache usage on "+cold.Instance, cold.KVUsage, "ratio", ""),
				ev("replicas of "+m, float64(len(group)), "", "")},
			Inference: fmt.Sprintf("Replicas of %s are not equally loaded: %s had %.1f requests waiting on average, over %g× the fleet's mean of %.1f, the others %.1f, and %s %.1f. The fleet has capacity the router is not using: it sends work by something other than load (round robin, session affinity, a stale view).",
				m, hot.Instance, hot.Waiting, th.ImbalanceRatio, mean, others, cold.Instance, cold.Waiting),
			Changes: []Change{{Why: "route by load: the endpoint picker's queue and KV-cache scorers read vllm:num_requests_waiting and vllm:kv_cache_usage_perc"},
				{Why: "or, if affinity is intended (prefix-aware routing), give the hot prefixes more replicas"}}})
	}
	return out
}

// Imbalanced says whether a replica's mean queue is an imbalance against
// its fleet's mean queue (the same model's replicas, itself included):
// the load-imbalance finding's test, and GlassboxLoadImbalance's.
func Imbalanced(waiting, fleetMean float64, th Thresholds) bool {
	return waiting > th.ImbalanceRatio*fleetMean && waiting > th.ImbalanceMinWaiting
}

// Find is the instance of that name, or nil.
func (f *Fleet) Find(instance string) *Instance {
	for i := range f.Instances {
		if f.Instances[i].Instance == instance {
			return &f.Instances[i]
		}
	}
	return nil
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
