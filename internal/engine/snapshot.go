package engine

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/sched"
)

// Snapshot is the engine's inside at one moment between steps: what
// /debug/engine shows. The engine goroutine builds it, so it is consistent;
// the caller owns it.
type Snapshot struct {
	Time        time.Time      `json:"time"`
	Config      SnapshotConfig `json:"scheduler_config"`
	Steps       uint64         `json:"steps"`
	Preemptions uint64         `json:"preemptions"`
	Running     []RequestState `json:"running"`
	Waiting     []RequestState `json:"waiting"`
	Blocks      BlockPoolState `json:"block_pool"`
}

// SnapshotConfig is the scheduling and cache configuration.
type SnapshotConfig struct {
	MaxNumSeqs          int  `json:"max_num_seqs"`
	MaxNumBatchedTokens int  `json:"max_num_batched_tokens"`
	MaxModelLen         int  `json:"max_model_len"`
	BlockSize           int  `json:"block_size"`
	NumBlocks           int  `json:"num_blocks"`
	EnablePrefixCaching bool `json:"enable_prefix_caching"`
	MaxWaiting          int  `json:"max_waiting"`
}

// RequestState is one running or waiting sequence.
type RequestState struct {
	ID    string `json:"id"`
	Group string `json:"group,omitempty"`
	// State is "running", "waiting" (never scheduled yet) or "preempted"
	// (waiting to be recomputed).
	State          string  `json:"state"`
	PromptTokens   int     `json:"prompt_tokens"`
	PromptComputed int     `json:"prompt_tokens_computed"` // prompt tokens whose KV is in the cache
	OutputTokens   int     `json:"output_tokens"`
	MaxTokens      int     `json:"max_tokens"`
	BlocksHeld     int     `json:"blocks_held"`
	CachedTokens   int     `json:"prefix_cache_hit_tokens"` // at the last admission
	Preemptions    int     `json:"preemptions"`
	Priority       int     `json:"priority"`
	AgeSeconds     float64 `json:"age_seconds"` // since arrival at the server
}

// BlockPoolState is the KV block pool. Free includes Cached: free blocks
// that still hold reusable prefix-cache content until evicted.
type BlockPoolState struct {
	Total  int     `json:"total"`
	Free   int     `json:"free"`
	Cached int     `json:"cached"`
	InUse  int     `json:"in_use"`
	Usage  float64 `json:"usage"`
}

// Snapshot asks the engine goroutine for a snapshot, taken between two
// steps (or at once when idle). It fails with ErrClosed after shutdown
// (the *DeadError once the engine died) and with ctx's error when the
// engine does not answer in time.
func (e *Engine) Snapshot(ctx context.Context) (*Snapshot, error) {
	reply := make(chan *Snapshot, 1)
	e.mu.Lock()
	if e.closed {
		err := e.closedErr()
		e.mu.Unlock()
		return nil, err
	}
	e.snaps = append(e.snaps, reply)
	e.signal()
	e.mu.Unlock()
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Closed reports whether the engine has shut down.
func (e *Engine) Closed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// answerSnapshots builds one snapshot for every waiting caller. Engine
// goroutine only.
func (e *Engine) answerSnapshots(replies []chan *Snapshot) {
	if len(replies) == 0 {
		return
	}
	s := e.snapshot(e.clock.Now())
	for _, r := range replies {
		r <- s // buffered, one slot per caller
	}
}

func (e *Engine) snapshot(now time.Time) *Snapshot {
	c := &e.cfg
	s := &Snapshot{
		Time: now, Steps: e.steps, Preemptions: e.preempt,
		Config: SnapshotConfig{
			MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens, MaxModelLen: c.MaxModelLen,
			BlockSize: c.BlockSize, NumBlocks: c.NumBlocks, EnablePrefixCaching: c.EnablePrefixCaching, MaxWaiting: c.MaxWaiting,
		},
		Running: []RequestState{}, Waiting: []RequestState{},
		Blocks: BlockPoolState{Total: e.kv.NumBlocks(), Free: e.kv.NumFree(), Cached: e.kv.NumFreeCached(),
			InUse: e.kv.NumBlocks() - e.kv.NumFree(), Usage: e.kv.Usage()},
	}
	// The scheduler's queue order is its own; sched.Seq.Arrival numbers
	// admissions, which is the order both queues mostly follow.
	seqs := make([]*reqState, 0, len(e.byID))
	for _, rs := range e.byID {
		seqs = append(seqs, rs)
	}
	slices.SortFunc(seqs, func(a, b *reqState) int { return cmp.Compare(a.seq.Arrival, b.seq.Arrival) })
	for _, rs := range seqs {
		q := &rs.seq
		st := RequestState{
			ID: rs.req.ID, Group: rs.req.Group, State: q.Status.String(),
			PromptTokens: q.NumPrompt, PromptComputed: min(q.NumComputed, q.NumPrompt),
			OutputTokens: rs.numOutput, MaxTokens: rs.req.Params.MaxTokens,
			BlocksHeld: len(q.BlockTable()), CachedTokens: q.NumCached,
			Preemptions: q.NumPreemptions, Priority: q.Priority,
			AgeSeconds: interval(rs.req.Arrival, now),
		}
		switch {
		case q.Status == sched.Running:
			s.Running = append(s.Running, st)
		case q.NumPreemptions > 0:
			st.State = "preempted"
			s.Waiting = append(s.Waiting, st)
		default:
			s.Waiting = append(s.Waiting, st)
		}
	}
	return s
}
