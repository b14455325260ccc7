package replica

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// fakeLifecycle records what replica asks of it, in order; failAt names
// the step that fails.
type fakeLifecycle struct {
	mu     sync.Mutex
	calls  []string
	failAt string
	blocks int // KVBlocks' answer
	caps   engine.Capabilities
	closed int
	exec   *fakeExec
}

func (f *fakeLifecycle) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if call == "close" {
		f.closed++
	}
	if call == f.failAt {
		return errors.New(call + " failed")
	}
	return nil
}

func (f *fakeLifecycle) Capabilities() engine.Capabilities { f.record("capabilities"); return f.caps }

func (f *fakeLifecycle) Load(l executor.Limits) (*executor.Spec, error) {
	if err := f.record("load"); err != nil {
		return nil, err
	}
	v := sim.NewVocab()
	return &executor.Spec{Name: "fake", Vocab: v, EOS: []int{v.EOS()}, Limits: l.Or(executor.Limits{MaxModelLen: 64, MaxNumSeqs: 4, MaxNumBatchedTokens: 64})}, nil
}

func (f *fakeLifecycle) KVBlocks(executor.KVMemory) (int, error) {
	return f.blocks, f.record("kvblocks")
}

func (f *fakeLifecycle) Start(int) (*executor.Started, error) {
	if err := f.record("start"); err != nil {
		return nil, err
	}
	f.exec = &fakeExec{life: f}
	return &executor.Started{Executor: f.exec}, nil
}

func (f *fakeLifecycle) Close() { f.record("close") }

func (f *fakeLifecycle) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// fakeExec samples EOS at once, and notes a step after its lifecycle
// closed.
type fakeExec struct {
	life       *fakeLifecycle
	afterClose bool
	steps      int
}

func (x *fakeExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	x.life.mu.Lock()
	x.afterClose = x.afterClose || x.life.closed > 0
	x.life.mu.Unlock()
	x.steps++
	for i, s := range b.Seqs {
		if s.Sample {
			r.Samples[i] = sampling.Result{Token: 2}
		}
	}
	return nil
}

// build is New with a fake executor, loaded as chooseExecutor loads the
// one it picks.
func build(cfg Config, life executor.Lifecycle) (*Replica, error) {
	wall := prepare(&cfg)
	ecfg := features(&cfg)
	x, err := load(life, &cfg, &ecfg)
	if err != nil {
		return nil, err
	}
	return assemble(cfg, ecfg, x, wall)
}

// TestLifecycleOrder: replica drives every executor through the same
// steps: what it runs is asked first, then Load, KVBlocks, Start; Close
// comes once, after the engine has stopped calling Execute. Whichever
// step fails, the executor is closed once and nothing after that step
// runs; a configuration the executor does not run is refused by name
// before anything is loaded.
func TestLifecycleOrder(t *testing.T) {
	base := Config{BlockSize: DefaultBlockSize, MaxQueuedRequests: DefaultMaxQueuedRequests}
	life := &fakeLifecycle{blocks: 16}
	r, err := build(base, life)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	p := sampling.Defaults()
	p.MaxTokens = 2
	s, err := r.Engine.Submit(&engine.Request{ID: "a", Prompt: []int{5, 6, 7}, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	for o, ok := s.Next(t.Context()); ok && !o.Finished; o, ok = s.Next(t.Context()) {
	}
	r.Close()
	if got, want := life.called(), []string{"capabilities", "load", "kvblocks", "start", "close"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if life.exec.steps == 0 || life.exec.afterClose {
		t.Errorf("%d steps, one after Close: %v", life.exec.steps, life.exec.afterClose)
	}

	spec := base
	spec.Speculative = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 2, PromptLookupMin: 1, PromptLookupMax: 2}
	badParser := base
	badParser.ToolCallParser = "no-such-parser"
	for _, c := range []struct {
		name string
		cfg  Config
		life *fakeLifecycle
		want []string
		err  string
	}{
		{"refused", spec, &fakeLifecycle{blocks: 16, caps: engine.Capabilities{Name: "the fake"}}, []string{"capabilities", "close"},
			"--speculative-config: the fake does not run speculative decoding"},
		{"load fails", base, &fakeLifecycle{blocks: 16, failAt: "load"}, []string{"capabilities", "load", "close"}, "load failed"},
		{"sizing fails", base, &fakeLifecycle{blocks: 16, failAt: "kvblocks"}, []string{"capabilities", "load", "kvblocks", "close"}, "kvblocks failed"},
		{"too few blocks", base, &fakeLifecycle{blocks: 2}, []string{"capabilities", "load", "kvblocks", "close"}, "max-model-len 64 needs 4 KV blocks"},
		{"start fails", base, &fakeLifecycle{blocks: 16, failAt: "start"}, []string{"capabilities", "load", "kvblocks", "start", "close"}, "start failed"},
		{"after start", badParser, &fakeLifecycle{blocks: 16}, []string{"capabilities", "load", "kvblocks", "start", "close"}, "--tool-call-parser"},
	} {
		_, err := build(c.cfg, c.life)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
		}
		if got := c.life.called(); !slices.Equal(got, c.want) {
			t.Errorf("%s: calls %v, want %v", c.name, got, c.want)
		}
	}
}
