package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// attnCase is a batch over a paged cache filled with random K/V, with
// the CPU's attention (model.Runner.Attend) as the reference.
type attnCase struct {
	c      model.Config
	seqs   []model.Seq
	n      int // tokens
	q      []float32
	want   []float32
	kc, vc []float32 // the GPU's layout, fp16 values
	blocks int
	tables [][]int
}

const attnB = 16

// newAttnCase makes sequences with the given cached prefixes and tokens
// this step (1: decode).
func newAttnCase(t *testing.T, c model.Config, prefix, tokens []int) *attnCase {
	c.Layers, c.Hidden = 1, c.Heads*c.HeadDim
	r := rand.New(rand.NewPCG(uint64(c.HeadDim), uint64(len(prefix))))
	a := &attnCase{c: c}
	for i := range prefix {
		a.blocks += (prefix[i] + tokens[i] + attnB - 1) / attnB
	}
	perm := r.Perm(a.blocks)
	kvd := c.KVDim()
	a.kc = make([]float32, a.blocks*attnB*kvd)
	a.vc = make([]float32, a.blocks*attnB*kvd)
	run := model.NewRunner(&model.Weights{Config: c}, a.blocks, attnB, 4)
	defer run.Close()
	next := 0
	for i := range prefix {
		ctx := prefix[i] + tokens[i]
		nb := (ctx + attnB - 1) / attnB
		table := perm[next : next+nb]
		next += nb
		a.tables = append(a.tables, table)
		for p := range ctx {
			k, v := randoms(r, kvd, 1), randoms(r, kvd, 1)
			run.KV.WriteKV(0, table, p, k, v)
			for h := range c.KVHeads {
				at := ((table[p/attnB]*c.KVHeads+h)*attnB + p%attnB) * c.HeadDim
				for j := range c.HeadDim {
					a.kc[at+j] = tensor.RoundF16(k[h*c.HeadDim+j])
					a.vc[at+j] = tensor.RoundF16(v[h*c.HeadDim+j])
				}
			}
		}
		a.seqs = append(a.seqs, model.Seq{Tokens: make([]int, tokens[i]), Pos: prefix[i], BlockTable: table})
		a.n += tokens[i]
	}
	qd := c.Heads * c.HeadDim
	a.q = randoms(r, a.n*qd, 1)
	a.want = make([]float32, a.n*qd)
	if err := run.Attend(0, a.seqs, a.q, a.want); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *attnCase) shape() attnShape {
	return attnShape{heads: a.c.Heads, kvHeads: a.c.KVHeads, headDim: a.c.HeadDim, blockSize: attnB}
}

// flatTables is the tables as rows of maxb ints.
func (a *attnCase) flatTables() ([]int32, int) {
	maxb := 0
	for _, tb := range a.tables {
		maxb = max(maxb, len(tb))
	}
	flat := make([]int32, len(a.tables)*maxb)
	for i, tb := range a.tables {
		for j, b := range tb {
			flat[i*maxb+j] = int32(b)
		}
	}
	return flat, maxb
}

var attnShapes = []model.Config{
	{Arch: "llama-3.1-8b", Heads: 32, KVHeads: 8, HeadDim: 128},
	{Arch: "qwen2.5-0.5b", Heads: 14, KVHeads: 2, HeadDim: 64},
	{Arch: "qwen3-0.6b", Heads: 16, KVHeads: 8, HeadDim: 128},
}

func TestKernelDecodeAttention(t *testing.T) {
	d := openTestDevice(t)
	for _, c := range attnShapes {
		prefix := []int{0, 16, 299, 2047, 999, 40}
		a := newAttnCase(t, c, prefix, []int{1, 1, 1, 1, 1, 1})
		for _, kernel := range []string{"tiled", "untiled"} {
			for _, splits := range []int{1, 3, 8} {
				for _, dt := range dtypes {
					t.Run(fmt.Sprintf("%s/%s/splits%d/%s", c.Arch, kernel, splits, dt), func(t *testing.T) {
						ks := kernelsFor(d.Info, a.shape())
						ks.tiled = kernel == "tiled"
						got := a.runDecode(t, d, ks, dt, splits)
						want := make([]float32, len(a.want))
						for i, v := range a.want {
							want[i] = roundTo(dt, v)
						}
						bound := map[cuda.DType]float64{cuda.F32: 1e-5, cuda.F16: 1e-3, cuda.BF16: 1e-2}[dt] // bf16: the cache rounds K/V to bf16 too
						checkClose(t, "decode attention", got, want, bound)
					})
				}
			}
		}
	}
}

func (a *attnCase) runDecode(t *testing.T, d *Device, ks kernelSet, dt cuda.DType, splits int) []float32 {
	s := a.shape()
	qd := a.c.Heads * a.c.HeadDim
	nseq := len(a.seqs)
	ctx, qrow := make([]int32, nseq), make([]int32, nseq)
	for i, sq := range a.seqs {
		ctx[i], qrow[i] = int32(sq.Pos+1), int32(i)
	}
	flat, maxb := a.flatTables()
	out := d.testAlloc(t, int64(a.n*qd*dt.Size()))
	part := int64(nseq * a.c.Heads * splits)
	args := decodeArgs{q: d.put(t, cuda.F32, a.q), qs: qd, qrow: putInts(t, d, qrow), ctx: putInts(t, d, ctx),
		tables: putInts(t, d, flat), maxb: putInts(t, d, []int32{int32(maxb)}), nseq: nseq, splits: splits,
		po: d.testAlloc(t, 4*part*int64(a.c.HeadDim)), pm: d.testAlloc(t, 4*part), pl: d.testAlloc(t, 4*part),
		kc: d.put(t, kvType(dt), a.kc), vc: d.put(t, kvType(dt), a.vc), out: out}
	d.run(t, func() error { return d.decode(ks, dt, s, args) })
	return d.get(t, dt, out, a.n*qd)
}

func TestKernelPrefillAttention(t *testing.T) {
	d := openTestDevice(t)
	shapes := append(attnShapes, model.Config{Arch: "stories260K", Heads: 8, KVHeads: 4, HeadDim: 8})
	for _, c := range shapes {
		// A fresh prompt, a chunk after a cached prefix (prefix caching,
		// chunked prefill), and single tokens as the generic kernel runs
		// them for head dims the decode kernel lacks.
		a := newAttnCase(t, c, []int{0, 100, 7, 300}, []int{70, 33, 1, 1})
		for _, flash := range []bool{true, false} {
			if flash && !a.shape().flash() {
				continue
			}
			for _, dt := range dtypes {
				kernel := map[bool]string{true: "tensor cores", false: "CUDA cores"}[flash]
				t.Run(fmt.Sprintf("%s/%s/%s", c.Arch, kernel, dt), func(t *testing.T) {
					ks := kernelsFor(d.Info, a.shape())
					ks.flash = flash
					got := a.runPrefill(t, d, ks, dt)
					want := make([]float32, len(a.want))
					for i, v := range a.want {
						want[i] = roundTo(dt, v)
					}
					// The tensor cores take Q and the softmax weights in
					// fp16: a relative error of ~1e-3.
					bound := map[cuda.DType]float64{cuda.F32: 1e-5, cuda.F16: 1e-3, cuda.BF16: 1e-2}[dt] // bf16: the cache rounds K/V to bf16 too
					if flash {
						bound = max(bound, 4e-3)
					}
					checkClose(t, "prefill attention", got, want, bound)
				})
			}
		}
	}
}

func (a *attnCase) runPrefill(t *testing.T, d *Device, ks kernelSet, dt cuda.DType) []float32 {
	s := a.shape()
	qd := a.c.Heads * a.c.HeadDim
	var items []int32
	row := 0
	per := ks.prefillTokens()
	for i, sq := range a.seqs {
		for t0 := 0; t0 < len(sq.Tokens); t0 += per {
			nt := min(per, len(sq.Tokens)-t0)
			items = append(items, int32(i), int32(row+t0), int32(nt), int32(sq.Pos+t0))
		}
		row += len(sq.Tokens)
	}
	flat, maxb := a.flatTables()
	out := d.testAlloc(t, int64(a.n*qd*dt.Size()))
	q, pitems, ptables := d.put(t, cuda.F32, a.q), putInts(t, d, items), putInts(t, d, flat)
	kc, vc := d.put(t, kvType(dt), a.kc), d.put(t, kvType(dt), a.vc)
	d.run(t, func() error { return d.prefill(ks, dt, s, q, qd, pitems, ptables, maxb, len(items)/4, kc, vc, out) })
	return d.get(t, dt, out, a.n*qd)
}

// TestFastKernelsAgreeAtStart: the start-up check keeps the tensor-core
// prefill and the tiled decode kernels on real shapes, for every
// activation type (they agree with the plain kernels).
func TestFastKernelsAgreeAtStart(t *testing.T) {
	d := openTestDevice(t)
	for _, c := range attnShapes {
		s := attnShape{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, blockSize: 16}
		for _, dt := range dtypes {
			ks, err := d.selfCheck(s, dt)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %s", c.Arch, dt, ks)
			if !ks.flash || !ks.tiled || ks.note != "" {
				t.Errorf("%s %s: %s", c.Arch, dt, ks)
			}
		}
	}
}
