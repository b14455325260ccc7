package profiler

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

// recording is the window's raw data, in the order the engine reported it.
type recording struct {
	start, end time.Time
	maxSteps   int
	full       chan struct{} // closed when maxSteps steps are in

	steps     []step
	seqs      []engine.StepSeq    // every step's sequences, back to back; step.seqs indexes it
	kernels   []engine.KernelTime // every step's timed parts, back to back; step.kernels indexes it
	preempted []string
	finished  []finish
}

// step is one engine iteration.
type step struct {
	start, end            time.Time
	schedule, execute     time.Duration
	tokens, prefillTokens int
	decodeSeqs            int
	running, waiting      int
	kvUsage               float64
	seqs, preempted       [2]int // [from, to) in recording.seqs and .preempted
	kernels               [2]int // [from, to) in recording.kernels
}

// finish is one request's end.
type finish struct {
	id                                    string
	reason                                engine.FinishReason
	queued, firstScheduled, end           time.Time
	promptTokens, cachedTokens, generated int
}

func (r *recording) isFull() bool { return len(r.steps) >= r.maxSteps }

func (r *recording) addStep(ev *engine.StepEvent) {
	s := step{
		start: ev.Start, end: ev.End, schedule: ev.ScheduleTime, execute: ev.ExecuteTime,
		tokens: ev.NumTokens, prefillTokens: ev.NumPrefillTokens, decodeSeqs: ev.NumDecodeSeqs,
		running: ev.Running, waiting: ev.Waiting, kvUsage: ev.KVUsage,
	}
	s.seqs[0] = len(r.seqs)
	r.seqs = append(r.seqs, ev.Seqs...) // ids are immutable strings: copying the slice keeps them
	s.seqs[1] = len(r.seqs)
	s.preempted[0] = len(r.preempted)
	r.preempted = append(r.preempted, ev.Preempted...)
	s.preempted[1] = len(r.preempted)
	s.kernels[0] = len(r.kernels)
	r.kernels = append(r.kernels, ev.Kernels...) // names are the executor's constants
	s.kernels[1] = len(r.kernels)
	r.steps = append(r.steps, s)
}

func (r *recording) addFinished(f *engine.FinishedEvent) {
	r.finished = append(r.finished, finish{
		id: f.ID, reason: f.Reason, queued: f.Queued, firstScheduled: f.FirstScheduled, end: f.Finished,
		promptTokens: f.PromptTokens, cachedTokens: f.CachedTokens, generated: f.GenerationTokens,
	})
}
