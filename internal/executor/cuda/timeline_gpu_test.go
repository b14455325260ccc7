package cuda

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// TestKernelTimelineOnTheGPU: a prefill and a decode step timed (graphs
// on, but a timed decode step runs eagerly): every layer's span holds its
// kernels and GEMMs, every part lies inside the step's GPU time and
// nests; untimed, the decode step replays its graph and reports nothing.
func TestKernelTimelineOnTheGPU(t *testing.T) {
	d := openTestDevice(t)
	w := testModel(t, "stories260K.gguf")
	e := startExecutor(t, d, w, 32, false)
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	table := []int{3, 7}
	prompt := []int{1, 403, 407, 261, 378, 9, 77}
	steps := []engine.Batch{
		{Seqs: []engine.SeqBatch{{Seq: 0, Tokens: prompt, BlockTable: table, Sample: true, Params: &greedy}}, NumTokens: len(prompt)},
		{Seqs: []engine.SeqBatch{{Seq: 0, Tokens: []int{5}, Pos: len(prompt), BlockTable: table, Sample: true, Params: &greedy}}, NumTokens: 1},
	}
	e.TimeKernels(true)
	for i := range steps {
		b := &steps[i]
		r := engine.StepResult{Samples: make([]sampling.Result, 1)}
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
		if e.p.bucket != 0 {
			t.Errorf("step %d replayed graph %d while timed", i, e.p.bucket)
		}
		checkGPUTimeline(t, i, r.Kernels, r.DeviceTime, w.Config.Layers)
	}
	e.TimeKernels(false)
	r := engine.StepResult{Samples: make([]sampling.Result, 1)}
	steps[1].Seqs[0].Pos++
	if err := e.Execute(&steps[1], &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Kernels) != 0 || e.p.bucket == 0 {
		t.Errorf("untimed decode: %d kernels, graph %d; want none and a graph", len(r.Kernels), e.p.bucket)
	}
}

func checkGPUTimeline(t *testing.T, step int, ks []engine.KernelTime, busy time.Duration, layers int) {
	t.Helper()
	var lines []string
	for _, k := range ks {
		lines = append(lines, fmt.Sprintf("%s +%v %v", k.Name, k.Start, k.Duration))
	}
	t.Logf("step %d on the GPU for %v:\n%s", step, busy, strings.Join(lines, "\n"))
	const slack = 2 * time.Microsecond // events' resolution is ~0.5 µs
	names := map[string]int{}
	var open []engine.KernelTime
	for _, k := range ks {
		names[k.Name]++
		end := k.Start + k.Duration
		if k.Start < 0 || k.Duration < 0 || end > busy+slack {
			t.Errorf("step %d: %s at [%v, %v] outside the step's %v", step, k.Name, k.Start, end, busy)
		}
		for len(open) > 0 && open[len(open)-1].Start+open[len(open)-1].Duration <= k.Start {
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			if p := open[len(open)-1]; end > p.Start+p.Duration+slack {
				t.Errorf("step %d: %s ends at %v, after %s which holds it ends at %v", step, k.Name, end, p.Name, p.Start+p.Duration)
			}
		}
		open = append(open, k)
	}
	for l := range layers {
		if names[fmt.Sprint("layer ", l)] != 1 {
			t.Errorf("step %d: layer %d's span %d times", step, l, names[fmt.Sprint("layer ", l)])
		}
	}
	for _, role := range []string{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"} {
		if names[role] != layers {
			t.Errorf("step %d: %d %s GEMMs, want one a layer", step, names[role], role)
		}
	}
	if names["qkv_rope"] != layers || names["lm_head"] != 1 || names["sample"] != 1 {
		t.Errorf("step %d: qkv_rope %d, lm_head %d, sample %d", step, names["qkv_rope"], names["lm_head"], names["sample"])
	}
	if !slices.ContainsFunc(ks, func(k engine.KernelTime) bool { return strings.HasPrefix(k.Name, "rmsnorm") }) {
		t.Errorf("step %d: no RMSNorm kernel", step)
	}
}
