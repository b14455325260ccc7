package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// ChaosReport is what a chaos pass sent, what its clients saw, and whether
// the server's own metrics agree.
type ChaosReport struct {
	Faults   map[string]int `json:"faults"` // requests given each fault
	Outcomes []Outcome      `json:"-"`
	Checks   []Check        `json:"checks"`
	// Reconciled is every check passing; Unchecked says which could not be
	// made (a server without vLLM's metrics, or without the family).
	Reconciled bool     `json:"reconciled"`
	Unchecked  []string `json:"unchecked,omitempty"`
}

// Check is one reconciliation of the clients' view with the server's.
type Check struct {
	What   string `json:"what"`
	Client string `json:"client"`
	Server string `json:"server"`
	OK     bool   `json:"ok"`
}

// settle waits (up to a minute) for the server to have nothing running or
// waiting and, when it exports go_goroutines, for them to be back within
// goroutinesSlack of before's; it returns its scrape then. The client's
// own idle keep-alive connections are closed first: each holds a server
// goroutine until the server's keep-alive timeout, which is not a leak.
func settle(ctx context.Context, cfg *Config, before *snapshot) (*snapshot, error) {
	cfg.HTTPClient.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := scrapeOnce(ctx, cfg.HTTPClient, cfg.MetricsURL, cfg.Now())
		if err != nil {
			return nil, err
		}
		idle := s.value(metricspec.NumRequestsRunning)+s.value(metricspec.NumRequestsWaiting) == 0
		if idle && before != nil && slices.Contains(before.Names(), "go_goroutines") && s.value("go_goroutines") > goroutinesSlack(before.value("go_goroutines")) {
			idle = false
		}
		if idle || time.Now().After(deadline) {
			return s, nil
		}
		cfg.HTTPClient.CloseIdleConnections() // the scrape's own
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// goroutinesSlack is the most goroutines a server settled after a chaos
// pass may have, given those it had before: 10 %, or 10, more.
func goroutinesSlack(before float64) float64 { return before + max(10, before/10) }

// tally counts what the clients saw.
type tally struct {
	accepted, completed, cutOpen, noRead, clientGaveUp       int
	malformed, malformed400, oversized, oversized413         int
	slowHeaders, slowHeadersClosed, slowBody, slowBodyClosed int
	heldHeaders, heldBody                                    time.Duration
	refused, refusedRetry, refusedUnknown                    int
}

func countClients(outputs []Output, outs []Outcome) tally {
	var t tally
	for _, o := range outputs {
		switch {
		case strings.HasPrefix(o.Error, "chaos "), o.Status != http.StatusOK:
		case o.Success:
			t.accepted++
			t.completed++
		default:
			t.accepted++ // given up (its timeout) or cut by the server after the stream began
			t.clientGaveUp++
		}
	}
	for _, o := range outs {
		switch o.Fault {
		case faultNone:
			t.refused++
			t.refusedUnknown++ // bench's client reads no Retry-After
		case faultCut, faultNoRead:
			if o.Status == http.StatusServiceUnavailable {
				// Refused before its stream began (a burst filled the
				// queue): the server counts it as any other 503.
				t.refused++
				if o.Retry {
					t.refusedRetry++
				}
			}
			if o.Status == http.StatusOK {
				t.accepted++
				switch {
				case o.Fault == faultNoRead:
					t.noRead++
				case o.Done:
					t.completed++
				default:
					t.cutOpen++
				}
			}
		case faultBurst:
			switch o.Status {
			case http.StatusOK:
				t.accepted++
				t.completed++
			case http.StatusServiceUnavailable:
				t.refused++
				if o.Retry {
					t.refusedRetry++
				}
			}
		case faultMalformed:
			t.malformed++
			if o.Status == http.StatusBadRequest {
				t.malformed400++
			}
		case faultOversized:
			t.oversized++
			if o.Status == http.StatusRequestEntityTooLarge {
				t.oversized413++
			}
		case faultSlowHeaders:
			t.slowHeaders++
			t.heldHeaders = max(t.heldHeaders, o.Held)
			if o.Closed {
				t.slowHeadersClosed++
			}
		case faultSlowBody:
			t.slowBody++
			t.heldBody = max(t.heldBody, o.Held)
			if o.Closed {
				t.slowBodyClosed++
			}
		}
	}
	return t
}

// reconcile compares the clients' tally with the server's counters from
// before the pass to after it settled.
func reconcile(before, after *snapshot, outputs []Output, outs []Outcome, faults map[string]int) *ChaosReport {
	t := countClients(outputs, outs)
	rep := &ChaosReport{Faults: faults, Outcomes: outs}
	add := func(what, client, server string, ok bool) {
		rep.Checks = append(rep.Checks, Check{What: what, Client: client, Server: server, OK: ok})
	}
	if t.malformed > 0 {
		add("malformed bodies refused with 400", fmt.Sprintf("%d of %d", t.malformed400, t.malformed), "-", t.malformed400 == t.malformed)
	}
	if t.oversized > 0 {
		add("oversized bodies refused with 413", fmt.Sprintf("%d of %d", t.oversized413, t.oversized), "-", t.oversized413 == t.oversized)
	}
	if t.slowHeaders > 0 {
		add("slow headers closed by the server", fmt.Sprintf("%d of %d (held at most %v)", t.slowHeadersClosed, t.slowHeaders, t.heldHeaders.Round(100*time.Millisecond)), "-", t.slowHeadersClosed == t.slowHeaders)
	}
	if t.slowBody > 0 {
		add("slow bodies closed by the server", fmt.Sprintf("%d of %d (held at most %v)", t.slowBodyClosed, t.slowBody, t.heldBody.Round(100*time.Millisecond)), "-", t.slowBodyClosed == t.slowBody)
	}
	if before == nil || after == nil {
		rep.Unchecked = append(rep.Unchecked, "everything the server counts: no /metrics to scrape")
		rep.Reconciled = allOK(rep.Checks)
		return rep
	}
	has := func(f string) bool { return slices.Contains(after.Names(), f) }
	delta := func(f string, want promtext.Labels) float64 {
		a, _ := after.Sum(f, want)
		b, _ := before.Sum(f, want)
		return a - b
	}
	if has(metricspec.RequestSuccess) {
		ended := delta(metricspec.RequestSuccess, nil)
		aborts := delta(metricspec.RequestSuccess, promtext.Labels{metricspec.LabelFinishedReason: "abort"})
		done := ended - aborts - delta(metricspec.RequestSuccess, promtext.Labels{metricspec.LabelFinishedReason: "error"})
		add("requests the server accepted are all ended (request_success_total, every reason)", fmt.Sprint(t.accepted), fmt.Sprint(ended), int(ended) == t.accepted)
		add("cuts counted as aborts (finished_reason=\"abort\"; a non-reader or a client timeout may add one)",
			fmt.Sprintf("%d cut, %d not reading, %d gave up", t.cutOpen, t.noRead, t.clientGaveUp), fmt.Sprint(aborts),
			int(aborts) >= t.cutOpen && int(aborts) <= t.cutOpen+t.noRead+t.clientGaveUp)
		add("completed streams counted as stop or length", fmt.Sprintf("%d (+ up to %d non-readers)", t.completed, t.noRead), fmt.Sprint(done),
			int(done) >= t.completed && int(done) <= t.completed+t.noRead)
	} else {
		rep.Unchecked = append(rep.Unchecked, "finished requests by reason: no "+metricspec.RequestSuccess)
	}
	if t.refused > 0 {
		if has(metricspec.AdmissionRejections) {
			n := delta(metricspec.AdmissionRejections, nil)
			add("503s counted as admission rejections", fmt.Sprint(t.refused), fmt.Sprint(n), int(n) == t.refused)
		} else {
			rep.Unchecked = append(rep.Unchecked, "503s: no "+metricspec.AdmissionRejections+" (vLLM before 0.32)")
		}
		if known := t.refused - t.refusedUnknown; known > 0 {
			add("every 503 of the burst carried Retry-After", fmt.Sprintf("%d of %d", t.refusedRetry, known), "-", t.refusedRetry == known)
		}
	}
	run, wait, kv := after.value(metricspec.NumRequestsRunning), after.value(metricspec.NumRequestsWaiting), after.value(metricspec.KVCacheUsagePerc)
	add("nothing left running, waiting or holding KV blocks", "0, 0, 0", fmt.Sprintf("%g, %g, %g", run, wait, kv), run == 0 && wait == 0 && kv == 0)
	if has("go_goroutines") {
		b, a := before.value("go_goroutines"), after.value("go_goroutines")
		add("goroutines back to where they started (within 10 %, or 10)", fmt.Sprint(b), fmt.Sprint(a), a <= goroutinesSlack(b))
	}
	rep.Reconciled = allOK(rep.Checks)
	return rep
}

func allOK(cs []Check) bool {
	for _, c := range cs {
		if !c.OK {
			return false
		}
	}
	return true
}

// writeChaos prints the report's table.
func (r *ChaosReport) write(w io.Writer) {
	fmt.Fprintln(w, center(" Chaos: the clients against the server's metrics ", "=", 50))
	var kinds []string
	for k, n := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	fmt.Fprintf(w, "faults sent: %s\n", strings.Join(kinds, ", "))
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %s\n       clients: %s; server: %s\n", mark, c.What, c.Client, c.Server)
	}
	for _, u := range r.Unchecked {
		fmt.Fprintf(w, "n/a  %s\n", u)
	}
	if r.Reconciled {
		fmt.Fprintln(w, "reconciled: the server counted what its clients did")
	} else {
		fmt.Fprintln(w, "NOT reconciled: see FAIL above")
	}
}
