// inference-perf's session lifecycle reports, for a replay of agent traces
// (otel_trace_replay): summary_session_lifecycle_metrics.json,
// stage_N_session_lifecycle_metrics.json and per_session_lifecycle_metrics.json.

package inferenceperf

import (
	"fmt"
	"slices"

	"github.com/glassbox-llm/glassbox/internal/bench"
)

// ipSession is one session as inference-perf's SessionLifecycleMetric
// records it, once its requests have enriched it.
type ipSession struct {
	SessionID                 string         `json:"session_id"`
	StageID                   int            `json:"stage_id"`
	FilePath                  string         `json:"file_path"`
	StartTime                 float64        `json:"start_time"`
	EndTime                   float64        `json:"end_time"`
	DurationSec               float64        `json:"duration_sec"`
	NumEvents                 int            `json:"num_events"`
	NumEventsCompleted        int            `json:"num_events_completed"`
	NumEventsCancelled        *int           `json:"num_events_cancelled"`
	NRecordedSubstitutions    *int           `json:"n_recorded_substitutions"`
	RecordedSubstitutionIDs   []string       `json:"recorded_substitution_event_ids"`
	Success                   *bool          `json:"success"`
	Error                     *ipErrorRecord `json:"error"`
	TotalInputTokens          *int           `json:"total_input_tokens"`
	TotalOutputTokens         *int           `json:"total_output_tokens"`
	TotalCachedTokens         *int           `json:"total_cached_tokens"`
	TotalCacheableInputTokens *int           `json:"total_cacheable_input_tokens"`
}

// sessionRecords are the pass's replayed sessions as inference-perf
// records them: from its dispatch (its first call's send) to its last
// answer, or to its first failure, which ends it there (the calls that
// completed before it count, the rest are cancelled). A session its
// stage's timeout cut (its first failure a cancellation) is not recorded,
// as inference-perf records none.
func (x *ipContext) sessionRecords() []ipSession {
	p := x.pass
	byID := map[string][]*bench.Output{}
	for i := range p.Outputs {
		o := &p.Outputs[i]
		if !o.Start.IsZero() && o.SessionID != "" {
			byID[o.SessionID] = append(byID[o.SessionID], o)
		}
	}
	var out []ipSession
	for _, r := range p.Sessions.Sessions {
		outs := byID[r.ID]
		if r.ID == "" || len(outs) == 0 {
			continue
		}
		var failure *bench.Output
		start, end := outs[0].Start, outs[0].End
		for _, o := range outs {
			start = minT(start, o.Start)
			if !o.Success && (failure == nil || o.End.Before(failure.End)) {
				failure = o
			}
			end = maxT(end, o.End)
		}
		if failure != nil && failure.ErrorType == "CancelledError" {
			continue
		}
		if failure != nil {
			end = failure.End
		}
		s := ipSession{SessionID: r.ID, StageID: r.Stage, FilePath: r.Source, StartTime: unix(start), EndTime: unix(end), NumEvents: r.Planned}
		s.DurationSec = s.EndTime - s.StartTime
		in, outTok := 0, 0
		cached, cacheable, reported := 0, 0, false
		for _, o := range outs {
			if o.Success && !o.End.After(end) {
				s.NumEventsCompleted++
			}
			if o.Success {
				in += o.PromptLen
				outTok += o.OutputTokens
				if o.CachedTokens != nil {
					cached, cacheable, reported = cached+*o.CachedTokens, cacheable+o.PromptLen, true
				}
			}
		}
		cancelled := 0
		switch {
		case failure != nil:
			cancelled = r.Planned - s.NumEventsCompleted - 1
			s.Error = &ipErrorRecord{ErrorType: cmpOr(failure.ErrorType, "ClientError"), ErrorMsg: cmpOr(failure.ErrorBody, failure.Error)}
		case len(outs) < r.Planned:
			// Calls never sent with none failed: they waited past
			// predecessor_wait_timeout_sec.
			cancelled = r.Planned - s.NumEventsCompleted - 1
			s.Error = &ipErrorRecord{ErrorType: "SessionReplayError", ErrorMsg: "predecessor wait failed: TimeoutError"}
		}
		s.NumEventsCancelled = &cancelled
		ok := s.NumEventsCompleted == s.NumEvents && s.Error == nil
		s.Success, s.TotalInputTokens, s.TotalOutputTokens = &ok, &in, &outTok
		if reported {
			s.TotalCachedTokens, s.TotalCacheableInputTokens = &cached, &cacheable
		}
		out = append(out, s)
	}
	return out
}

func minT[T interface{ Before(T) bool }](a, b T) T {
	if b.Before(a) {
		return b
	}
	return a
}

func maxT[T interface{ Before(T) bool }](a, b T) T {
	if a.Before(b) {
		return b
	}
	return a
}

// summarizeSessions is inference-perf's summarize_sessions.
func (x *ipContext) summarizeSessions(ss []ipSession) object {
	var ok, failed, events, completed, cancelledTotal, withCache int
	var dur, nEvents, cancelled, in, outTok, cachedV, cacheableV, perSession []float64
	first, last := ss[0].StartTime, ss[0].EndTime
	var cachedSum, promptSum int
	for _, s := range ss {
		if *s.Success {
			ok++
		} else {
			failed++
		}
		events += s.NumEvents
		completed += s.NumEventsCompleted
		cancelledTotal += *s.NumEventsCancelled
		first, last = min(first, s.StartTime), max(last, s.EndTime)
		dur, nEvents = append(dur, s.DurationSec), append(nEvents, float64(s.NumEvents))
		cancelled = append(cancelled, float64(*s.NumEventsCancelled))
		in, outTok = append(in, float64(*s.TotalInputTokens)), append(outTok, float64(*s.TotalOutputTokens))
		if s.TotalCachedTokens != nil {
			cachedV, cacheableV = append(cachedV, float64(*s.TotalCachedTokens)), append(cacheableV, float64(*s.TotalCacheableInputTokens))
			cachedSum, promptSum = cachedSum+*s.TotalCachedTokens, promptSum+*s.TotalCacheableInputTokens
			if *s.TotalCacheableInputTokens > 0 {
				withCache++
				perSession = append(perSession, 100*float64(*s.TotalCachedTokens)/float64(*s.TotalCacheableInputTokens))
			}
		}
	}
	rate := 0.0
	if span := last - first; span > 0 {
		rate = float64(len(ss)) / span
	}
	var hit any
	if promptSum > 0 {
		hit = 100 * float64(cachedSum) / float64(promptSum)
	}
	return object{{"num_sessions", len(ss)}, {"num_sessions_succeeded", ok}, {"num_sessions_failed", failed},
		{"total_events", events}, {"total_events_completed", completed}, {"total_events_cancelled", cancelledTotal},
		{"sessions_with_recorded_substitution", 0}, {"total_recorded_substitutions", object{{"count", 0}, {"messages", []any{}}}},
		{"sessions_per_second", rate}, {"session_duration_sec", x.ipSummary(dur)}, {"num_events", x.ipSummary(nEvents)},
		{"num_events_cancelled", x.ipSummary(cancelled)}, {"total_input_tokens", x.ipSummary(in)}, {"total_output_tokens", x.ipSummary(outTok)},
		{"total_cached_tokens", x.ipSummary(cachedV)}, {"total_cacheable_input_tokens", x.ipSummary(cacheableV)},
		{"sessions_with_cache_info", withCache}, {"kv_cache_hit_percent", hit}, {"kv_cache_hit_per_session_percent", x.ipSummary(perSession)}}
}

// sessionFiles are the session reports report.session_lifecycle selects
// (inference-perf's defaults: summary and per stage on, per session off).
func (x *ipContext) sessionFiles(rc *SessionReport) []ipFile {
	if x.pass.Sessions == nil {
		return nil
	}
	ss := x.sessionRecords()
	if len(ss) == 0 {
		return nil
	}
	on := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	if rc == nil {
		rc = &SessionReport{}
	}
	var files []ipFile
	if on(rc.Summary, true) {
		files = append(files, ipFile{"summary_session_lifecycle_metrics", x.summarizeSessions(ss)})
	}
	if on(rc.PerStage, true) {
		var stages []int
		for _, s := range ss {
			if !slices.Contains(stages, s.StageID) {
				stages = append(stages, s.StageID)
			}
		}
		for _, st := range stages {
			var in []ipSession
			for _, s := range ss {
				if s.StageID == st {
					in = append(in, s)
				}
			}
			files = append(files, ipFile{fmt.Sprintf("stage_%d_session_lifecycle_metrics", st), append(object{{"stage_metadata", x.stageMetadata(st, in)}}, x.summarizeSessions(in)...)})
		}
	}
	if on(rc.PerSession, false) {
		files = append(files, ipFile{"per_session_lifecycle_metrics", ss})
	}
	return files
}

// stageMetadata is a session stage's runtime, as inference-perf reports
// it: its status, timeout, duration, concurrency and rate.
func (x *ipContext) stageMetadata(st int, ss []ipSession) object {
	var timeout, rate any
	conc := 0
	if st < len(x.pass.Schedule) {
		s := x.pass.Schedule[st]
		conc = s.MaxConcurrency
		if s.Timeout > 0 {
			timeout = s.Timeout.Seconds()
		}
		if s.Rate > 0 {
			rate = s.Rate
		}
	}
	first, last := ss[0].StartTime, ss[0].EndTime
	for _, s := range ss {
		first, last = min(first, s.StartTime), max(last, s.EndTime)
	}
	status := "COMPLETED"
	if timeout != nil && last-first >= timeout.(float64) {
		status = "TIMED_OUT"
	}
	return object{{"stage_id", st}, {"status", status}, {"timeout_configured", timeout}, {"actual_duration", last - first},
		{"concurrent_sessions", conc}, {"session_rate", rate}}
}
