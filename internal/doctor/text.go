package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "glassbox doctor: %s target %s via %s %s\n", r.Engine, r.Selector, r.Source, r.Target)
	fmt.Fprintf(&b, "window: %s → %s (%s), %d readings, %d missed\n",
		r.Start.Format("15:04:05"), r.End.Format("15:04:05"), r.End.Sub(r.Start).Round(1e8), r.Readings, r.Missed)
	if q := r.Questions; q != nil {
		b.WriteString("\n")
		q.writeText(&b)
	}
	if len(r.Findings) == 0 && r.Fleet == nil {
		b.WriteString("\nno findings: nothing in the window points at a bottleneck\n")
	}
	for i, f := range r.Findings {
		answers := ""
		if len(f.Answers) > 0 {
			var qs []string
			for _, a := range f.Answers {
				qs = append(qs, string(a))
			}
			answers = " (answers: " + strings.Join(qs, ", ") + ")"
		}
		fmt.Fprintf(&b, "\n%d. [%s] %s — %s%s\n", i+1, strings.ToUpper(f.Severity.String()), f.Name, f.Title, answers)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, "     %-58s %s\n", e.What, e.Text())
			if e.PromQL != "" {
				fmt.Fprintf(&b, "       promql: %s\n", e.PromQL)
			}
		}
		fmt.Fprintf(&b, "   why: %s\n", f.Inference)
		for _, c := range f.Changes {
			switch {
			case c.Flag != "" && c.Value != "":
				fmt.Fprintf(&b, "   fix: %s %s  (%s)\n", c.Flag, c.Value, c.Why)
			case c.Flag != "":
				fmt.Fprintf(&b, "   fix: %s  (%s)\n", c.Flag, c.Why)
			default:
				fmt.Fprintf(&b, "   fix: %s\n", c.Why)
			}
		}
	}
	if v := r.Verification; v != nil {
		v.writeText(&b)
	}
	if r.Fleet != nil {
		r.Fleet.writeText(&b)
	}
	fmt.Fprintf(&b, "\nworst: %s (exit status %d)\n", r.Worst(), r.ExitCode())
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report for machines.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		*Report
		Worst    Severity `json:"worst"`
		ExitCode int      `json:"exit_code"`
	}{r, r.Worst(), r.ExitCode()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
