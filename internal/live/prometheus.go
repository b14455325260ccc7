package live

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// promCache holds the last window read from Prometheus: a live page asks
// every few seconds, and the window moves once a step.
type promCache struct {
	mu  sync.Mutex // one reading at a time
	key string
	v   *view
}

// maxPoints is about how many readings a window is read at: a wider
// window is read at a coarser step (Grafana's choice, too).
const maxPoints = 1000

// steps are the steps a window is read at, finest first.
var steps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// stepFor is the step a window of length d is read at: finest, at most
// maxPoints readings, never finer than the source's.
func stepFor(d, finest time.Duration) time.Duration {
	finest = max(finest, time.Millisecond) // Prometheus's resolution, and the page's windows align to it
	if d/finest <= maxPoints {
		return finest
	}
	for _, s := range steps {
		if s > finest && d/s <= maxPoints {
			return s
		}
	}
	return max(finest, d/maxPoints)
}

// promView reads the window q asks for from Prometheus, as the doctor
// reads a fleet: every instance the selector matches, each diagnosed over
// the window, ranked worst first.
func (p *Page) promView(ctx context.Context, q query) *view {
	pr := p.cfg.Prometheus
	var sp span
	switch {
	case q.fixed():
		sp = span{from: q.from, to: q.to, step: stepFor(q.to.Sub(q.from), pr.Step)}
	case q.rng == 0 && !pr.End.IsZero(): // the window the page was started on
		sp = span{from: pr.End.Add(-pr.Since), to: pr.End, step: stepFor(pr.Since, pr.Step)}
	default:
		rng := cmp.Or(q.rng, pr.Since)
		st := stepFor(rng, pr.Step)
		// A step before now, on the step: the last scrape of every target
		// is in, and the window moves once a step.
		end := p.cfg.Now().Add(-st).UnixMilli()
		to := time.UnixMilli(end - end%st.Milliseconds())
		sp = span{from: to.Add(-rng), to: to, live: true, rng: rng, step: st}
	}
	src := source.Prometheus{URL: pr.URL, Selector: pr.Selector, Since: sp.to.Sub(sp.from), End: sp.to, Step: sp.step, Client: p.cfg.HTTPClient, Now: p.cfg.Now}
	key := fmt.Sprint(sp.from.UnixMilli(), sp.to.UnixMilli(), sp.step)
	c := &p.prom
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == key {
		return c.v
	}
	v := &view{span: sp, interval: sp.step, doctor: p.doctorCommand(src)}
	ms, err := src.Collect(ctx)
	if err != nil {
		v.problem = err.Error() // not kept: the next refresh asks again
		return v
	}
	rep := p.doc.Fleet(pr.URL, src.FleetSelector(), ms)
	v.fleet = rep.Findings
	for i := range rep.Fleet.Instances {
		in := &rep.Fleet.Instances[i]
		for id, m := range ms {
			if m.Instance == in.Instance {
				v.rows = append(v.rows, row{id: id, name: in.Instance, window: m.Window, readings: len(m.Window.Snapshots), signals: in.Report.Signals(), doc: in})
			}
		}
	}
	c.key, c.v = key, v
	return v
}

// doctorCommand is the glassbox doctor command line that reads src's
// window with the page's doctor, and so gives the page's answers.
func (p *Page) doctorCommand(src source.Prometheus) string {
	args := []string{"glassbox doctor --prometheus-url " + src.URL}
	if src.Selector != "" {
		args = append(args, "--selector '"+src.Selector+"'")
	}
	end := src.End.UTC().Format(time.RFC3339Nano)
	args = append(args, "--since "+shortDuration(src.Since), "--end "+end, "--interval "+shortDuration(src.Step))
	if h := p.cfg.Hints; h.GPU != "" {
		args = append(args, "--gpu "+h.GPU)
	}
	if h := p.cfg.Hints; h.MaxNumSeqs > 0 {
		args = append(args, fmt.Sprintf("--max-num-seqs %d", h.MaxNumSeqs))
	}
	if h := p.cfg.Hints; h.MaxNumBatchedTokens > 0 {
		args = append(args, fmt.Sprintf("--max-num-batched-tokens %d", h.MaxNumBatchedTokens))
	}
	def := doctor.DefaultThresholds()
	for _, name := range doctor.ThresholdNames() {
		v, _ := p.cfg.Thresholds.Get(name)
		if d, _ := def.Get(name); v != d {
			args = append(args, fmt.Sprintf("--threshold %s=%s", name, strconv.FormatFloat(v, 'g', -1, 64)))
		}
	}
	return strings.Join(args, " ")
}

// shortDuration writes 4m for 4m0s and 1h for 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
