package costmodel

import (
	"math/rand/v2"
	"testing"
)

// TestWindowAndChunkCounts holds the closed forms of a prefill chunk's
// (query, key) pairs under a sliding window and chunked attention to a
// count token by token.
func TestWindowAndChunkCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n, pos := 1+rng.IntN(600), rng.IntN(2000)
		for _, g := range []attnGroup{{layers: 1}, {layers: 1, window: 1 + rng.IntN(300)}, {layers: 1, chunk: 1 + rng.IntN(300)}} {
			var causal, context float64
			for i := range n {
				p := pos + i
				first := 0 // the first key token p sees
				switch {
				case g.window > 0:
					first = max(0, p-g.window+1)
				case g.chunk > 0:
					first = p - p%g.chunk
				}
				own := p - max(first, pos) + 1
				causal += float64(own)
				context += float64(p - first + 1 - own)
				if want := p - first + 1; i == 0 && n == 1 && g.keys(p) != want {
					t.Fatalf("%+v at %d: %d keys, want %d", g, p, g.keys(p), want)
				}
			}
			c, x, _ := g.prefill(n, pos)
			if c != causal || x != context {
				t.Fatalf("%+v, %d tokens from %d: %v causal and %v context pairs, want %v and %v", g, n, pos, c, x, causal, context)
			}
		}
	}
}

// TestMLAAttention prices DeepSeek's latent attention as vLLM runs it: a
// decode reads one latent of 576 elements a key and layer on every GPU
// whatever the TP, and attends in the latent space (2·heads·(512 + 64 +
// 512) FLOPs a key and layer); a prefill attends with full heads and
// lifts its cached context's latents first.
func TestMLAAttention(t *testing.T) {
	for _, tp := range []int{1, 2, 4} {
		cm := costModel(t, "h200", "deepseek-v2-lite", tp)
		s := cm.attnShape()
		if s.pairDecode != 2*16*(512+64+512) || s.pairPrefill != 2*16*(128+64+128) || s.lift != 2*512*16*(128+128) {
			t.Errorf("pairs %v decode, %v prefill, lift %v", s.pairDecode, s.pairPrefill, s.lift)
		}
		var w attnWork
		s.add(&w, &Seq{Tokens: 1, Pos: 999, NumPrompt: 10}, true)
		if want := 1000.0 * 27 * 576 * 2; w.readDecode != want || w.decode != 1000*27*s.pairDecode {
			t.Errorf("TP %d: decode at 1000 read %v bytes, want %v; %v FLOPs", tp, w.readDecode, want, w.decode)
		}
		var p attnWork
		s.add(&p, &Seq{Tokens: 100, Pos: 500, NumPrompt: 600}, false)
		if p.lift != 500*27*s.lift || p.context != 100*500*27*s.pairPrefill {
			t.Errorf("TP %d: a chunk after 500 cached tokens lifts %v FLOPs, attends %v", tp, p.lift, p.context)
		}
	}
}

// TestWindowedDecode: gpt-oss's sliding layers read their 128 keys, the
// full ones every key; Llama 4's chunked layers their chunk's.
func TestWindowedDecode(t *testing.T) {
	cm := costModel(t, "h200", "gpt-oss-120b", 1)
	s := cm.attnShape()
	var w attnWork
	s.add(&w, &Seq{Tokens: 1, Pos: 9999, NumPrompt: 10}, true)
	if want := (18*10000.0 + 18*128) * s.kvLayer; w.readDecode != want {
		t.Errorf("gpt-oss decode at 10000: %v bytes, want %v", w.readDecode, want)
	}
	scout := costModel(t, "h200", "llama-4-scout-17b-16e-fp8", 2)
	s = scout.attnShape()
	w = attnWork{}
	s.add(&w, &Seq{Tokens: 1, Pos: 8999, NumPrompt: 10}, true)
	if want := (12*9000.0 + 36*(8999%8192+1)) * s.kvLayer; w.readDecode != want {
		t.Errorf("Scout decode at 9000: %v bytes, want %v", w.readDecode, want)
	}
}
