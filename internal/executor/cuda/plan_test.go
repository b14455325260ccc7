package cuda

import (
	"math"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// planExecutor is an executor with host buffers only: plan and pack run
// without a GPU.
func planExecutor(graphs bool) *Executor {
	s := Sizes{MaxTokens: 256, MaxSeqs: 16, MaxModelLen: 512, BlockSize: 16}
	c := model.Config{Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 1000, Layers: 2, Hidden: 4096}
	e := &Executor{cfg: Config{Sizes: s, NumBlocks: 40}, sizes: s, w: &devWeights{c: c}, graphs: graphs,
		shape: attnShape{heads: 32, kvHeads: 8, headDim: 128, blockSize: 16}, dev: &Device{Info: &cuda.Device{SMs: 132}}}
	e.ks = kernelsFor(h100, e.shape)
	e.buckets = graphBuckets(16)
	words := inputWords(s, 32)
	e.bufs = &stepBufs{host: make([]int32, words), maskWords: (c.Vocab + 63) / 64}
	e.bufs.maskHost = make([]uint64, s.MaxSeqs*e.bufs.maskWords)
	return e
}

type allowEven struct{}

func (allowEven) FillMask(m []uint64) {
	for i := range m {
		m[i] = 0x5555555555555555
	}
}
func (allowEven) Accept(int) bool { return true }

func TestPlanOrdersAndPacks(t *testing.T) {
	e := planExecutor(false)
	greedy, hot := sampling.Defaults(), sampling.Defaults()
	greedy.Temperature = 0
	hot.Temperature, hot.TopK, hot.TopP = 0.7, 40, 0.9
	pen := hot
	pen.RepetitionPenalty = 1.1
	b := &engine.Batch{Seqs: []engine.SeqBatch{
		{Seq: 7, Tokens: []int{5, 6, 7}, Pos: 16, BlockTable: []int{3, 9}, Sample: true, Params: &greedy},               // a prefill chunk after a cached block
		{Seq: 8, Tokens: []int{42}, Pos: 33, BlockTable: []int{1, 2, 4}, Sample: true, Params: &hot, Banned: []int{3}},  // decode
		{Seq: 9, Tokens: []int{11, 12}, Pos: 0, BlockTable: []int{5}, Sample: false, Params: &greedy},                   // a chunk that does not sample
		{Seq: 10, Tokens: []int{99}, Pos: 0, BlockTable: []int{6}, Sample: true, Params: &pen, Constraint: allowEven{}}, // decode, on the CPU sampler
	}, NumTokens: 7}
	if err := e.plan(b); err != nil {
		t.Fatal(err)
	}
	p, h, l := &e.p, e.bufs.host, e.p.lay
	if !slices.Equal(p.order, []int{1, 3, 0, 2}) || p.nd != 2 || p.n != 7 || p.np != 2 || p.bucket != 0 {
		t.Fatalf("order %v, %d decode, %d tokens, %d prefill, bucket %d", p.order, p.nd, p.n, p.np, p.bucket)
	}
	if got := h[l.tokens : l.tokens+7]; !slices.Equal(got, []int32{42, 99, 5, 6, 7, 11, 12}) {
		t.Errorf("tokens %v", got)
	}
	if got := h[l.slots : l.slots+7]; !slices.Equal(got, []int32{4*16 + 1, 6 * 16, 9*16 + 0, 9*16 + 1, 9*16 + 2, 5 * 16, 5*16 + 1}) {
		t.Errorf("slots %v", got)
	}
	if got := h[l.ctx : l.ctx+2]; !slices.Equal(got, []int32{34, 1}) {
		t.Errorf("decode contexts %v", got)
	}
	if h[l.maxb] != 3 || !slices.Equal(h[l.dtables:l.dtables+3], []int32{1, 2, 4}) {
		t.Errorf("table width %d, first decode table %v", h[l.maxb], h[l.dtables:l.dtables+3])
	}
	items := h[l.items : l.items+8]
	if !slices.Equal(items, []int32{0, 2, 3, 16, 1, 5, 2, 0}) {
		t.Errorf("prefill items %v (sequence, first row, tokens, first position)", items)
	}
	// Sampled rows in device order: seq 8 (row 0), seq 10 (row 1), seq 7
	// (its last token, row 4); seq 9 does not sample.
	if !slices.Equal(p.rowSeq, []int{1, 3, 0}) || !slices.Equal(h[l.rows:l.rows+3], []int32{0, 1, 4}) {
		t.Errorf("sampled rows %v at token rows %v", p.rowSeq, h[l.rows:l.rows+3])
	}
	if !slices.Equal(p.hostRow, []bool{false, true, false}) || !p.anyHost {
		t.Errorf("host-sampled rows %v", p.hostRow)
	}
	if math.Float32frombits(uint32(h[l.temp])) != 0.7 || h[l.topk] != 40 || math.Float32frombits(uint32(h[l.topp])) != 0.9 {
		t.Errorf("row 0's parameters: temp %v top-k %d top-p %v", math.Float32frombits(uint32(h[l.temp])), h[l.topk], math.Float32frombits(uint32(h[l.topp])))
	}
	if u := math.Float32frombits(uint32(h[l.u])); !(u >= 0 && u < 1) || h[l.u+2] != 0 {
		t.Errorf("uniform numbers %v (drawn for the random row only)", h[l.u:l.u+3])
	}
	// Row 0 bans token 3 through its mask: every token but 3.
	m := e.bufs.maskHost[:e.bufs.maskWords]
	if h[l.maskrow] != 0 || m[0] != ^uint64(1<<3) || m[1] != ^uint64(0) || h[l.maskrow+2] != -1 {
		t.Errorf("mask rows %v, row 0's first words %x %x", h[l.maskrow:l.maskrow+3], m[0], m[1])
	}
}

func TestPlanPadsGraphBatches(t *testing.T) {
	e := planExecutor(true)
	greedy := sampling.Defaults()
	greedy.Temperature = 0
	var b engine.Batch
	for i := range 5 {
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: i, Tokens: []int{i + 1}, Pos: 20 + i, BlockTable: []int{2 * i, 2*i + 1}, Sample: true, Params: &greedy})
	}
	b.NumTokens = 5
	if err := e.plan(&b); err != nil {
		t.Fatal(err)
	}
	p, h, l := &e.p, e.bufs.host, e.p.lay
	if p.bucket != 8 || p.m != 5 {
		t.Fatalf("bucket %d, %d sampled rows; want 8 and 5", p.bucket, p.m)
	}
	// The graph's layout depends on its batch alone: where the tables
	// start must not move with their width.
	if want := newLayout(8, 8, 8, 1, 0, 0); l.dtables != want.dtables || l.maxb != want.maxb {
		t.Errorf("tables at %d (width at %d), the graph's at %d (%d)", l.dtables, l.maxb, want.dtables, want.maxb)
	}
	for k := 5; k < 8; k++ {
		if h[l.slots+k] != int32(40*16) || h[l.qrow+k] != int32(k) || h[l.ctx+k] != 0 || h[l.maskrow+k] != -1 {
			t.Errorf("padding row %d: slot %d, qrow %d, context %d, mask %d", k, h[l.slots+k], h[l.qrow+k], h[l.ctx+k], h[l.maskrow+k])
		}
	}
}

// TestPlanRefusesWhatItCannotRun: a batch past the executor's bounds is
// refused (what it does not run at all, drafts and embeddings, the engine
// refuses at admission: TestBackendLifecycle).
func TestPlanRefusesWhatItCannotRun(t *testing.T) {
	e := planExecutor(false)
	greedy := sampling.Defaults()
	for _, tt := range []struct {
		name string
		s    engine.SeqBatch
	}{
		{"block out of range", engine.SeqBatch{Tokens: []int{1}, BlockTable: []int{40}, Sample: true, Params: &greedy}},
		{"table too short", engine.SeqBatch{Tokens: []int{1}, Pos: 16, BlockTable: []int{0}, Sample: true, Params: &greedy}},
		{"token outside the vocabulary", engine.SeqBatch{Tokens: []int{1000}, BlockTable: []int{0}, Sample: true, Params: &greedy}},
		{"past max-model-len", engine.SeqBatch{Tokens: []int{1}, Pos: 512, BlockTable: make([]int, 40), Sample: true, Params: &greedy}},
	} {
		if err := e.plan(&engine.Batch{Seqs: []engine.SeqBatch{tt.s}, NumTokens: len(tt.s.Tokens)}); err == nil {
			t.Errorf("%s: planned, want an error", tt.name)
		} else {
			t.Logf("%s: %v", tt.name, err)
		}
	}
}

func TestGraphBuckets(t *testing.T) {
	for _, tt := range []struct {
		most int
		want []int
	}{{1, []int{1}}, {3, []int{1, 2, 3}}, {16, []int{1, 2, 4, 8, 16}}, {20, []int{1, 2, 4, 8, 16, 20}}, {512, nil}} {
		got := graphBuckets(tt.most)
		if tt.want != nil && !slices.Equal(got, tt.want) {
			t.Errorf("graphBuckets(%d) = %v, want %v", tt.most, got, tt.want)
		}
		if got[len(got)-1] != tt.most || !slices.IsSorted(got) {
			t.Errorf("graphBuckets(%d) = %v: must rise to %d", tt.most, got, tt.most)
		}
		for n := 1; n <= tt.most; n++ {
			if b := bucketFor(got, n); b < n {
				t.Fatalf("bucketFor(%v, %d) = %d", got, n, b)
			}
		}
	}
}
