package cuda

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// allowNone is a grammar that allows no token (one that allows only EOS
// while min_tokens bans it): every row of it is fully masked.
type allowNone struct{}

func (allowNone) FillMask(m []uint64) { clear(m) }
func (allowNone) Accept(int) bool     { return false }

// TestTenThousandRequestsWithCuts: 10,000 requests of every kind through
// an engine on the GPU (stories260K: greedy, sampled, penalised rows
// sampled on the CPU, masked rows, rows with every token masked, prompts
// sharing prefixes), three in ten cut by their client before, during or
// after their first tokens. Every request ends (a fully masked one with
// an error naming its constraint, the server going on), the engine ends
// with nothing running or waiting and every KV block free, and the
// device's free memory is what it was before the requests to the byte:
// the executor allocates nothing a request.
func TestTenThousandRequestsWithCuts(t *testing.T) {
	d := openTestDevice(t)
	w := testModel(t, "stories260K.gguf")
	const blocks, requests = 512, 10000
	s := Sizes{MaxTokens: 512, MaxSeqs: 64, MaxModelLen: 512, BlockSize: 16}
	l, err := d.Upload(w, s)
	if err != nil {
		t.Fatal(err)
	}
	x, err := l.Start(Config{Sizes: s, NumBlocks: blocks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	// Every decode graph captured first (warm-up and capture of each
	// bucket), so that the run itself allocates nothing that stays.
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	for _, size := range x.buckets {
		b := &engine.Batch{NumTokens: size}
		for i := range size {
			b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{1}, BlockTable: []int{i}, Sample: true, Params: &greedy})
		}
		r := engine.StepResult{Samples: make([]sampling.Result, size)}
		if err := x.Execute(b, &r); err != nil {
			t.Fatal(err)
		}
	}
	free := func() int64 {
		var f int64
		d.run(t, func() (err error) { f, _, err = d.ctx.MemInfo(); return err })
		return f
	}
	before := free()
	e, err := engine.New(engine.Config{MaxNumSeqs: s.MaxSeqs, MaxNumBatchedTokens: s.MaxTokens, MaxModelLen: s.MaxModelLen, BlockSize: s.BlockSize,
		NumBlocks: blocks, EnablePrefixCaching: true, MaxWaiting: requests, EOS: []int{2}}, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	r := rand.New(rand.NewPCG(51, 52))
	var wg sync.WaitGroup
	var mu sync.Mutex
	reasons := map[engine.FinishReason]int{}
	masked := 0
	for i := range requests {
		p := sampling.Defaults()
		p.MaxTokens = 1 + r.IntN(32)
		req := &engine.Request{ID: fmt.Sprint(i), Params: p}
		prefix := r.IntN(4) // four shared prefixes of 20 tokens, or none
		for j := range 20 * min(prefix, 1) {
			req.Prompt = append(req.Prompt, 3+(prefix*97+j*13)%500)
		}
		for range 3 + r.IntN(40) {
			req.Prompt = append(req.Prompt, 3+r.IntN(500))
		}
		switch k := r.IntN(100); {
		case k < 40:
			req.Params.Temperature = 0
		case k < 70:
			req.Params.Temperature, req.Params.TopP, req.Params.TopK, req.Params.MinP = 0.8, 0.9, 40, 0.02
		case k < 85:
			req.Params.RepetitionPenalty, req.Params.Temperature = 1.1, 0.7 // sampled on the CPU
		case k < 98:
			req.Constraint, req.Params.Temperature = allowEven{}, 1
		default:
			req.Constraint = allowNone{}
			masked++
		}
		cut := -1 // outputs read before the client goes away
		if r.IntN(10) < 3 {
			cut = r.IntN(3)
		}
		st, err := e.Submit(req)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var last engine.Output
			for n := 0; ; n++ {
				if n == cut {
					e.Abort(req.ID)
				}
				o, ok := st.Next(context.Background())
				if !ok {
					break
				}
				last = o
			}
			mu.Lock()
			reasons[last.FinishReason]++
			mu.Unlock()
			if _, none := req.Constraint.(allowNone); none && last.FinishReason != engine.FinishError && last.FinishReason != engine.FinishAbort {
				t.Errorf("request %s: every token masked, finished %q", req.ID, last.FinishReason)
			}
		})
	}
	wg.Wait()
	st := e.Stats()
	t.Logf("%d requests (%d with every token masked): finished %v; %d of %d blocks free", requests, masked, reasons, st.KVFree, st.KVBlocks)
	if st.Running != 0 || st.Waiting != 0 || st.KVFree != st.KVBlocks {
		t.Errorf("after every request ended: %d running, %d waiting, %d of %d blocks free", st.Running, st.Waiting, st.KVFree, st.KVBlocks)
	}
	if reasons[engine.FinishAbort] == 0 || reasons[engine.FinishError] == 0 || reasons[engine.FinishLength] == 0 {
		t.Errorf("finish reasons %v: the test meant cuts, masked rows' errors and full lengths", reasons)
	}
	if after := free(); after != before {
		t.Errorf("device memory free: %d bytes before the requests, %d after", before, after)
	}
}
