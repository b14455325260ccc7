package bench

import (
	"context"
	"fmt"
	"math"
)

// Sweep is a GuideLLM-style sweep: a synchronous pass (one request at a
// time) measures the lowest useful rate, a throughput pass (everything at
// once) the highest, and SweepSize−2 constant-rate passes are spread evenly
// between them. The knee is the highest rate whose pass still met the SLOs.
type Sweep struct {
	Points []SweepPoint
	// Knee indexes Points: the highest-rate point meeting the SLOs; -1 when
	// none does or no SLO was given.
	Knee int
}

// SweepPoint is one pass of a sweep.
type SweepPoint struct {
	Pass *Pass
	// Rate is the pass's request rate: the offered rate of a constant-rate
	// pass, the achieved request throughput of the synchronous and
	// throughput passes.
	Rate float64
	// Attained is the share of the pass's requests (failed ones included)
	// that met every SLO; MeetsSLOs is Attained >= Config.SLOAttained.
	Attained  float64
	MeetsSLOs bool
}

// KneeRate is the knee's rate, or NaN when there is none.
func (s *Sweep) KneeRate() float64 {
	if s == nil || s.Knee < 0 {
		return math.NaN()
	}
	return s.Points[s.Knee].Rate
}

func (s *Sweep) passes() []*Pass {
	out := make([]*Pass, len(s.Points))
	for i, p := range s.Points {
		out[i] = p.Pass
	}
	return out
}

// sweep runs the passes.
func (r *runner) sweep(ctx context.Context) (*Sweep, error) {
	s := &Sweep{Knee: -1}
	inf := math.Inf(1)
	sync, err := r.pass(ctx, Pass{Name: "synchronous", RequestRate: inf, Burstiness: 1, MaxConcurrency: 1})
	if err != nil {
		return nil, err
	}
	s.add(r.cfg, sync, sync.Metrics.RequestThroughput)
	tp, err := r.pass(ctx, Pass{Name: "throughput", RequestRate: inf, Burstiness: 1, MaxConcurrency: r.cfg.MaxConcurrency})
	if err != nil {
		return s, err
	}
	s.add(r.cfg, tp, tp.Metrics.RequestThroughput)
	lo, hi := sync.Metrics.RequestThroughput, tp.Metrics.RequestThroughput
	if !(lo > 0 && hi > 0) {
		return s, fmt.Errorf("sweep: %w", errNoRate)
	}
	k := r.cfg.SweepSize - 2
	for i := 1; i <= k; i++ {
		rate := lo + (hi-lo)*float64(i)/float64(k+1)
		p, err := r.pass(ctx, Pass{Name: "rate", RequestRate: rate, Burstiness: r.cfg.Burstiness, MaxConcurrency: r.cfg.MaxConcurrency})
		if err != nil {
			return s, err
		}
		s.add(r.cfg, p, rate)
	}
	s.findKnee()
	return s, nil
}

// add appends a point and judges it against the SLOs.
func (s *Sweep) add(cfg *Config, p *Pass, rate float64) {
	pt := SweepPoint{Pass: p, Rate: rate}
	if n := p.Metrics.Completed + p.Metrics.Failed; n > 0 && !cfg.Goodput.Empty() {
		pt.Attained = float64(p.Metrics.Good) / float64(n)
		pt.MeetsSLOs = pt.Attained >= cfg.SLOAttained
	}
	s.Points = append(s.Points, pt)
}

func (s *Sweep) findKnee() {
	s.Knee = -1
	for i, p := range s.Points {
		if p.MeetsSLOs && (s.Knee < 0 || p.Rate > s.Points[s.Knee].Rate) {
			s.Knee = i
		}
	}
}
