package server

import (
	"net/http"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// TimingHeader opts a generation request into the per-choice timing
// breakdown: with "Glassbox-Timing: true" (or 1), the response carries a
// "timing" array; when streaming, each choice's final chunk carries its
// entry. A header rather than a body field keeps the OpenAI request schema
// untouched, and every client library can set one.
const TimingHeader = "Glassbox-Timing"

// ChoiceTiming is where one choice's time went, in seconds, from the
// engine's clock with vLLM's definitions: queue is admission to first
// scheduled, prefill is first scheduled to first token, decode is first to
// last token, inference is prefill plus decode, TTFT and e2e count from the
// request's arrival at the server. Zero means the phase never happened.
type ChoiceTiming struct {
	Index         int     `json:"index"`
	QueueTime     float64 `json:"queue_time"`
	PrefillTime   float64 `json:"prefill_time"`
	DecodeTime    float64 `json:"decode_time"`
	InferenceTime float64 `json:"inference_time"`
	TTFT          float64 `json:"time_to_first_token"`
	E2E           float64 `json:"e2e_latency"`
	Preemptions   int     `json:"preemptions"`
}

func newChoiceTiming(index int, t *engine.Timing) ChoiceTiming {
	return ChoiceTiming{
		Index: index, QueueTime: t.QueueTime(), PrefillTime: t.PrefillTime(), DecodeTime: t.DecodeTime(),
		InferenceTime: t.InferenceTime(), TTFT: t.TTFT(), E2E: t.E2E(), Preemptions: t.Preemptions,
	}
}

// readHeaders takes what a job needs from the HTTP request's headers: the
// W3C trace context, carried untouched to the engine's observers, and the
// timing opt-in.
func (j *job) readHeaders(r *http.Request) {
	j.traceParent = r.Header.Get("traceparent")
	j.traceState = r.Header.Get("tracestate")
	j.wantTiming, _ = strconv.ParseBool(r.Header.Get(TimingHeader))
}

// timings lists every choice's breakdown, or nil when not asked for.
func (j *job) timings() []ChoiceTiming {
	if !j.wantTiming {
		return nil
	}
	ts := make([]ChoiceTiming, len(j.choices))
	for i := range j.choices {
		ts[i] = newChoiceTiming(i, &j.choices[i].timing)
	}
	return ts
}

// chunkTiming is the entry for a streamed chunk: the choice's breakdown on
// its final chunk when asked for, nil otherwise.
func (j *job) chunkTiming(ev *event) []ChoiceTiming {
	if !j.wantTiming || !ev.out.Finished {
		return nil
	}
	return []ChoiceTiming{newChoiceTiming(ev.index, &ev.out.Timing)}
}

// The response types with the timing array added at the top level.
type (
	timedCompletion struct {
		openai.CompletionResponse
		Timing []ChoiceTiming `json:"timing,omitempty"`
	}
	timedChat struct {
		openai.ChatCompletionResponse
		Timing []ChoiceTiming `json:"timing,omitempty"`
	}
	timedChatChunk struct {
		openai.ChatCompletionChunk
		Timing []ChoiceTiming `json:"timing,omitempty"`
	}
)
