package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws one self-overwriting line on a terminal as requests
// finish. cmd/glassbox passes a writer only when stderr is a terminal, so
// CI logs stay quiet. It redraws at most ten times a second.
type progress struct {
	w        io.Writer
	name     string
	total    int
	duration time.Duration
	now      func() time.Time
	start    time.Time

	mu         sync.Mutex
	ok, failed int
	drawn      time.Time
}

func newProgress(w io.Writer, name string, total int, duration time.Duration, now func() time.Time) *progress {
	return &progress{w: w, name: name, total: total, duration: duration, now: now, start: now()}
}

func (p *progress) done(success bool) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if success {
		p.ok++
	} else {
		p.failed++
	}
	if t := p.now(); t.Sub(p.drawn) >= 100*time.Millisecond {
		p.drawn = t
		p.draw()
	}
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
	fmt.Fprintln(p.w)
}

// draw writes the line; the caller holds mu.
func (p *progress) draw() {
	const width = 30
	elapsed := p.now().Sub(p.start)
	frac := float64(p.ok+p.failed) / float64(max(p.total, 1))
	if p.duration > 0 {
		frac = min(elapsed.Seconds()/p.duration.Seconds(), 1)
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%-11s [%s%s] %d done, %d failed, %s", p.name,
		strings.Repeat("#", n), strings.Repeat(" ", width-n), p.ok, p.failed, elapsed.Round(100*time.Millisecond))
}
