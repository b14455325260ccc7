package cpu

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// stepKernels keeps each step's kernels (copied: the event's slice is
// reused) and busy time.
type stepKernels struct {
	mu      sync.Mutex
	kernels [][]engine.KernelTime
	busy    []time.Duration
}

func (s *stepKernels) ObserveStep(ev *engine.StepEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kernels = append(s.kernels, slices.Clone(ev.Kernels))
	s.busy = append(s.busy, ev.ExecuteTime)
}
func (s *stepKernels) ObserveFinished(*engine.FinishedEvent) {}

func (s *stepKernels) take() ([][]engine.KernelTime, []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, b := s.kernels, s.busy
	s.kernels, s.busy = nil, nil
	return k, b
}

// phase is an expected phase and its parent's index in the pre-order
// list (-1: the step's).
type phase struct {
	name   string
	parent int
}

// forwardPhases is a forward pass's phases in the order they begin.
func forwardPhases(layers, parent int, out []phase) []phase {
	out = append(out, phase{model.PhaseEmbed, parent})
	for l := range layers {
		li := len(out)
		out = append(out, phase{fmt.Sprint("layer ", l), parent})
		for _, n := range []string{model.PhaseAttnNorm, model.PhaseQKV, model.PhaseRoPE, model.PhaseAttention, model.PhaseOProj, model.PhaseFFNNorm} {
			out = append(out, phase{n, li})
		}
		mi := len(out)
		out = append(out, phase{model.PhaseMLP, li})
		for _, n := range []string{model.PhaseGateUp, model.PhaseSiLUMul, model.PhaseDown} {
			out = append(out, phase{n, mi})
		}
	}
	return append(out, phase{model.PhaseLMHead, parent})
}

// checkStep checks one step's kernels against the phases expected:
// the same names in the same order, each inside its parent and after its
// previous sibling, all inside the step's busy time.
func checkStep(t *testing.T, step int, ks []engine.KernelTime, busy time.Duration, want []phase) {
	t.Helper()
	var got []string
	for _, k := range ks {
		got = append(got, k.Name)
	}
	var names []string
	for _, p := range want {
		names = append(names, p.name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("step %d: phases %q, want %q", step, got, names)
	}
	end := func(k engine.KernelTime) time.Duration { return k.Start + k.Duration }
	last := map[int]int{} // parent → its last child so far
	for i, k := range ks {
		p := want[i].parent
		lo, hi := time.Duration(0), busy
		if p >= 0 {
			lo, hi = ks[p].Start, end(ks[p])
		}
		if k.Duration < 0 || k.Start < lo || end(k) > hi {
			t.Errorf("step %d: %s at [%v, %v] outside its parent's [%v, %v]", step, k.Name, k.Start, end(k), lo, hi)
		}
		if prev, ok := last[p]; ok && k.Start < end(ks[prev]) {
			t.Errorf("step %d: %s starts at %v, before %s ends at %v", step, k.Name, k.Start, ks[prev].Name, end(ks[prev]))
		}
		last[p] = i
	}
}

// TestProfileTimesThePhases: while a profile records, every step of the
// CPU executor reports its forward pass's phases (per layer: norms, the
// QKV, output and MLP matmuls, RoPE with the K/V write, attention; the LM
// head), sampling and the draft model's passes, nested in time as they
// ran; before and after, nothing.
func TestProfileTimesThePhases(t *testing.T) {
	w := randomModel(t, "tiny", 1)
	for _, c := range []struct {
		name  string
		draft *model.Weights
	}{{"plain", nil}, {"draft model", randomModel(t, "tiny", 2)}} {
		t.Run(c.name, func(t *testing.T) {
			var recording atomic.Bool
			cfg := engine.Config{MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxModelLen: 256, BlockSize: 16, NumBlocks: 64,
				MaxWaiting: 100, EOS: []int{-1}, Profiling: recording.Load}
			if c.draft != nil {
				cfg.Speculative = speculative.Config{Method: speculative.MethodDraftModel, Model: "draft.gguf", NumSpeculativeTokens: 2}
			}
			obs := &stepKernels{}
			e := startDrafting(t, w, c.draft, cfg, obs)
			prompt := []int{5, 6, 7, 8, 9, 10, 11, 12}
			generate(t, e, "before", prompt, 4)
			if ks, _ := obs.take(); slices.ContainsFunc(ks, func(k []engine.KernelTime) bool { return len(k) > 0 }) {
				t.Errorf("kernels reported before the profile: %v", ks)
			}
			recording.Store(true)
			generate(t, e, "during", prompt, 6)
			ks, busy := obs.take()
			if len(ks) == 0 {
				t.Fatal("no step while recording")
			}
			layers := w.Config.Layers
			drafted := 0
			for i, k := range ks {
				want := forwardPhases(layers, -1, nil)
				want = append(want, phase{phaseSample, -1})
				if c.draft != nil && k[len(k)-1].Name != phaseSample {
					// The draft's passes nest in "draft": one or more forward
					// passes of its own.
					d := len(want)
					want = append(want, phase{phaseDraft, -1})
					drafted++
					for len(want) < len(k) {
						want = forwardPhases(c.draft.Config.Layers, d, want)
					}
				}
				checkStep(t, i, k, busy[i], want)
			}
			if c.draft != nil && drafted == 0 {
				t.Error("no step drafted while recording")
			}
			recording.Store(false)
			generate(t, e, "after", prompt, 4)
			if ks, _ := obs.take(); slices.ContainsFunc(ks, func(k []engine.KernelTime) bool { return len(k) > 0 }) {
				t.Errorf("kernels reported after the profile: %d steps", len(ks))
			}
		})
	}
}
