package cuda

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/fakecuda"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// The executor's host side on a fake board (internal/fakecuda), without
// a GPU: which memory is allocated and freed by whom, and on which stream
// copies and kernels go. The fake computes nothing, so nothing here
// checks a number: the GPU tests do (scripts/gpu-check.sh).

// fakeDevice opens the fake board as a Device, with the real kernels'
// PTX loaded into it (the fake reads each kernel's parameters from it).
func fakeDevice(t *testing.T, cfg fakecuda.Config) (*Device, *fakecuda.GPU) {
	t.Helper()
	gpu := fakecuda.New(cfg)
	drv, err := cuda.NewDriver(gpu.Driver())
	if err != nil {
		t.Fatal(err)
	}
	d, err := openDevice(drv, DeviceConfig{}, func(c *cuda.Context, _ string, _ []string) (*cuda.BLASLt, error) {
		return cuda.NewBLASLt(c, gpu.BLASLt(), "fake cuBLASLt")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		if f := gpu.Faults(); len(f) > 0 {
			t.Errorf("the fake board saw misuses:\n%s", strings.Join(f, "\n"))
		}
		if live := gpu.Live(); len(live) > 0 {
			t.Errorf("left on the board after the device closed: %v", live)
		}
	})
	return d, gpu
}

// tinyModel is a small random model with typ weights, of head dim 64:
// the fast attention kernels (checked at start) and decode graphs run.
func tinyModel(t *testing.T, typ gguf.TensorType) *model.Weights {
	t.Helper()
	shape := model.Shape{Name: "tiny64", Arch: "llama", Hidden: 128, Layers: 2, Heads: 2, KVHeads: 1, FFN: 256, Vocab: 256,
		Context: 512, RopeBase: 10000, NormEps: 1e-5}
	var buf bytes.Buffer
	if err := model.WriteRandom(&buf, model.RandomSpec{Shape: shape, Type: typ, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var tinySizes = Sizes{MaxTokens: 64, MaxSeqs: 4, MaxModelLen: 128, BlockSize: 16}

// step runs a prefill of n tokens for sequence 0, then two decode steps
// of it, through e (a graph bucket's first step runs eagerly, its second
// is captured and replayed).
func step(t *testing.T, e *Executor, n int) {
	t.Helper()
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = 1 + i
	}
	table := []int{0, 1, 2, 3}
	var r engine.StepResult
	r.Samples = make([]sampling.Result, 1)
	for _, b := range []*engine.Batch{
		{NumTokens: n, Seqs: []engine.SeqBatch{{Seq: 0, Tokens: prompt, BlockTable: table, Sample: true, Params: &greedy}}},
		{NumTokens: 1, Seqs: []engine.SeqBatch{{Seq: 0, Tokens: []int{5}, Pos: n, BlockTable: table, Sample: true, Params: &greedy}}},
		{NumTokens: 1, Seqs: []engine.SeqBatch{{Seq: 0, Tokens: []int{6}, Pos: n + 1, BlockTable: table, Sample: true, Params: &greedy}}},
	} {
		if err := e.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCopiesOrderedWithKernels: every copy, memset, launch and GEMM of
// a model's life (the upload with its Q8_0 dequantisation, the start-up
// check of the attention kernels, a prefill, a decode step replayed from
// a graph) is queued on the device's one stream, so each kernel runs
// after the copies before it; none goes to the legacy default stream,
// which the executor's non-blocking stream does not wait for (issue 42's
// defect 8: the weights were copied there, and the dequantise kernel
// could read them before they arrived).
func TestCopiesOrderedWithKernels(t *testing.T) {
	d, gpu := fakeDevice(t, fakecuda.Config{})
	l, err := d.Upload(tinyModel(t, gguf.Q8_0), tinySizes)
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8})
	if err != nil {
		t.Fatal(err)
	}
	step(t, e, 20)
	streams := map[cuda.CUstream]bool{}
	seen := map[string]int{}
	for _, op := range gpu.Ops() {
		switch op.Call {
		case "cuMemFree_v2", "cuStreamBeginCapture_v2", "cuStreamEndCapture":
			continue
		}
		name := op.Call
		if op.Kernel != "" {
			name = op.Kernel
		}
		seen[name]++
		if op.Stream == 0 {
			t.Errorf("%s on the legacy default stream", name)
			continue
		}
		streams[op.Stream] = true
	}
	if len(streams) != 1 {
		t.Errorf("work on %d streams, want the device's one", len(streams))
	}
	for _, want := range []string{"cuMemcpyHtoDAsync_v2", "dequant_q8_0", "cuMemcpyDtoHAsync_v2", "cublasLtMatmul", "sample", "cuGraphLaunch"} {
		if seen[want] == 0 {
			t.Errorf("no %s among the ops: the test no longer covers it (seen %v)", want, seen)
		}
	}
}

// TestCloseOrders: the executor frees only what it owns (its KV cache,
// graphs and events), the loaded model its weights and step buffers, the
// device the rest; each Close may come in any order, and twice
// (issue 42's "one owner for each thing": Executor.Close freed the loaded
// weights, and Bench called it).
func TestCloseOrders(t *testing.T) {
	w := tinyModel(t, gguf.F16)
	for _, order := range []string{"executor, model, device", "model, executor, device", "device, model, executor", "twice each"} {
		t.Run(order, func(t *testing.T) {
			d, gpu := fakeDevice(t, fakecuda.Config{})
			base := gpu.DeviceBytes() // the device's own: cuBLASLt's workspace
			l, err := d.Upload(w, tinySizes)
			if err != nil {
				t.Fatal(err)
			}
			loaded := gpu.DeviceBytes()
			e, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8})
			if err != nil {
				t.Fatal(err)
			}
			step(t, e, 10)
			switch order {
			case "executor, model, device":
				if e2, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8}); err == nil {
					e2.Close()
					t.Error("a second executor started on a model while the first runs: they would share its step buffers")
				}
				e.Close()
				if got := gpu.DeviceBytes(); got != loaded {
					t.Fatalf("after the executor closed: %d bytes on the device, want the model's %d: it freed what it borrowed, or kept its own", got, loaded)
				}
				// The model is still whole: a second executor runs on it.
				e2, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8})
				if err != nil {
					t.Fatal(err)
				}
				step(t, e2, 10)
				e2.Close()
				l.Close()
				if got := gpu.DeviceBytes(); got != base {
					t.Errorf("after the model closed: %d bytes on the device, want the device's own %d", got, base)
				}
				d.Close()
			case "model, executor, device":
				l.Close() // closes e first: it borrows l's memory
				if got := gpu.DeviceBytes(); got != base {
					t.Errorf("after the model closed: %d bytes, want %d", got, base)
				}
				if err := e.Execute(&engine.Batch{}, &engine.StepResult{}); err == nil || !strings.Contains(err.Error(), "closed") {
					t.Errorf("Execute after its model closed: %v, want an error saying it is closed", err)
				}
				e.Close()
				d.Close()
			case "device, model, executor":
				d.Close()
				l.Close()
				e.Close()
				if _, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8}); err == nil {
					t.Error("Start on a model whose device closed")
				}
			case "twice each":
				e.Close()
				e.Close()
				l.Close()
				l.Close()
				d.Close()
				d.Close()
			}
			if got := gpu.DeviceBytes(); got != 0 {
				t.Errorf("%d bytes on the device after everything closed", got)
			}
		})
	}
}

// TestBenchLeavesTheModelLoaded: Bench's executor closes at its end and
// the model it ran on stays whole for the next run.
func TestBenchLeavesTheModelLoaded(t *testing.T) {
	d, gpu := fakeDevice(t, fakecuda.Config{})
	cfg := BenchConfig{Prompt: 8, Gen: 2, Batch: 2, Reps: 1}
	l, err := d.Upload(tinyModel(t, gguf.F16), BenchSizes(cfg, 16))
	if err != nil {
		t.Fatal(err)
	}
	loaded := gpu.DeviceBytes()
	for run := range 2 {
		if _, err := Bench(l, cfg, run == 1); err != nil {
			t.Fatalf("bench run %d: %v", run, err)
		}
		if got := gpu.DeviceBytes(); got != loaded {
			t.Fatalf("after bench run %d: %d bytes on the device, want the loaded model's %d", run, got, loaded)
		}
	}
}

// TestExecuteAfterCloseFails: a closed executor refuses a step without
// touching its freed buffers.
func TestExecuteAfterCloseFails(t *testing.T) {
	d, gpu := fakeDevice(t, fakecuda.Config{})
	l, err := d.Upload(tinyModel(t, gguf.F16), tinySizes)
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.Start(Config{Sizes: tinySizes, NumBlocks: 8, Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	before := len(gpu.Ops())
	greedy := sampling.Defaults()
	b := &engine.Batch{NumTokens: 1, Seqs: []engine.SeqBatch{{Seq: 0, Tokens: []int{1}, BlockTable: []int{0}, Sample: true, Params: &greedy}}}
	r := engine.StepResult{Samples: make([]sampling.Result, 1)}
	if err := e.Execute(b, &r); err == nil {
		t.Fatal("Execute on a closed executor succeeded")
	}
	if ops := gpu.Ops()[before:]; len(ops) > 0 {
		t.Errorf("a refused step still queued %d ops, the first %s", len(ops), ops[0].Call)
	}
}
