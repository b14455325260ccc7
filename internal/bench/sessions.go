package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// SessionMetrics is an agent-session load's sessions, each as its agent
// lived it: how many turns it ran, how long it took from when it was due
// to start to its last answer, and where that time went — waiting on the
// server (its requests from send to answer), on its tools (from an answer
// to when the next turn was due), or held on the client (a due turn not
// yet sent: a start held by --max-concurrency, a turn waiting for its
// scheduled time). The three add up to the duration.
type SessionMetrics struct {
	Started  int // sessions that sent a turn
	Finished int // of those, the ones that sent every turn of their plan
	Cut      int // the ones that ended short (--agent-at-duration cut, the run's end)
	// Dists are per session, in milliseconds: "turns" (as a count),
	// "duration", "server", "tools", "held".
	Dists    map[string]Dist
	Sessions []SessionRecord // in the order they started
}

// SessionRecord is one session of a run.
type SessionRecord struct {
	User  int           // its session (a recycled slot's user runs several)
	Start time.Duration // its first turn's due time, from the pass's start
	// Turns it sent, Failed among them, Planned in its blueprint.
	Turns, Failed, Planned             int
	Duration, Server, Tools, Held      time.Duration
	PromptTokens, OutputTokens, Cached int // over its successful turns
	firstDue, lastEnd                  time.Time
}

// sessionMetrics groups the outputs of an agent-session plan by session:
// a user's requests in the order sent, a new session at each first turn
// (inference-perf's conversations start over in their slot).
func sessionMetrics(outputs []Output, plan *workload.Plan, start time.Time, percentiles []float64) *SessionMetrics {
	m := &SessionMetrics{}
	open := map[int]int{} // user → index in m.Sessions of its current session
	for _, o := range outputs {
		if o.Start.IsZero() || o.Session < 0 || o.Session >= len(plan.Agent.Sessions) {
			continue
		}
		i, ok := open[o.Session]
		if !ok || o.Turn == 0 {
			m.Sessions = append(m.Sessions, SessionRecord{User: o.Session, Start: o.Due, Planned: len(plan.Agent.Sessions[o.Session].Turns),
				firstDue: start.Add(o.Due)})
			i = len(m.Sessions) - 1
			open[o.Session] = i
		}
		s := &m.Sessions[i]
		s.Turns++
		end := o.End
		if end.IsZero() {
			end = o.Start.Add(o.Latency)
		}
		s.Server += end.Sub(o.Start)
		if end.After(s.lastEnd) {
			s.lastEnd = end
		}
		if o.Turn > 0 {
			s.Tools += o.Tool
		}
		if !o.Success {
			s.Failed++
			continue
		}
		s.PromptTokens += o.PromptLen
		s.OutputTokens += o.OutputTokens
		if o.CachedTokens != nil {
			s.Cached += *o.CachedTokens
		}
	}
	var turns, dur, server, tools, held []float64
	for i := range m.Sessions {
		s := &m.Sessions[i]
		s.Duration = s.lastEnd.Sub(s.firstDue)
		s.Held = max(s.Duration-s.Server-s.Tools, 0)
		m.Started++
		if s.Turns >= s.Planned {
			m.Finished++
		} else {
			m.Cut++
		}
		turns = append(turns, float64(s.Turns)/1000) // newDist reads seconds: a count reads back as itself
		dur, server = append(dur, s.Duration.Seconds()), append(server, s.Server.Seconds())
		tools, held = append(tools, s.Tools.Seconds()), append(held, s.Held.Seconds())
	}
	m.Dists = map[string]Dist{"turns": newDist(turns, percentiles), "duration": newDist(dur, percentiles),
		"server": newDist(server, percentiles), "tools": newDist(tools, percentiles), "held": newDist(held, percentiles)}
	return m
}

// sessionRows are the summary's and the JSON's per-session figures, in
// order: key, title, unit.
var sessionRows = [][3]string{
	{"turns", "Turns", ""},
	{"duration", "Session duration", "s"},
	{"server", "Waiting on the server", "s"},
	{"tools", "Waiting on tools", "s"},
	{"held", "Held on the client", "s"},
}

// writeSessions prints the sessions' table.
func writeSessions(w io.Writer, m *SessionMetrics) {
	fmt.Fprintln(w, center(" Agent sessions ", "-", 50))
	fmt.Fprintf(w, "%-40s %-10d\n", "Sessions started:", m.Started)
	fmt.Fprintf(w, "%-40s %-10d\n", "Sessions that ran every turn:", m.Finished)
	fmt.Fprintf(w, "%-40s %-10d\n", "Sessions cut short:", m.Cut)
	pct := "p99"
	if d := m.Dists["duration"]; len(d.Percentiles) > 0 {
		pct = "p" + percentileWord(d.Percentiles[len(d.Percentiles)-1].P)
	}
	fmt.Fprintf(w, "%-24s %12s %12s\n", "per session", "mean", pct)
	for _, row := range sessionRows {
		d := m.Dists[row[0]]
		last := 0.0
		if n := len(d.Percentiles); n > 0 {
			last = d.Percentiles[n-1].Value
		}
		title, scale := row[1], 1.0 // turns are counts
		if row[2] != "" {
			title, scale = title+" ("+row[2]+")", 1000 // times are seconds
		}
		fmt.Fprintf(w, "%-24s %12.2f %12.2f\n", title, d.Mean/scale, last/scale)
	}
}

// sessionsObject is the result's "sessions" key: the counts, and each
// figure's mean, median and percentiles (turns as counts, times in
// seconds); detailed adds every session's record.
func sessionsObject(m *SessionMetrics, detailed bool) object {
	o := object{{"started", m.Started}, {"finished", m.Finished}, {"cut", m.Cut}}
	for _, row := range sessionRows {
		d := m.Dists[row[0]]
		key, scale := row[0], 1.0
		if row[2] != "" {
			key, scale = key+"_"+row[2], 1000
		}
		o = append(o, field{"mean_" + key, d.Mean / scale}, field{"median_" + key, d.Median / scale})
		for _, pc := range d.Percentiles {
			o = append(o, field{"p" + percentileWord(pc.P) + "_" + key, pc.Value / scale})
		}
	}
	if detailed {
		var list []object
		for _, s := range m.Sessions {
			list = append(list, object{{"session", s.User}, {"start_s", s.Start.Seconds()}, {"turns", s.Turns}, {"failed", s.Failed},
				{"planned_turns", s.Planned}, {"duration_s", s.Duration.Seconds()}, {"server_s", s.Server.Seconds()},
				{"tools_s", s.Tools.Seconds()}, {"held_s", s.Held.Seconds()}, {"prompt_tokens", s.PromptTokens},
				{"output_tokens", s.OutputTokens}, {"cached_tokens", s.Cached}})
		}
		o = append(o, field{"per_session", list})
	}
	return o
}
