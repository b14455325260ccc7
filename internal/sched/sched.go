// Package sched decides what runs in each engine step, following vLLM V1's
// scheduler: running sequences first, then waiting ones first come first
// served; chunked prefill under a per-step token budget; at most MaxNumSeqs
// running; when KV blocks run out, the lowest-priority running sequence (the
// latest arrival among equals) is preempted by recompute.
//
// It is a pure state machine over kvcache: no goroutines, no I/O, no clock,
// no metrics. It must not import net/http, Prometheus, OpenTelemetry or any
// package of the serving side; the engine goroutine is its only owner.
package sched

import (
	"fmt"
	"slices"

	"github.com/glassbox-llm/glassbox/internal/kvcache"
)

// Config holds the scheduling limits, named after vLLM's flags.
type Config struct {
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// MaxLoRAs is --max-loras: the most distinct LoRA adapters one step
	// runs; 0 when LoRA is off.
	MaxLoRAs int
	// Lookahead is how many positions past a step's tokens get KV room
	// with them (vLLM's num_lookahead_tokens): a draft model writes K/V
	// for the drafts it proposes after the step. MaxModelLen, when set,
	// caps that room at the context's end.
	Lookahead   int
	MaxModelLen int
}

// Status is where a sequence is in its life.
type Status int

const (
	Waiting Status = iota
	Running
	Finished
	// Loading: its prefix is being loaded from the offload tier (vLLM's
	// WAITING_FOR_REMOTE_KVS); it holds its blocks and is not scheduled
	// until the engine says the load is done (LoadDone).
	Loading
)

func (s Status) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Running:
		return "running"
	case Loading:
		return "loading"
	}
	return "finished"
}

// Seq is one sequence's scheduling state. The engine creates it, appends
// sampled tokens to Tokens and reads the counters; sched moves it between
// queues.
type Seq struct {
	ID     int
	Tokens []int // prompt followed by the outputs so far
	// Spec are draft tokens to verify after Tokens (speculative
	// decoding): the engine sets them between steps, Schedule schedules
	// them with the sequence's last token, and preemption drops them.
	Spec        []int
	NumPrompt   int
	NumComputed int // leading tokens whose KV is in the cache
	Priority    int // larger is preempted first
	Arrival     uint64
	// NoPrefixCache computes every token even where the prefix cache
	// holds them: an embedding needs their hidden states, not their K/V.
	NoPrefixCache bool

	// LoRA is the sequence's adapter, 1 and up; 0 is the base model.
	LoRA int

	Status         Status
	NumPreemptions int
	NumCached      int // prompt tokens served from the prefix cache at the last admission
	// NumExternal are the prompt tokens after NumCached loaded from the
	// offload tier at the last admission (vLLM's external computed tokens).
	NumExternal int

	kv       kvcache.Seq
	schedIdx int // index in the current plan, or -1
}

// BlockTable returns the sequence's physical KV blocks.
func (s *Seq) BlockTable() []int { return s.kv.BlockTable() }

// Drafted records that a draft model's K/V hold q's first n tokens
// (kvcache.Manager.MarkDrafted); DraftedPrefix is where they stop holding
// the computed ones, in whole blocks.
func (s *Scheduler) Drafted(q *Seq, n int)    { s.kv.MarkDrafted(&q.kv, min(n, q.NumComputed)) }
func (s *Scheduler) DraftedPrefix(q *Seq) int { return s.kv.DraftedPrefix(&q.kv, q.NumComputed) }

// Scheduled is one sequence's share of a step.
type Scheduled struct {
	Seq    *Seq
	NumNew int  // tokens to compute, starting at Seq.NumComputed
	Sample bool // the step reaches the end of the known tokens
	// NumSpec is how many of NumNew are drafts (Seq.Spec[:NumSpec]): a
	// budget short of the whole draft schedules its first ones.
	NumSpec int
}

// Plan is a step's schedule. Reuse one Plan across steps to avoid allocation.
type Plan struct {
	Seqs      []Scheduled
	NumTokens int
	Preempted []*Seq
	Admitted  []*Seq // waiting sequences that started (or restarted) this step

	PrefixQueries int // tokens looked up in the prefix cache by admissions
	PrefixHits    int
	// With an offload tier: tokens looked up in it (every admission's, as
	// vLLM's connector counts them), those it held, and the sequences whose
	// load of them started this step (each now Loading).
	ExternalQueries, ExternalHits int
	ExternalLookups               int // admissions that looked the tier up
	Loads                         []*Seq
	// Deferred counts waiting sequences passed over because their LoRA
	// adapter would have exceeded MaxLoRAs (vLLM's skipped waiting
	// requests).
	Deferred int
}

// Scheduler holds the queues. Not safe for concurrent use.
type Scheduler struct {
	cfg     Config
	kv      *kvcache.Manager
	waiting []*Seq // front is next
	running []*Seq // admission order
	loading []*Seq // loading their prefix from the offload tier, in start order
	scratch []*Seq
	arrival uint64
	loras   []int // adapters of the step being planned
}

// New returns an empty scheduler over kv.
func New(cfg Config, kv *kvcache.Manager) (*Scheduler, error) {
	if cfg.MaxNumSeqs < 1 || cfg.MaxNumBatchedTokens < 1 {
		return nil, fmt.Errorf("sched: max-num-seqs and max-num-batched-tokens must be positive, got %d and %d", cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens)
	}
	return &Scheduler{cfg: cfg, kv: kv}, nil
}

// NumWaiting and NumRunning are the queue lengths; the waiting include
// the loading (vLLM's num_requests_waiting counts them), NumLoading
// counts those alone.
func (s *Scheduler) NumWaiting() int { return len(s.waiting) + len(s.loading) }
func (s *Scheduler) NumRunning() int { return len(s.running) }
func (s *Scheduler) NumLoading() int { return len(s.loading) }

// Add queues a new sequence at the back of the waiting queue.
func (s *Scheduler) Add(q *Seq) {
	s.arrival++
	q.Arrival = s.arrival
	q.kv.SetNamespace(uint32(q.LoRA)) // an adapter's KV is its own
	q.Status = Waiting
	q.schedIdx = -1
	s.waiting = append(s.waiting, q)
}

// Finish removes q from whichever queue holds it and frees its blocks.
func (s *Scheduler) Finish(q *Seq) {
	switch q.Status {
	case Running:
		s.running = remove(s.running, q)
	case Waiting:
		s.waiting = remove(s.waiting, q)
	case Loading:
		s.loading = remove(s.loading, q)
	default:
		return
	}
	s.kv.Free(&q.kv) // ends a load in flight too
	q.Status = Finished
}

// LoadDone ends q's load from the offload tier: its blocks hold the
// prefix, and it waits at the front of the queue to run the rest (vLLM
// puts the requests it skipped back in front).
func (s *Scheduler) LoadDone(q *Seq) {
	if q.Status != Loading {
		panic(fmt.Sprintf("BUG: sched: load done for sequence %d, %v", q.ID, q.Status))
	}
	s.kv.EndLoad(&q.kv)
	s.loading = remove(s.loading, q)
	q.Status = Waiting
	s.waiting = append(s.waiting, nil)
	copy(s.waiting[1:], s.waiting)
	s.waiting[0] = q
}

// Loading is the sequences loading their prefix, in start order, for
// reading only.
func (s *Scheduler) Loading() []*Seq { return s.loading }

// Computed records that the step computed sc's tokens.
func (s *Scheduler) Computed(sc Scheduled) {
	sc.Seq.NumComputed += sc.NumNew
}

// Rejected takes back the last n computed tokens of q: drafts the
// verification rejected. Their blocks stay in q's table, to be written
// again by the tokens that replace them (as vLLM's); nothing rejected was
// offered to the prefix cache, which only ever holds whole blocks of
// verified tokens.
func (s *Scheduler) Rejected(q *Seq, n int) {
	if n < 0 || n > q.NumComputed {
		panic(fmt.Sprintf("BUG: sched: rejecting %d of sequence %d's %d computed tokens", n, q.ID, q.NumComputed))
	}
	q.NumComputed -= n
}

// Schedule plans the next step into p.
func (s *Scheduler) Schedule(p *Plan) {
	p.Seqs, p.Preempted, p.Admitted, p.Loads = p.Seqs[:0], p.Preempted[:0], p.Admitted[:0], p.Loads[:0]
	p.NumTokens, p.PrefixQueries, p.PrefixHits, p.Deferred = 0, 0, 0, 0
	p.ExternalQueries, p.ExternalHits, p.ExternalLookups = 0, 0, 0
	budget := s.cfg.MaxNumBatchedTokens

	// Iterate over a snapshot: preemption removes sequences from running.
	s.scratch = append(s.scratch[:0], s.running...)
	for _, q := range s.scratch {
		if budget == 0 {
			break
		}
		if q.Status != Running {
			continue // preempted earlier in this step
		}
		numNew := min(len(q.Tokens)+len(q.Spec)-q.NumComputed, budget)
		if numNew <= 0 {
			panic(fmt.Sprintf("BUG: sched: running sequence %d has nothing to compute", q.ID))
		}
		for q.Status == Running && !s.kv.Allocate(&q.kv, q.Tokens, q.NumComputed, s.room(q.NumComputed, numNew)) {
			budget += s.preempt(p, s.pickVictim())
		}
		if q.Status == Running {
			s.schedule(p, q, numNew)
			budget -= numNew
		}
	}

	// As vLLM: no admissions in a step that had to preempt.
	if len(p.Preempted) == 0 {
		s.admit(p, budget)
		s.unblock(p, budget)
	}
	// Every path must clear the plan indexes: a stale one makes a later
	// preemption withdraw the wrong entry (or index past the plan).
	for _, sc := range p.Seqs {
		sc.Seq.schedIdx = -1
	}
}

// admit starts waiting sequences, first come first served, while the token
// budget, max-num-seqs and the free blocks allow. As vLLM's, a sequence
// whose LoRA adapter would make the step's adapters more than MaxLoRAs is
// passed over (it keeps its place) and the next one is tried.
func (s *Scheduler) admit(p *Plan, budget int) {
	s.loras = s.loras[:0]
	if s.cfg.MaxLoRAs > 0 {
		for _, sc := range p.Seqs {
			s.addLoRA(sc.Seq.LoRA)
		}
	}
	for i := 0; i < len(s.waiting) && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs; {
		q := s.waiting[i]
		if s.cfg.MaxLoRAs > 0 && q.LoRA > 0 && len(s.loras) >= s.cfg.MaxLoRAs && !slices.Contains(s.loras, q.LoRA) {
			p.Deferred++
			i++
			continue
		}
		// A sequence whose load ended holds its prefix already.
		resumed := q.NumComputed > 0
		cached, loaded := q.NumComputed, 0
		if !resumed && !q.NoPrefixCache {
			cached = s.kv.LookupPrefix(&q.kv, q.Tokens)
			loaded = s.kv.LookupHost(&q.kv, q.Tokens, cached)
		}
		if loaded > 0 {
			// As vLLM's async KV load: the sequence takes its blocks and
			// waits for the copy, spending none of this step's budget.
			if !s.kv.StartLoad(&q.kv, q.Tokens, cached, loaded) {
				break
			}
			s.waiting = slices.Delete(s.waiting, i, i+1)
			s.admitted(p, q, cached, loaded)
			q.NumComputed = cached + loaded
			q.Status = Loading
			s.loading = append(s.loading, q)
			p.Loads = append(p.Loads, q)
			continue
		}
		numNew := min(len(q.Tokens)-cached, budget)
		if !s.kv.Allocate(&q.kv, q.Tokens, cached, s.room(cached, numNew)) {
			break
		}
		if i == 0 {
			s.waiting = s.waiting[1:]
		} else {
			s.waiting = slices.Delete(s.waiting, i, i+1)
		}
		s.addLoRA(q.LoRA)
		if !resumed {
			s.admitted(p, q, cached, 0)
			q.NumComputed = cached
		}
		q.Status = Running
		s.running = append(s.running, q)
		p.Admitted = append(p.Admitted, q)
		s.schedule(p, q, numNew)
		budget -= numNew
	}
}

// unblock frees, when nothing runs or loads and nothing was admitted, the
// blocks of the latest waiting sequence that holds some (its load ended)
// and admits again, until one runs: loaded sequences that hold every free
// block, none able to get the rest, would otherwise wait for each other
// for ever. The freed one is counted preempted and waits at the back.
func (s *Scheduler) unblock(p *Plan, budget int) {
	for len(p.Seqs) == 0 && len(s.running) == 0 && len(s.loading) == 0 {
		var v *Seq
		for _, q := range s.waiting {
			if q.NumComputed > 0 && (v == nil || q.Arrival > v.Arrival) {
				v = q
			}
		}
		if v == nil {
			return
		}
		// To the back of the queue, behind the sequences whose blocks it
		// frees for: taken first again, it would load into them again.
		s.kv.Free(&v.kv)
		v.NumComputed = 0
		v.NumPreemptions++
		p.Preempted = append(p.Preempted, v)
		s.waiting = append(remove(s.waiting, v), v)
		s.admit(p, budget)
	}
}

// admitted counts a sequence's first look-ups since it was queued (or
// preempted): cached tokens from the prefix cache, loaded more from the
// offload tier.
func (s *Scheduler) admitted(p *Plan, q *Seq, cached, loaded int) {
	q.NumCached = min(cached, q.NumPrompt)
	q.NumExternal = min(loaded, q.NumPrompt-q.NumCached)
	p.PrefixQueries += len(q.Tokens)
	p.PrefixHits += cached
	if s.kv.HostBlocks() > 0 {
		p.ExternalQueries += len(q.Tokens)
		p.ExternalHits += loaded
		p.ExternalLookups++
	}
}

// room is how many tokens past computed to allocate for numNew: the
// step's own and the lookahead, up to the context's end.
func (s *Scheduler) room(computed, numNew int) int {
	n := numNew + s.cfg.Lookahead
	if s.cfg.MaxModelLen > 0 {
		n = max(numNew, min(n, s.cfg.MaxModelLen-computed))
	}
	return n
}

func (s *Scheduler) schedule(p *Plan, q *Seq, numNew int) {
	q.schedIdx = len(p.Seqs)
	end := q.NumComputed + numNew
	p.Seqs = append(p.Seqs, Scheduled{Seq: q, NumNew: numNew, Sample: end >= len(q.Tokens), NumSpec: max(0, end-len(q.Tokens))})
	p.NumTokens += numNew
	// Only verified tokens are offered to the prefix cache: drafts may be
	// rejected.
	s.kv.Cache(&q.kv, q.Tokens, min(end, len(q.Tokens)))
}

func (s *Scheduler) addLoRA(id int) {
	if id > 0 && !slices.Contains(s.loras, id) {
		s.loras = append(s.loras, id)
	}
}

// Running and Waiting are the queues, in order, for reading only.
func (s *Scheduler) Running() []*Seq { return s.running }
func (s *Scheduler) Waiting() []*Seq { return s.waiting }

// pickVictim returns the running sequence to preempt: the largest priority
// value, the latest arrival among equals.
func (s *Scheduler) pickVictim() *Seq {
	v := s.running[0]
	for _, q := range s.running[1:] {
		if q.Priority > v.Priority || (q.Priority == v.Priority && q.Arrival > v.Arrival) {
			v = q
		}
	}
	return v
}

// preempt frees q's blocks and puts it at the front of the waiting queue to
// be recomputed. When q was already scheduled this step, its entry is
// withdrawn and the returned tokens go back to the budget.
func (s *Scheduler) preempt(p *Plan, q *Seq) (refund int) {
	if q.schedIdx >= 0 {
		refund = p.Seqs[q.schedIdx].NumNew
		p.NumTokens -= refund
		p.Seqs = append(p.Seqs[:q.schedIdx], p.Seqs[q.schedIdx+1:]...)
		for i := q.schedIdx; i < len(p.Seqs); i++ {
			p.Seqs[i].Seq.schedIdx = i
		}
		q.schedIdx = -1
	}
	s.running = remove(s.running, q)
	s.kv.Free(&q.kv)
	q.NumComputed = 0
	q.Spec = q.Spec[:0] // drafted for the context just dropped
	q.NumPreemptions++
	q.Status = Waiting
	s.waiting = append(s.waiting, nil)
	copy(s.waiting[1:], s.waiting)
	s.waiting[0] = q
	p.Preempted = append(p.Preempted, q)
	return refund
}

func indexOf(qs []*Seq, q *Seq) int {
	for i, x := range qs {
		if x == q {
			return i
		}
	}
	return -1
}

func remove(qs []*Seq, q *Seq) []*Seq {
	i := indexOf(qs, q)
	if i < 0 {
		panic(fmt.Sprintf("BUG: sched: sequence %d is not in its queue", q.ID))
	}
	copy(qs[i:], qs[i+1:])
	qs[len(qs)-1] = nil
	return qs[:len(qs)-1]
}

// LoadingBlocks is how many blocks q's load from the offload tier reads
// (0 unless q is Loading).
func (q *Seq) LoadingBlocks() int { return q.kv.LoadingBlocks() }
