package live

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// query is what the page asks for: a window — the last rng up to now
// (live), or from–to (fixed), or neither (the page's default) — and what
// it holds already: the intervals up to since.
type query struct {
	rng      time.Duration
	from, to time.Time
	since    time.Time
}

func (q query) fixed() bool { return !q.to.IsZero() }

// longest is the widest window a page may ask for.
const longest = 90 * 24 * time.Hour

// parseQuery reads api/state's parameters: range (a Go duration), from
// and to (Unix seconds), since (Unix seconds).
func parseQuery(v url.Values) (query, error) {
	var q query
	unix := func(name string) (time.Time, error) {
		s := v.Get(name)
		if s == "" {
			return time.Time{}, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return time.Time{}, fmt.Errorf("%s must be a Unix time in seconds, got %q", name, s)
		}
		if f == 0 {
			return time.Time{}, nil
		}
		return time.UnixMilli(int64(math.Round(f * 1000))), nil
	}
	var err error
	if q.since, err = unix("since"); err != nil {
		return q, err
	}
	if q.from, err = unix("from"); err != nil {
		return q, err
	}
	if q.to, err = unix("to"); err != nil {
		return q, err
	}
	if s := v.Get("range"); s != "" {
		if q.rng, err = time.ParseDuration(s); err != nil || q.rng <= 0 || q.rng > longest {
			return q, fmt.Errorf("range must be a duration such as 15m, up to %v, got %q", longest, s)
		}
		if !q.from.IsZero() || !q.to.IsZero() {
			return q, fmt.Errorf("give range or from and to, not both")
		}
	}
	switch {
	case q.from.IsZero() != q.to.IsZero():
		return q, fmt.Errorf("from and to go together")
	case q.fixed() && !q.to.After(q.from):
		return q, fmt.Errorf("from must be before to")
	case q.fixed() && q.to.Sub(q.from) > longest:
		return q, fmt.Errorf("a window is at most %v", longest)
	}
	return q, nil
}

// span is the window a page draws.
type span struct {
	from, to time.Time
	live     bool          // it ends now and moves
	rng      time.Duration // a live window's asked length
	step     time.Duration // Prometheus's step; 0 when sampled
}

// view is what the state shows: the window, and each instance over it in
// the doctor's order (worst first).
type view struct {
	span     span
	interval time.Duration // between readings
	kept     time.Time     // sampled: the oldest reading kept
	fleet    []doctor.Finding
	rows     []row
	doctor   string // the command that reads the same window
	problem  string
}

// row is one instance of a view.
type row struct {
	id       int
	name     string
	window   *doctor.Window   // its readings (the charts' part of them)
	readings int              // in the view's window
	signals  *doctor.Signals  // window's, whose sources the charts read
	doc      *doctor.Instance // the doctor's report over the view's window; nil without readings there
	problem  string
	hasState bool
}

// State is what the page draws.
type State struct {
	Mode     string  `json:"mode"`       // sampled or prometheus
	Interval float64 `json:"interval_s"` // between readings
	Now      float64 `json:"now"`
	Window   Window  `json:"window"`
	// Kept is the oldest reading a sampled page holds, and History how
	// long it keeps them.
	Kept    float64 `json:"kept_from,omitempty"`
	History float64 `json:"history_s,omitempty"`
	// Doctor is the glassbox doctor command that reads the same window
	// (Prometheus).
	Doctor  string `json:"doctor,omitempty"`
	Problem string `json:"problem,omitempty"`
	// KVWatermark is the doctor's kv_watermark threshold: the line the
	// queue chart draws.
	KVWatermark float64          `json:"kv_watermark"`
	Fleet       []doctor.Finding `json:"fleet_findings"` // what only the fleet shows
	Items       []Instance       `json:"instances"`      // worst first
}

// Window is the state's time window, Unix seconds.
type Window struct {
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	Live  bool    `json:"live"`
	Range float64 `json:"range_s,omitempty"` // a live window's asked length (a sampled one starts no earlier than its first reading)
	Step  float64 `json:"step_s,omitempty"`
}

// Instance is one target's part of the state.
type Instance struct {
	ID       int    `json:"id"` // the target's index, for api/engine
	Name     string `json:"name"`
	Engine   string `json:"engine"`   // glassbox or vllm; "" before a reading
	Readings int    `json:"readings"` // in the window
	Problem  string `json:"problem,omitempty"`
	Worst    string `json:"worst,omitempty"` // the findings' highest severity
	// Answered is the window the doctor's answers and findings read.
	Answered  *Window          `json:"answered,omitempty"`
	Series    *Series          `json:"series"`
	Questions *questions       `json:"questions"`
	Findings  []doctor.Finding `json:"findings"`
	HasState  bool             `json:"has_engine_state"`
}

// questions are the doctor's three answers as the page shows them: the
// answer, its kind, its one-line summary (the numbers are in it), sources
// and confidence, not the evidence and PromQL behind them, so a refresh
// stays small.
type questions struct {
	Compute   answer `json:"compute_saturated"`
	KV        answer `json:"kv_limit"`
	Scheduler answer `json:"scheduler_idle"`
}

type answer struct {
	Answer     string   `json:"answer"`
	Kind       string   `json:"kind,omitempty"`
	Summary    string   `json:"summary"`
	Sources    []string `json:"sources"`
	Confidence string   `json:"confidence,omitempty"`
}

func compact(q *doctor.Questions) *questions {
	if q == nil {
		return nil
	}
	c := func(a doctor.Answer) answer {
		return answer{Answer: a.Answer, Kind: a.Kind, Summary: a.Summary, Sources: a.Sources, Confidence: a.Confidence}
	}
	return &questions{Compute: c(q.Compute), KV: c(q.KV), Scheduler: c(q.Scheduler)}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func (p *Page) serveState(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	st := State{Mode: "sampled", Fleet: []doctor.Finding{}, Items: []Instance{}}
	if p.cfg.Prometheus != nil {
		st.Mode = "prometheus"
		p.draw(&st, p.promView(r.Context(), q), q)
	} else {
		p.mu.Lock() // Sample adds to the windows the view reads
		v := p.sampledView(q)
		st.History = p.cfg.History.Seconds()
		if !v.kept.IsZero() {
			st.Kept = unixSeconds(v.kept)
		}
		p.draw(&st, v, q)
		p.mu.Unlock()
	}
	writeJSON(w, st)
}

// draw writes v into st: the window, and each instance's series after
// what the page holds (q.since), answers and findings.
func (p *Page) draw(st *State, v *view, q query) {
	st.Interval, st.Now = v.interval.Seconds(), unixSeconds(p.cfg.Now())
	st.Window = Window{From: unixSeconds(v.span.from), To: unixSeconds(v.span.to), Live: v.span.live, Range: v.span.rng.Seconds(), Step: v.span.step.Seconds()}
	st.Doctor, st.Problem, st.KVWatermark = v.doctor, v.problem, p.doc.Thresholds().KVWatermark
	if v.fleet != nil {
		st.Fleet = v.fleet
	}
	since := v.span.from
	if q.since.After(since) {
		since = q.since
	}
	for _, rw := range v.rows {
		in := Instance{ID: rw.id, Name: rw.name, Readings: rw.readings, Problem: rw.problem, HasState: rw.hasState, Findings: []doctor.Finding{},
			Series: derive(rw.signals, rw.window, since, v.span.to)}
		if d := rw.doc; d != nil {
			in.Engine, in.Worst, in.Questions = d.Report.Engine, d.Report.Worst().String(), compact(d.Report.Questions)
			if d.Report.Findings != nil {
				in.Findings = d.Report.Findings
			}
			in.Answered = &Window{From: unixSeconds(d.Report.Start), To: unixSeconds(d.Report.End)}
		}
		st.Items = append(st.Items, in)
	}
}
