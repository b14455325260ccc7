package bench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// SessionMetrics is an agent-session load's sessions, each as its agent
// lived it: how many turns it ran, how long it took from when it was due
// to start to its last answer, and where that time went — waiting on the
// server (a request of its in flight), on its tools (from an answer to
// when the next turn was due), or held on the client (a due turn not yet
// sent: a start held by --max-concurrency, a turn waiting for its
// scheduled time). The three add up to the duration; a replayed trace's
// session, whose calls can overlap, counts each moment once.
type SessionMetrics struct {
	Started  int // sessions that sent a turn
	Finished int // of those, the ones that sent every turn of their plan
	Cut      int // the ones that ended short (--agent-at-duration cut, the run's end, a failed call)
	// Dists are per session, in milliseconds: "turns" (as a count),
	// "duration", "server", "tools", "held".
	Dists    map[string]Dist
	Sessions []SessionRecord // in the order they started
}

// SessionRecord is one session of a run.
type SessionRecord struct {
	User  int           // its session (a recycled slot's user runs several)
	Start time.Duration // its first turn's due time, from the pass's start
	// Turns it sent, Failed among them, Planned in its blueprint (a
	// replayed trace's calls).
	Turns, Failed, Planned             int
	Duration, Server, Tools, Held      time.Duration
	PromptTokens, OutputTokens, Cached int // over its successful turns
	// ID and Source name a replayed trace's session and its file; Stage
	// is the stage it ran in.
	ID, Source string
	Stage      int
	firstDue   time.Time
	lastEnd    time.Time
	server     []span // its requests in flight, and its tools' times
	tools      []span
}

// span is a stretch of a session's time.
type span struct{ from, to time.Time }

// sessionMetrics groups the outputs of an agent-session plan by session:
// a user's requests in the order sent, a new session at each first turn
// (inference-perf's conversations start over in their slot); a graph
// session's user runs once.
func sessionMetrics(outputs []Output, plan *workload.Plan, start time.Time, percentiles []float64) *SessionMetrics {
	m := &SessionMetrics{}
	open := map[int]int{} // user → index in m.Sessions of its current session
	for _, o := range outputs {
		planned, ok := plannedTurns(plan, o.Session)
		if o.Start.IsZero() || !ok {
			continue
		}
		i, seen := open[o.Session]
		if !seen || (o.Turn == 0 && plan.Graph == nil) {
			r := SessionRecord{User: o.Session, Start: o.Due, Planned: planned, Stage: o.Stage, firstDue: start.Add(o.Due)}
			if g := plan.Graph; g != nil {
				r.ID, r.Source = g.Sessions[o.Session].ID, g.Sessions[o.Session].Source
			}
			m.Sessions = append(m.Sessions, r)
			i = len(m.Sessions) - 1
			open[o.Session] = i
		}
		s := &m.Sessions[i]
		s.Turns++
		end := o.End
		if end.IsZero() {
			end = o.Start.Add(o.Latency)
		}
		s.server = append(s.server, span{o.Start, end})
		if o.Turn > 0 && o.Tool > 0 {
			// The tool ran from the answer it waited on: a graph call's
			// last predecessor's, due the tool's time later; a turn's
			// previous one's.
			from := s.lastEnd
			if plan.Graph != nil {
				from = start.Add(o.Due - o.Tool)
			}
			s.tools = append(s.tools, span{from, from.Add(o.Tool)})
		}
		if end.After(s.lastEnd) {
			s.lastEnd = end
		}
		if start.Add(o.Due).Before(s.firstDue) {
			s.firstDue, s.Start = start.Add(o.Due), o.Due
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
		s.Server = covered(s.server, nil)
		s.Tools = covered(s.tools, s.server) // a tool's time while another call was in flight is the server's
		s.Held = max(s.Duration-s.Server-s.Tools, 0)
		s.server, s.tools = nil, nil
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

// plannedTurns is how many turns (a graph session's calls) user's session
// plans, and whether the plan has that session.
func plannedTurns(plan *workload.Plan, user int) (int, bool) {
	if g := plan.Graph; g != nil {
		if user < 0 || user >= len(g.Sessions) {
			return 0, false
		}
		return len(g.Sessions[user].Calls), true
	}
	if plan.Agent == nil || user < 0 || user >= len(plan.Agent.Sessions) {
		return 0, false
	}
	return len(plan.Agent.Sessions[user].Turns), true
}

// covered is how long spans cover, each moment once, less what minus
// covers.
func covered(spans, minus []span) time.Duration {
	union := func(ss []span) []span {
		ss = slices.Clone(ss)
		slices.SortFunc(ss, func(a, b span) int { return a.from.Compare(b.from) })
		var out []span
		for _, x := range ss {
			if !x.to.After(x.from) {
				continue
			}
			if n := len(out); n > 0 && !x.from.After(out[n-1].to) {
				if x.to.After(out[n-1].to) {
					out[n-1].to = x.to
				}
				continue
			}
			out = append(out, x)
		}
		return out
	}
	var d time.Duration
	sub := union(minus)
	for _, x := range union(spans) {
		d += x.to.Sub(x.from)
		for _, y := range sub {
			from, to := maxTime(x.from, y.from), minTime(x.to, y.to)
			if to.After(from) {
				d -= to.Sub(from)
			}
		}
	}
	return d
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
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
