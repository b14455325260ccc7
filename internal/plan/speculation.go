package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Speculative decoding shortens each request's token time while a verify
// pass costs about one decode step (small batches, bound by reading the
// weights), and stops paying as batches fill and the steps become
// compute-bound: every scored position then costs about a plain decode
// token, the rejected ones for nothing. A draft model adds its own passes
// to every step (and takes KV blocks), so it stops paying sooner. The
// sweep finds that crossover for one replica of Base: each rate run with
// Base's speculation and without.

// SpecRun is one replica at one rate.
type SpecRun struct {
	OutputTokensPerS float64
	TPOTp50          float64 // ms
	Acceptance       float64 // draft tokens accepted over drafted; NaN without speculation
}

// SpecPoint is one rate of the sweep.
type SpecPoint struct {
	Rate        float64
	Spec, Plain SpecRun
}

// Pays reports whether speculation beat plain decoding at this rate: a
// shorter median token time without giving up 2 % of the throughput.
func (p SpecPoint) Pays() bool {
	return p.Spec.TPOTp50 < p.Plain.TPOTp50 && p.Spec.OutputTokensPerS >= 0.98*p.Plain.OutputTokensPerS
}

// SpeculationSweep runs one replica of cfg.Base (which must speculate) at
// each rate, with its speculation and without, for cfg.Duration of
// virtual time.
func SpeculationSweep(ctx context.Context, cfg Config, rates []float64) ([]SpecPoint, error) {
	if !cfg.Base.Speculative.Enabled() {
		return nil, errors.New("speculation sweep: give --speculative-config: the sweep compares it with plain decoding")
	}
	if len(rates) == 0 {
		return nil, errors.New("speculation sweep: no rates")
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("speculation sweep: the trial duration must be positive")
	}
	plain := cfg.Base
	plain.Speculative = speculative.Config{}
	var out []SpecPoint
	for _, rate := range rates {
		if !(rate > 0) {
			return nil, fmt.Errorf("speculation sweep: rate %v: want a positive request rate", rate)
		}
		pt := SpecPoint{Rate: rate}
		var err error
		if pt.Spec, err = specRun(ctx, &cfg, cfg.Base, rate); err != nil {
			return nil, err
		}
		if pt.Plain, err = specRun(ctx, &cfg, plain, rate); err != nil {
			return nil, err
		}
		out = append(out, pt)
	}
	return out, nil
}

func specRun(ctx context.Context, cfg *Config, rc replica.Config, rate float64) (SpecRun, error) {
	p, err := cfg.Load(ctx, rate, cfg.Duration)
	if err != nil {
		return SpecRun{}, err
	}
	res, err := simulate.Run(ctx, simulate.Config{Replica: rc, Plan: p})
	if err != nil {
		return SpecRun{}, fmt.Errorf("speculation sweep at %g req/s: %w", rate, err)
	}
	mfs, err := res.Gatherer.Gather()
	if err != nil {
		return SpecRun{}, fmt.Errorf("speculation sweep at %g req/s: %w", rate, err)
	}
	var acc, drafted float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case metricspec.SpecDecodeAcceptedTokens:
				acc += m.GetCounter().GetValue()
			case metricspec.SpecDecodeDraftTokens:
				drafted += m.GetCounter().GetValue()
			}
		}
	}
	out, err := bench.Offline(bench.Config{PercentileMetrics: []string{"tpot"}, Percentiles: []float64{50}}, rc.Sim.Model, "",
		bench.Pass{Outputs: res.Outputs}, res.Duration, p)
	if err != nil {
		return SpecRun{}, err
	}
	m := out.Passes[0].Metrics
	r := SpecRun{OutputTokensPerS: m.OutputThroughput, TPOTp50: math.NaN(), Acceptance: math.NaN()}
	for _, pc := range m.Dists["tpot"].Percentiles {
		if pc.P == 50 {
			r.TPOTp50 = pc.Value
		}
	}
	if drafted > 0 {
		r.Acceptance = acc / drafted
	}
	return r, nil
}

// Crossover is the first rate of the sweep at which speculation no longer
// pays, having paid at the rates below it; 0 when it pays at every rate
// (or at none).
func Crossover(pts []SpecPoint) float64 {
	for i, p := range pts {
		if !p.Pays() {
			if i == 0 {
				return 0
			}
			return p.Rate
		}
	}
	return 0
}

// WriteSpecTable writes the sweep and where speculation stops paying.
func WriteSpecTable(w io.Writer, pts []SpecPoint) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join([]string{"req/s", "out tok/s (spec)", "out tok/s (plain)", "TPOT p50 ms (spec)", "TPOT p50 ms (plain)", "acceptance", "speculation"}, "\t"))
	for _, p := range pts {
		verdict := "pays"
		if !p.Pays() {
			verdict = "costs"
		}
		fmt.Fprintf(tw, "%g\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%s\n", p.Rate, p.Spec.OutputTokensPerS, p.Plain.OutputTokensPerS, p.Spec.TPOTp50, p.Plain.TPOTp50, p.Spec.Acceptance, verdict)
	}
	_ = tw.Flush()
	switch c := Crossover(pts); {
	case c > 0:
		fmt.Fprintf(w, "\nSpeculation stops paying at %g req/s: the batches are wide enough that a verify pass's scored positions (and a draft model's passes) cost more than the tokens they save.\n", c)
	case len(pts) > 0 && pts[0].Pays():
		fmt.Fprintln(w, "\nSpeculation pays at every rate swept.")
	default:
		fmt.Fprintln(w, "\nSpeculation pays at none of the rates swept.")
	}
}
