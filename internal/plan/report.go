package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes every configuration's row (the Pareto front starred),
// the best one and its command lines.
func (res *Result) WriteTable(w io.Writer, cfg *Config) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"", "hardware", "tp", "max-num-seqs"}
	fleet := cfg.fleetMode()
	if fleet {
		head = append(head, "fleet", "router")
	}
	head = append(head, "max req/s", "out tok/s")
	for _, s := range cfg.SLOs {
		head = append(head, fmt.Sprintf("%s p%g ms", s.Metric, s.Percentile))
	}
	head = append(head, "replicas", "GPUs", "$/h", "$/M out tok", "what limits it above")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i := range res.Rows {
		r := &res.Rows[i]
		mark := ""
		if i == res.Best {
			mark = "→"
		}
		if r.Pareto {
			mark += "*"
		}
		cols := []string{mark, r.Hardware, fmt.Sprint(r.TP), fmt.Sprint(r.MaxNumSeqs)}
		if fleet {
			cols = append(cols, fmt.Sprint(r.Fleet), r.Router)
		}
		if r.Err != "" {
			fmt.Fprintln(tw, strings.Join(append(cols, "does not run: "+r.Err), "\t"))
			continue
		}
		cols = append(cols, fmt.Sprintf("%.3g", r.MaxRate), fmt.Sprintf("%.0f", r.OutputTokensPerS))
		for k := range cfg.SLOs {
			v := "–"
			if k < len(r.AtMax) {
				v = fmt.Sprintf("%.1f", r.AtMax[k])
			}
			cols = append(cols, v)
		}
		dollars, perM := "–", "–"
		if r.DollarsPerHour > 0 {
			dollars, perM = fmt.Sprintf("%.2f", r.DollarsPerHour), fmt.Sprintf("%.3f", r.DollarsPerMTok)
		}
		reps, gpus := "–", "–"
		if r.Replicas > 0 {
			reps, gpus = fmt.Sprint(r.Replicas), fmt.Sprint(r.GPUs)
			if r.Fitted {
				reps += " (simulated)"
			}
			if r.Short {
				reps += " (short of the target)"
			}
		}
		fmt.Fprintln(tw, strings.Join(append(cols, reps, gpus, dollars, perM, r.Limit), "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "\n* on the Pareto front of cost against capacity (of a replica, or of the fleet searched); → the best:", res.rule(cfg))
	if res.Best < 0 {
		fmt.Fprintln(w, "No configuration met the SLOs at any rate the search tried.")
		return
	}
	b := &res.Rows[res.Best]
	per := "per replica"
	if b.Fleet > 1 {
		per = fmt.Sprintf("for %d replicas behind %s", b.Fleet, b.Router)
	}
	fmt.Fprintf(w, "\nBest: %s × %d, max-num-seqs %d: %.3g requests/s %s", b.Hardware, b.TP, b.MaxNumSeqs, b.MaxRate, per)
	switch {
	case b.Fitted:
		fmt.Fprintf(w, ", %d replicas behind %s (%d GPUs) meet the SLOs at %.3g requests/s", b.Replicas, b.Router, b.GPUs, cfg.TargetRate)
	case cfg.TargetRate > 0 && b.Fleet == 1:
		fmt.Fprintf(w, ", %d replicas (%d GPUs) for %.3g requests/s", b.Replicas, b.GPUs, cfg.TargetRate)
	}
	if b.DollarsPerHour > 0 {
		fmt.Fprintf(w, ", $%.2f/hour, $%.3f per million output tokens", b.DollarsPerHour, b.DollarsPerMTok)
	}
	fmt.Fprintf(w, "\n  %s\n  %s\n", strings.Join(b.ServeArgs, " "), strings.Join(b.VLLMArgs, " "))
}

func (res *Result) rule(cfg *Config) string {
	switch {
	case cfg.TargetRate > 0 && len(cfg.Prices) > 0:
		return fmt.Sprintf("the cheapest fleet serving %.3g requests/s", cfg.TargetRate)
	case len(cfg.Prices) > 0:
		return "the cheapest million output tokens"
	}
	return "the most requests per second per GPU (no --price given)"
}
