package workload

import "time"

// Request is one request of a running plan, ready to send.
type Request struct {
	Index int // in the order requests were scheduled, from 0
	// Stage is the stage it belongs to, from 0; a sweep's probe is -1.
	Stage int
	User  int // the session's user, or -1
	// Turn is the request's turn in its agent session, from 0 (0 without
	// agent sessions; a graph session's call, its depth).
	Turn int
	// Call is a graph session's call (GraphPlan), 0 otherwise.
	Call int
	// Sample is what to send; a session round's prompt carries its
	// conversation so far.
	Sample Sample
	Due    time.Duration // when the plan scheduled it, from the run's start
	// Send is when its client sends it, from the run's start: its due time,
	// or later when it waited on the client (a --max-concurrency slot, its
	// session's previous round and tool, a place for its session), the
	// moment that wait ended. It comes from due times and the finish times
	// the schedule is told, never from when it was polled, so a caller that
	// polls late (the simulator, at step boundaries) still sends on time.
	Send time.Duration
	// Tool is the tool's time before a session's turn: from its previous
	// answer to when this turn could go (0 for a first turn, and after a
	// failed one, which calls no tool).
	Tool time.Duration
	// Model, when set, is the LoRA adapter to send it to instead of the
	// served model (load.lora_traffic_split).
	Model string
	// SessionID names its session as inference-perf names it
	// (Plan.SessionName), and Round is its 1-based round in that
	// session: inference-perf's user_session and chat_round. Empty and 0
	// where the plan names no sessions.
	SessionID string
	Round     int
}

// Outcome is how a request ended, as its client saw it.
type Outcome struct {
	OK bool
	// Text and IDs are the answer (a session appends them to its
	// conversation), OutputTokens its length.
	Text         string
	IDs          []int
	OutputTokens int
	// ErrorType and Error say why it failed, as inference-perf records
	// it ("HTTP Error 503", "TimeoutError", ...), for circuit breakers.
	ErrorType, Error string
	PromptTokens     int
	// ToolCalls are the tool calls the answer made (a chat's; nil where
	// the client reads none).
	ToolCalls []ToolCall
}

// Cancel is a request in flight to abandon: past its timeout, or with the
// run (a sweep's probe cut off, a circuit breaker tripped).
type Cancel struct {
	Request
	TimedOut bool
}
