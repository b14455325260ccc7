// Package sim owns the simulated GPU executor: each engine step priced by
// the cost model (internal/costmodel, which it hands each step's sequences
// in its own terms, price.go), and a fake language model whose tokens read
// like English text and go through the real samplers (its vocabulary,
// text and tool calls are this package's alone). It lets the whole server
// run, be load-tested and be observed without a GPU or model weights. Its
// lifecycle is Backend (an executor.Lifecycle).
//
// It implements engine.Executor and may import engine and sampling; it must
// not import net/http, Prometheus, OpenTelemetry, or the server, metrics or
// tracing packages.
package sim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// Config selects what to simulate and how fast.
type Config struct {
	Hardware       string // a hardware profile name, see HardwareNames
	Model          string // a model profile's name, or a config.json's path (profiles.LoadModel)
	TensorParallel int    // GPUs the model is split over; 0 means 1
	// ExpertParallel places a mixture of experts' experts whole on the
	// GPUs (vLLM's --enable-expert-parallel: over TP × DP of them) instead
	// of splitting each over the TP GPUs.
	ExpertParallel bool
	// DataParallel is the data-parallel ranks (vLLM's
	// --data-parallel-size) the experts spread over with ExpertParallel:
	// each GPU holds E/(TP × DP) of them. 0 means 1.
	DataParallel int
	// loaded is the model Model names as the first rank read it: another
	// rank (Backend.Another) shares it rather than reading its
	// config.json again, which may have changed since.
	loaded *profiles.Model

	// TimeScale multiplies every simulated step's duration before sleeping:
	// 1 is real time (a server), 0.1 runs ten times faster, 0 never sleeps
	// (tests, offline runs).
	TimeScale float64

	// HostOverhead is host time per step on top of the profile's, during
	// which the GPU idles (a slow CPU, an engine heavy on Python): it
	// lowers the GPU's activity, not its work.
	HostOverhead time.Duration

	// AsyncScheduling overlaps the host's work for the next step with the
	// GPU's for this one, as vLLM's --async-scheduling does: a step takes
	// the longer of the two instead of their sum.
	AsyncScheduling bool

	// Clock is the engine's; nil means the wall clock. Steps sleep on it.
	Clock engine.Clock

	// Calib, when set, replaces the hardware profile's coefficients (the
	// output of glassbox simulate calibrate).
	Calib *profiles.Calibration

	// Observe, when set, sees every step's cost as the step starts (the
	// calibration reads the terms it fits from it).
	Observe func(start time.Time, c *costmodel.Cost)

	// PlainTokens samples every token as an ordinary word chosen by its
	// position, without the fake language model or the samplers: for runs
	// in virtual time whose requests ignore EOS, where the tokens' values
	// matter to nothing but the prefix cache and the cost is the sampling.
	// A sequence with a constraint (a structured output) still goes through
	// the model, which writes what its grammar allows.
	PlainTokens bool

	// LoRA, when set, serves adapters: each step pays for its adapters'
	// weights and arithmetic, and for copying in those not in a slot.
	LoRA *LoRA

	// ToolCalls is how the fake model calls the tools requests offer
	// (the zero value: never under auto, one call per list).
	ToolCalls ToolCalls

	// Quantization is vLLM's --quantization: "" (the model's bf16) or
	// "fp8" (FP8 linear layers on a GPU with a measured FP8 profile).
	// KVCacheDtype is vLLM's --kv-cache-dtype: "", "auto" or an FP8 type
	// (one byte a K or V element).
	Quantization, KVCacheDtype string

	// Speculative is the engine's --speculative-config. The executor
	// verifies the drafts it is given against its fake language model
	// (each position sampled as a plain step would, a draft accepted when
	// it is the token drawn), or, with rejection_sample_method
	// "synthetic", accepts them at the configured rates. With a draft
	// model (Model a model profile; synthetic acceptance) the executor
	// drafts itself (engine.Capabilities.DraftModel): see draft.go.
	Speculative speculative.Config
}

// Info describes the simulated deployment, for glassbox_executor_info and
// for sizing the KV cache.
type Info struct {
	Executor       string // "sim"
	Hardware       string
	Model          string
	TensorParallel int

	PeakFLOPs       float64 // per GPU, dense BF16
	MemBandwidth    float64 // per GPU, bytes/s
	WeightBytes     float64 // the whole model
	KVBytesPerToken int64   // per GPU
	MaxModelLen     int     // the model's context (profiles.Model.MaxPosition)

	// Draft is the draft model's profile ("" without one), on
	// DraftTensorParallel GPUs; DraftMaxModelLen is the longest sequence
	// it drafts for (its max_position_embeddings, or max_model_len of
	// --speculative-config).
	Draft               string
	DraftTensorParallel int
	DraftMaxModelLen    int
}

// Executor is the simulated GPU. Like every engine.Executor it is called
// from the engine goroutine only; it is not safe for concurrent use.
type Executor struct {
	cost      costmodel.Model
	loaded    *profiles.Model // the model as read, for Backend.Another
	seqs      []costmodel.Seq // scratch: the step as the cost model reads it
	vocab     *Vocab
	gen       *textGen
	sampler   sampling.Sampler
	timeScale float64
	host      time.Duration // Config.HostOverhead
	async     bool          // Config.AsyncScheduling
	plain     bool
	synthetic *speculative.Curve // rejection_sample_method "synthetic"
	observe   func(time.Time, *costmodel.Cost)
	clock     engine.Clock
	deadline  time.Time // when the previous simulated step ends
	lora      *loraState
	draft     *draftModel // a draft model (speculative decoding), or nil
	tools     ToolCalls

	// Scratch reused by every step, so that Execute allocates nothing.
	hist     []int      // history rewritten into candidate indices, for penalties
	local    []int32    // vocabulary id → candidate index, or -1
	fallback *rand.Rand // for a sequence that arrives without an RNG
	mask     []uint64   // a constrained sequence's allowed tokens
	picks    []int      // scratch of constrain
	jsonBuf  []byte     // scratch of jsonRegion: the output's bytes
	verify   []int      // a verified sequence's history with its accepted drafts
	accepted [][]sampling.Result
}

// model is the model cfg names, read once for every data-parallel rank.
func (cfg *Config) model() (profiles.Model, error) {
	if cfg.loaded != nil {
		return *cfg.loaded, nil
	}
	return profiles.LoadModel(cfg.Model)
}

// New builds the executor for cfg.
func New(cfg Config) (*Executor, error) {
	hw, err := profiles.LookupHardware(cfg.Hardware)
	if err != nil {
		return nil, fmt.Errorf("new sim executor: %w", err)
	}
	m, err := cfg.model()
	if err != nil {
		return nil, fmt.Errorf("new sim executor: %w", err)
	}
	loaded := m // before the dtypes: what another rank starts from
	tp := cfg.TensorParallel
	if tp == 0 {
		tp = 1
	}
	if err := m.CheckTP(tp); err != nil {
		return nil, fmt.Errorf("new sim executor: %w", err)
	}
	if math.IsNaN(cfg.TimeScale) || math.IsInf(cfg.TimeScale, 0) || cfg.TimeScale < 0 {
		return nil, fmt.Errorf("new sim executor: time scale must be a finite number >= 0, got %v", cfg.TimeScale)
	}
	if cfg.Calib != nil {
		hw.Calib = *cfg.Calib
	}
	// The dtypes' terms are the calibration's that prices them.
	if err := costmodel.SetDtypes(&hw, &m, cfg.Quantization, cfg.KVCacheDtype); err != nil {
		return nil, fmt.Errorf("new sim executor: %w", err)
	}
	var synthetic *speculative.Curve
	if cfg.Speculative.Enabled() && cfg.Speculative.RejectionSampleMethod == speculative.RejectSynthetic {
		if synthetic, err = speculative.NewCurve(cfg.Speculative.Synthetic); err != nil {
			return nil, fmt.Errorf("new sim executor: %w", err)
		}
	}
	var draft *draftModel
	if cfg.Speculative.Method == speculative.MethodDraftModel {
		if draft, err = newDraft(&cfg.Speculative, hw, &m, tp); err != nil {
			return nil, fmt.Errorf("new sim executor: %w", err)
		}
	}
	v := NewVocab()
	e := &Executor{
		loaded:    &loaded,
		draft:     draft,
		synthetic: synthetic,
		cost:      costmodel.Model{HW: hw, Model: m, TP: tp},
		vocab:     v,
		gen:       newTextGen(v),
		timeScale: cfg.TimeScale,
		host:      cfg.HostOverhead,
		async:     cfg.AsyncScheduling,
		plain:     cfg.PlainTokens,
		observe:   cfg.Observe,
		clock:     cfg.Clock,
		local:     make([]int32, v.Size()),
		fallback:  sampling.NewRNG(0),
		mask:      make([]uint64, (v.Size()+63)/64),
	}
	if e.clock == nil {
		e.clock = engine.WallClock()
	}
	if cfg.ExpertParallel {
		if m.MoE == nil {
			return nil, fmt.Errorf("new sim executor: --enable-expert-parallel: %s has no experts to place", m.Name)
		}
		e.cost.EP = tp * max(1, cfg.DataParallel) // TP × DP
	}
	if l := cfg.LoRA; l != nil {
		if m.MoE != nil || m.MLA != nil {
			return nil, fmt.Errorf("new sim executor: --enable-lora: the simulator prices adapters on dense attention and MLPs, and %s has experts or latent attention", m.Name)
		}
		if l.MaxLoRAs < 1 || l.Rank < 1 {
			return nil, fmt.Errorf("new sim executor: LoRA needs --max-loras and --max-lora-rank of at least 1, got %d and %d", l.MaxLoRAs, l.Rank)
		}
		e.lora = &loraState{cfg: *l}
	}
	if cfg.DataParallel < 0 {
		return nil, fmt.Errorf("new sim executor: --data-parallel-size %d: want 1 or more", cfg.DataParallel)
	}
	if cfg.HostOverhead < 0 {
		return nil, fmt.Errorf("new sim executor: host overhead must not be negative, got %v", cfg.HostOverhead)
	}
	if err := cfg.ToolCalls.Check(); err != nil {
		return nil, fmt.Errorf("new sim executor: %w", err)
	}
	e.tools = cfg.ToolCalls
	for i := range e.local {
		e.local[i] = -1
	}
	return e, nil
}

// Info describes the simulated deployment.
func (e *Executor) Info() Info {
	m := &e.cost.Model
	info := Info{
		Executor:        "sim",
		Hardware:        e.cost.HW.Name,
		Model:           m.Name,
		TensorParallel:  e.cost.TP,
		PeakFLOPs:       e.cost.HW.PeakFLOPs,
		MemBandwidth:    e.cost.HW.MemBandwidth,
		WeightBytes:     m.WeightBytes(),
		KVBytesPerToken: m.KVBytesPerToken(e.cost.TP),
		MaxModelLen:     m.MaxPosition,
	}
	if d := e.draft; d != nil {
		info.Draft, info.DraftTensorParallel = d.cost.Model.Name, d.cost.TP
		info.DraftMaxModelLen = d.cost.Model.MaxPosition
		if n := d.maxLen; n > 0 {
			info.DraftMaxModelLen = n
		}
	}
	return info
}

// Vocab is the tokenizer whose ids Execute produces.
func (e *Executor) Vocab() *Vocab { return e.vocab }

// CostModel is the model that prices each step.
func (e *Executor) CostModel() costmodel.Model { return e.cost }

// StepCost prices a batch's target pass without running it (a draft
// model's passes depend on what verification accepts).
func (e *Executor) StepCost(b *engine.Batch) costmodel.Cost { return e.cost.Step(e.priced(b)) }

// KVCacheBlocks sizes the KV cache as vLLM does: override bytes per GPU
// when positive, else gpuMemoryUtilization of device memory less weights
// and the activation reserve; divided into blocks of blockSize tokens.
// A draft model's weights come out of the memory too, and every block
// holds the draft's K/V beside the target's (vLLM gives both one block
// count). Whether that many blocks can serve is the engine
// configuration's check.
func (e *Executor) KVCacheBlocks(gpuMemoryUtilization float64, override int64, blockSize int) (int, error) {
	bytes, err := e.cost.CacheBytes(gpuMemoryUtilization, override)
	if err != nil {
		return 0, err
	}
	if e.draft == nil {
		return costmodel.KVBlocks(bytes, e.cost.Model, e.cost.TP, blockSize), nil
	}
	weights, kvTok := e.draft.memory()
	if override <= 0 {
		bytes -= int64(weights)
		if bytes <= 0 {
			return 0, fmt.Errorf("size kv cache: the draft model %s's %.1f GB of weights per GPU leave no memory for the KV cache: "+
				"raise --gpu-memory-utilization, or set --kv-cache-memory-bytes", e.draft.cost.Model.Name, weights/1e9)
		}
	}
	if blockSize < 1 {
		return 0, nil
	}
	return int(bytes / (int64(blockSize) * (e.cost.Model.KVBytesPerToken(e.cost.TP) + kvTok))), nil
}

// Execute runs one step: it prices the batch, samples a token for every
// sequence that asks for one, then waits out the rest of the step's
// simulated time, so that sampling's own CPU time is part of the step
// rather than added to it.
func (e *Executor) Execute(b *engine.Batch, r *engine.StepResult) error {
	now := e.clock.Now()
	c := e.cost.Step(e.priced(b))
	if e.lora != nil {
		l := e.lora.step(&e.cost, b)
		c.LoRA, c.LoRALoad = l.Compute, l.Load
		c.Duration += l.Compute + l.Load
		c.FLOPs += l.FLOPs
		c.ReadBytes += l.Bytes
	}
	if err := e.run(b, r); err != nil {
		return fmt.Errorf("execute batch: %w", err)
	}
	if e.draft != nil {
		// The draft's passes follow the target's and depend on what it
		// accepted.
		d, passes, err := e.draft.step(e, b, r)
		if err != nil {
			return fmt.Errorf("execute batch: draft: %w", err)
		}
		c.Draft, c.DraftPasses = d.Duration, passes
		c.Duration += d.Duration
		c.FLOPs += d.FLOPs
		c.ReadBytes += d.ReadBytes
		c.WriteBytes += d.WriteBytes
	}
	if e.observe != nil {
		seen := c // a copy, so that c itself stays on the stack
		e.observe(now, &seen)
	}
	r.FLOPs, r.ReadBytes, r.WriteBytes, r.Activity = c.FLOPs, c.ReadBytes, c.WriteBytes, engine.GPUActivity(c.Activity)
	host := c.Host + e.host
	if e.async {
		host = max(host-c.Duration, 0) // hidden behind the GPU's work
	}
	r.HostTime = time.Duration(float64(host) * e.timeScale)

	if e.timeScale > 0 {
		// Deadlines chain from the previous step's, so that a sleep that
		// overshoots, or the engine's own work between steps, shortens the
		// next step instead of adding up; after an idle gap (more than
		// maxLag since the last deadline) the chain restarts from the
		// step's start. Sampling's time is inside the step.
		start := e.deadline
		if now.Sub(start) > maxLag {
			start = now
		}
		e.deadline = start.Add(time.Duration(float64(c.Duration) * e.timeScale))
		if d := e.deadline.Sub(e.clock.Now()); d > 0 {
			e.clock.Sleep(d)
		}
		// The host's share follows the step; the engine waits it out.
		e.deadline = e.deadline.Add(r.HostTime)
	}
	return nil
}

// run samples a token for every sequence that asks for one, verifying
// its drafts where it has some, and embeds the embedding requests'.
func (e *Executor) run(b *engine.Batch, r *engine.StepResult) error {
	if cap(r.Samples) < len(b.Seqs) {
		r.Samples = append(r.Samples[:cap(r.Samples)], make([]sampling.Result, len(b.Seqs)-cap(r.Samples))...)
	}
	r.Samples = r.Samples[:len(b.Seqs)]
	for i := range b.Seqs {
		s := &b.Seqs[i]
		if !s.Sample {
			continue
		}
		if s.Embed {
			if len(r.Embeddings) < len(b.Seqs) {
				r.Embeddings = make([][]float32, len(b.Seqs))
			}
			r.Embeddings[i] = e.embed(s.History)
			continue
		}
		if len(s.Draft) > 0 {
			if err := e.verifyDrafts(i, s, r); err != nil {
				return err
			}
			continue
		}
		if e.plain && s.Constraint == nil {
			r.Samples[i] = sampling.Result{Token: e.plainToken(s.Pos + len(s.Tokens))}
			continue
		}
		if err := e.sample(s, &r.Samples[i]); err != nil {
			return err
		}
	}
	return nil
}

// embed is the simulated embedding of a prompt: the normalised sum of a
// pseudo-random vector per token (the model's hidden size long), so equal
// texts embed equally and texts that share words lie closer together,
// as a retrieval pipeline under load test expects of real ones.
func (e *Executor) embed(prompt []int) []float32 {
	v := make([]float32, e.cost.Model.Hidden)
	for _, tok := range prompt {
		x := mix(uint64(tok) + 0x51ed)
		for d := range v {
			x = x*6364136223846793005 + 1442695040888963407
			v[d] += float32(int32(x>>32)) / (1 << 31)
		}
	}
	var sum float64
	for _, c := range v {
		sum += float64(c) * float64(c)
	}
	if sum > 0 {
		inv := float32(1 / math.Sqrt(sum))
		for d := range v {
			v[d] *= inv
		}
	}
	return v
}

// plainToken is PlainTokens' token at position pos: an ordinary word
// chosen by the position alone.
func (e *Executor) plainToken(pos int) int {
	return int(e.vocab.words[uint(pos)*2654435761%uint(len(e.vocab.words))].space)
}

// verifyDrafts verifies the i'th sequence's drafts: each position is
// sampled from the fake language model as a plain step would (greedy
// output stays token for token, sampled output keeps its distribution),
// and a draft is accepted when it is the token drawn; the first token that
// differs, or one after every draft, is the step's sample. With synthetic
// acceptance the curve decides how many drafts stand and the fake model
// draws the token after them.
func (e *Executor) verifyDrafts(i int, s *engine.SeqBatch, r *engine.StepResult) error {
	if s.Constraint != nil {
		return fmt.Errorf("sequence %d has drafts and a structured-output constraint", s.Seq)
	}
	if len(r.Accepted) < len(r.Samples) {
		r.Accepted = make([][]sampling.Result, len(r.Samples))
	}
	if len(e.accepted) < len(r.Samples) {
		e.accepted = append(e.accepted, make([][]sampling.Result, len(r.Samples)-len(e.accepted))...)
	}
	acc := e.accepted[i][:0]
	h := s.History
	if len(h) == 0 {
		h = s.Tokens[:len(s.Tokens)-len(s.Draft)]
	}
	e.verify = append(e.verify[:0], h...)
	one := *s
	n := len(s.Draft)
	if e.synthetic != nil {
		rng := e.rng(s.RNG)
		n = e.synthetic.Accept(n, rng.Float64)
	}
	// With PlainTokens the token after drafts[:j] is the word of its
	// position.
	next := s.Pos + len(s.Tokens) - len(s.Draft)
	sample := func(j int, out *sampling.Result) error {
		if e.plain {
			*out = sampling.Result{Token: e.plainToken(next + j)}
			return nil
		}
		one.History = e.verify
		return e.sample(&one, out)
	}
	for j, d := range s.Draft {
		out := &r.Samples[i]
		if err := sample(j, out); err != nil {
			return err
		}
		if e.synthetic != nil {
			if len(acc) == n {
				break
			}
			out.Token = d
		} else if out.Token != d {
			break
		}
		acc = append(acc, sampling.Result{Token: d, Logprob: out.Logprob, Top: slices.Clone(out.Top)})
		e.verify = append(e.verify, d)
	}
	if len(acc) == len(s.Draft) {
		if err := sample(len(acc), &r.Samples[i]); err != nil {
			return err
		}
	}
	e.accepted[i] = acc
	r.Accepted[i] = acc
	return nil
}

// maxLag is how late a step may start after the previous deadline and
// still be charged from that deadline: it covers timer overshoot and the
// engine's bookkeeping, but not an idle engine.
const maxLag = time.Millisecond

// sample draws one sequence's next token from the fake distribution with
// the real sampler, and maps candidate indices back to vocabulary ids.
func (e *Executor) sample(s *engine.SeqBatch, out *sampling.Result) error {
	p := s.Params
	if p == nil {
		return errors.New("sample sequence: no sampling params")
	}
	h := s.History
	if len(h) == 0 {
		h = s.Tokens
	}
	if s.Constraint != nil {
		if tok, ok := e.toolCall(s, e.rng(s.RNG)); ok {
			*out = sampling.Result{Token: tok, Top: out.Top[:0]}
			return nil
		}
	}
	cands, logits := e.gen.candidates(h, s.NumPrompt)
	if len(s.Banned) > 0 {
		for i, id := range cands {
			if slices.Contains(s.Banned, int(id)) {
				logits[i] = float32(math.Inf(-1))
			}
		}
	}
	if s.Constraint != nil && !freeProse(s.Constraint) && e.constrain(s, h, cands, logits, out) {
		return nil
	}

	var hist []int
	if p.RepetitionPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
		hist = e.localHistory(cands, h)
	}
	e.sampler.Sample(logits, p, e.rng(s.RNG), hist, s.NumPrompt, out)
	out.Token = int(cands[out.Token])
	for k := range out.Top {
		out.Top[k].Token = int(cands[out.Top[k].Token])
	}
	return nil
}

// constrain masks the candidates with the sequence's constraint. A JSON
// text the model writes as a model does (jsonwriter.go). Otherwise the fake
// language model knows words, not the grammar: where the grammar allows none of
// its candidates (punctuation, digits, a closing quote), and one step in
// four anyway so that strings end after a few words, it picks among the
// allowed tokens itself, from the sequence's own random source: the end
// of the sequence when allowed, else a quote, else a closing bracket or
// brace, else printable ASCII, else a token that is not a word, else any. It reports whether it picked (out
// is then set).
func (e *Executor) constrain(s *engine.SeqBatch, h []int, cands []int32, logits []float32, out *sampling.Result) bool {
	s.Constraint.FillMask(e.mask)
	if e.endOfCall(s, h, e.rng(s.RNG), out) {
		return true
	}
	any := false
	for i, id := range cands {
		if !e.allowed(int(id)) || slices.Contains(s.Banned, int(id)) {
			logits[i] = float32(math.Inf(-1))
		} else if !math.IsInf(float64(logits[i]), -1) {
			any = true
		}
	}
	rng := e.rng(s.RNG)
	if j, ok := s.Constraint.(jsonOutput); ok && j.JSON() {
		if region, ok := e.jsonRegion(s, h); ok {
			switch c := e.writeJSON(scanJSON(region), rng, any); {
			case c.prose:
				e.plainProse(cands, logits, c.plain)
				return false
			case !c.fallback:
				*out = sampling.Result{Token: c.tok, Top: out.Top[:0]}
				return true
			}
			any = false // the grammar's bytes, below
		}
	}
	if any && rng.IntN(4) != 0 {
		return false
	}
	e.picks = e.picks[:0]
	for _, group := range [][]int{{tokEOS}, {'"'}, {'}', ']'}} {
		for _, id := range group {
			if e.allowed(id) {
				e.picks = append(e.picks, id)
			}
		}
		if len(e.picks) > 0 {
			break
		}
	}
	if len(e.picks) == 0 { // punctuation, digits, letters of true/false/null: compact JSON
		e.picks = e.allowedWhere(func(id int) bool { return id > ' ' && id < 0x7F })
	}
	if len(e.picks) == 0 {
		e.picks = e.allowedWhere(func(id int) bool { return e.vocab.tokWord[id] < 0 })
	}
	if len(e.picks) == 0 {
		e.picks = e.allowedWhere(func(int) bool { return true })
	}
	if len(e.picks) == 0 {
		return false // nothing at all: the sampler's answer stands, and the engine reports it
	}
	tok := e.picks[rng.IntN(len(e.picks))]
	*out = sampling.Result{Token: tok, Logprob: -float32(math.Log(float64(len(e.picks)))), Top: out.Top[:0]}
	return true
}

func (e *Executor) allowed(id int) bool {
	return id>>6 < len(e.mask) && e.mask[id>>6]&(1<<(id&63)) != 0
}

// allowedWhere lists the allowed tokens that keep says to.
func (e *Executor) allowedWhere(keep func(int) bool) []int {
	for w, word := range e.mask {
		for word != 0 {
			id := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if keep(id) {
				e.picks = append(e.picks, id)
			}
		}
	}
	return e.picks
}

// localHistory rewrites h into candidate indices (-1 where a token is not a
// candidate), so that penalties over the history apply to the candidates.
func (e *Executor) localHistory(cands []int32, h []int) []int {
	for i, id := range cands {
		e.local[id] = int32(i)
	}
	e.hist = e.hist[:0]
	for _, t := range h {
		j := int32(-1)
		if t >= 0 && t < len(e.local) {
			j = e.local[t]
		}
		e.hist = append(e.hist, int(j))
	}
	for _, id := range cands {
		e.local[id] = -1
	}
	return e.hist
}

// rng is the sequence's source, or a shared one for a batch built without.
func (e *Executor) rng(r *rand.Rand) *rand.Rand {
	if r == nil {
		return e.fallback
	}
	return r
}
