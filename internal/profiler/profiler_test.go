package profiler

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// nextExec emits last token + 1 at no cost.
type nextExec struct{}

func (nextExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	for i, s := range b.Seqs {
		r.Samples[i] = sampling.Result{Token: s.History[len(s.History)-1] + 1}
	}
	return nil
}

// runLoad serves 8 requests that outgrow the KV cache, so the window holds
// chunked prefills, decode runs and preemptions.
func runLoad(t *testing.T, p *Profiler) {
	t.Helper()
	cfg := engine.Config{MaxNumSeqs: 8, MaxNumBatchedTokens: 16, MaxModelLen: 64, BlockSize: 4, NumBlocks: 24, MaxWaiting: 100, EOS: []int{-1}}
	eng, err := engine.New(cfg, nextExec{}, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	var streams sync.WaitGroup
	for i := range 8 {
		params := sampling.Defaults()
		params.MaxTokens = 30
		prompt := make([]int, 10)
		for j := range prompt {
			prompt[j] = 1000*i + j
		}
		s, err := eng.Submit(&engine.Request{ID: fmt.Sprint("r", i), Prompt: prompt, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		streams.Go(func() {
			for {
				if _, ok := s.Next(context.Background()); !ok {
					return
				}
			}
		})
	}
	streams.Wait()
}

// readTrace opens the one gzipped trace in dir and checks the CPU profile
// beside it.
func readTrace(t *testing.T, dir string) traceFile {
	t.Helper()
	traces, _ := filepath.Glob(filepath.Join(dir, "*.trace.json.gz"))
	cpus, _ := filepath.Glob(filepath.Join(dir, "*.cpu.pprof"))
	if len(traces) != 1 || len(cpus) != 1 {
		t.Fatalf("files %v and %v, want one trace and one CPU profile", traces, cpus)
	}
	if b, err := os.ReadFile(cpus[0]); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("CPU profile %s: %v, %d bytes; want a gzipped pprof", cpus[0], err, len(b))
	}
	f, err := os.Open(traces[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzipped: %v", traces[0], err)
	}
	var tf traceFile
	if err := json.NewDecoder(zr).Decode(&tf); err != nil {
		t.Fatalf("%s is not trace JSON: %v", traces[0], err)
	}
	return tf
}

func TestProfileStructure(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Config{Dir: dir, Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("stop while idle: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil { // ignored, as vLLM
		t.Fatal(err)
	}
	runLoad(t, p)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	tf := readTrace(t, dir)
	steps := int(tf.OtherData["steps"].(float64))
	if steps == 0 {
		t.Fatal("no step recorded")
	}
	checkNesting(t, tf.TraceEvents)
	count := map[string]int{}
	tracks := map[string][]event{}
	for _, e := range tf.TraceEvents {
		count[e.Ph+" "+e.Name]++
		if e.Cat == "request" {
			tracks[e.ID] = append(tracks[e.ID], e)
		}
		if e.Ph == "X" && (e.Dur == nil || *e.Dur < 0 || e.Pid != pidEngine || e.Tid != tidLoop) {
			t.Errorf("engine slice %+v: want a duration on the engine loop track", e)
		}
	}
	for _, name := range []string{"X step", "X schedule", "X execute", "X deliver", "C batch tokens", "C requests", "C kv cache usage"} {
		if count[name] != steps {
			t.Errorf("%d %q events, want one per step (%d)", count[name], name, steps)
		}
	}
	if count["M process_name"] != 2 || count["M thread_name"] != 1 {
		t.Errorf("metadata %v", count)
	}
	if count["n preempted"] == 0 {
		t.Errorf("no preempted instant under KV pressure: %v", count)
	}
	if len(tracks) != 8 {
		t.Fatalf("%d request tracks, want 8", len(tracks))
	}
	for id, evs := range tracks {
		checkTrack(t, id, evs)
	}
}

// checkTrack checks one request's async events: properly nested begin/end
// pairs inside a slice named after the request, with queued, prefill,
// decode and finished in it.
func checkTrack(t *testing.T, id string, evs []event) {
	t.Helper()
	var stack []string
	seen := map[string]bool{}
	last := -1.0
	for _, e := range evs {
		if e.Ts < last {
			t.Errorf("%s: %s %q at %v after %v: out of order", id, e.Ph, e.Name, e.Ts, last)
		}
		last = e.Ts
		seen[e.Name] = true
		switch e.Ph {
		case "b":
			stack = append(stack, e.Name)
		case "e":
			if len(stack) == 0 || stack[len(stack)-1] != e.Name {
				t.Fatalf("%s: end of %q does not close %v", id, e.Name, stack)
			}
			stack = stack[:len(stack)-1]
		case "n":
			if len(stack) != 1 {
				t.Errorf("%s: instant %q outside the request slice", id, e.Name)
			}
		default:
			t.Errorf("%s: phase %q on a request track", id, e.Ph)
		}
	}
	if len(stack) != 0 {
		t.Errorf("%s: unclosed %v", id, stack)
	}
	for _, name := range []string{id, "queued", "prefill", "decode", "finished"} {
		if !seen[name] {
			t.Errorf("%s: no %q on its track", id, name)
		}
	}
}

func TestProfileStopsAtStepLimit(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Config{Dir: dir, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	runLoad(t, p)
	if err := p.Stop(); err != nil { // collects the finished recording
		t.Fatal(err)
	}
	tf := readTrace(t, dir)
	n := 0
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" && e.Name == "step" {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d steps recorded, want the limit of 5", n)
	}
}
