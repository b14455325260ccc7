package profiler

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// The trace's processes and threads: pid 1 is the engine (its loop on tid
// 1, plus the counter tracks), pid 2 holds one async track per request.
const (
	pidEngine   = 1
	tidLoop     = 1
	pidRequests = 2
)

// event is one Chrome trace event (the JSON Trace Event Format, which
// Perfetto and chrome://tracing read). Ts and Dur are microseconds from the
// start of the recording.
type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// traceFile is the file's top level.
type traceFile struct {
	TraceEvents     []event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
}

// writeTrace writes rec as a gzipped trace to path.
func writeTrace(path string, rec *recording, cfg Config) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	bw := bufio.NewWriter(f)
	zw := gzip.NewWriter(bw)
	tf := traceFile{
		TraceEvents: buildEvents(rec), DisplayTimeUnit: "ms",
		OtherData: map[string]any{
			"producer": "glassbox", "version": cfg.Version, "start": rec.start.Format(time.RFC3339Nano),
			"steps": len(rec.steps), "max_steps": cfg.MaxSteps, "max_duration": cfg.MaxDuration.String(),
		},
	}
	err = json.NewEncoder(zw).Encode(tf)
	for _, c := range []func() error{zw.Close, bw.Flush, f.Close} {
		if cerr := c(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("write trace %s: %w", path, err)
	}
	return nil
}

// tick is the trace's time resolution: 1/8 µs. A multiple of it is exact
// in binary, so a reader that turns microseconds into nanoseconds by
// multiplying and truncating (Perfetto's JSON importer) gets exactly the
// times written, and slices that nest here nest there: with plain
// nanoseconds, 1.001 µs reads back as 1000 ns and a child could end
// after its parent.
const tick = 125 * time.Nanosecond

// buildEvents turns the recording into trace events sorted by time.
func buildEvents(rec *recording) []event {
	at := func(t time.Time) time.Duration { return max(t.Sub(rec.start), 0) / tick * tick }
	us := func(t time.Time) float64 { return float64(at(t)/tick) / 8 }
	// dur is the span from t for d, on the same grid as its start: ends
	// round as starts do, so a part that ends inside its parent still
	// does.
	dur := func(t time.Time, d time.Duration) *float64 {
		v := float64((at(t.Add(d))-at(t))/tick) / 8
		return &v
	}
	evs := []event{
		{Name: "process_name", Ph: "M", Pid: pidEngine, Args: map[string]any{"name": "glassbox engine"}},
		{Name: "thread_name", Ph: "M", Pid: pidEngine, Tid: tidLoop, Args: map[string]any{"name": "engine loop"}},
		{Name: "process_name", Ph: "M", Pid: pidRequests, Args: map[string]any{"name": "requests"}},
	}
	for _, s := range rec.steps {
		ts := us(s.start)
		nseq := s.seqs[1] - s.seqs[0]
		deliver := s.end.Sub(s.start) - s.schedule - s.execute
		exec := s.start.Add(s.schedule)
		evs = append(evs,
			event{Name: "step", Cat: "engine", Ph: "X", Ts: ts, Dur: dur(s.start, s.end.Sub(s.start)), Pid: pidEngine, Tid: tidLoop,
				Args: map[string]any{"seqs": nseq, "tokens": s.tokens, "prefill_tokens": s.prefillTokens, "decode_seqs": s.decodeSeqs}},
			event{Name: "schedule", Cat: "engine", Ph: "X", Ts: ts, Dur: dur(s.start, s.schedule), Pid: pidEngine, Tid: tidLoop},
			event{Name: "execute", Cat: "engine", Ph: "X", Ts: us(exec), Dur: dur(exec, s.execute), Pid: pidEngine, Tid: tidLoop,
				Args: map[string]any{"tokens": s.tokens}})
		evs = appendKernels(evs, rec.kernels[s.kernels[0]:s.kernels[1]], exec, s.execute, us, dur)
		evs = append(evs,
			event{Name: "deliver", Cat: "engine", Ph: "X", Ts: us(exec.Add(s.execute)), Dur: dur(exec.Add(s.execute), max(deliver, 0)), Pid: pidEngine, Tid: tidLoop},
			event{Name: "batch tokens", Ph: "C", Ts: ts, Pid: pidEngine,
				Args: map[string]any{"prefill": s.prefillTokens, "decode": s.decodeSeqs}},
			event{Name: "requests", Ph: "C", Ts: us(s.end), Pid: pidEngine, Args: map[string]any{"running": s.running, "waiting": s.waiting}},
			event{Name: "kv cache usage", Ph: "C", Ts: us(s.end), Pid: pidEngine, Args: map[string]any{"usage": s.kvUsage}},
		)
	}
	evs = append(evs, requestEvents(rec, us)...)
	// Metadata first, then by time; the stable sort keeps each track's
	// begin/end pairs in the order they were laid out.
	slices.SortStableFunc(evs, func(a, b event) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.Ts, b.Ts)
	})
	return evs
}

// appendKernels lays a step's timed parts inside its execute slice, which
// begins at exec and lasts execute: a part is clipped to it (the
// executor's clock and the engine's may differ by the call's overhead,
// and a virtual engine clock by anything), which keeps nested parts
// nested and the others apart. Parents come before their children, as
// the executor reported them, so equal starts sort parent first.
func appendKernels(evs []event, ks []engine.KernelTime, exec time.Time, execute time.Duration,
	us func(time.Time) float64, dur func(time.Time, time.Duration) *float64) []event {
	for _, k := range ks {
		from := min(max(k.Start, 0), execute)
		to := min(max(k.Start+k.Duration, from), execute)
		t := exec.Add(from)
		evs = append(evs, event{Name: k.Name, Cat: "kernel", Ph: "X", Ts: us(t), Dur: dur(t, to-from), Pid: pidEngine, Tid: tidLoop})
	}
	return evs
}

func rank(e event) int {
	if e.Ph == "M" {
		return 0
	}
	return 1
}
