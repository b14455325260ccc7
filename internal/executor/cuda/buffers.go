package cuda

import (
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// Sizes bound what one step may hold: the engine's limits.
type Sizes struct {
	MaxTokens   int // tokens a step computes (--max-num-batched-tokens)
	MaxSeqs     int // sequences a step runs (--max-num-seqs)
	MaxModelLen int // positions a sequence reaches
	BlockSize   int
}

// maxSplits is the most pieces decode attention splits a context into.
const maxSplits = 64

// partialRows bounds sequences × splits of one decode launch:
// decodeSplits keeps it near two blocks per multiprocessor, so it is at
// most the sequences plus that.
func partialRows(s Sizes, sms, kvHeads int) int64 {
	return int64(s.MaxSeqs + (2*sms+kvHeads-1)/kvHeads + 1)
}

// stepBufs are the device buffers of a step's activations and its
// inputs and outputs, allocated once for the largest step.
type stepBufs struct {
	s                           Sizes
	maxb                        int // block-table width: blocks of the longest sequence
	x, hn, qkv, att, o, gu, act cuda.Ptr
	hs, logits                  cuda.Ptr
	scale                       cuda.Ptr // fp16 models: each row's SiLU·up divisor (ops.go's siluMul)
	po, pm, pl                  cuda.Ptr
	in                          cuda.Ptr // the step's int32 inputs (and float32 parameters)
	host                        []int32  // their pinned staging
	hostRaw                     []byte
	masks                       cuda.Ptr
	maskHost                    []uint64
	maskRaw                     []byte
	outTok, outLP               cuda.Ptr
	hostTok                     []int32
	hostLP                      []float32
	outRaw                      []byte
	words, maskWords            int
	allocs                      []cuda.Ptr
	Bytes                       int64
}

// inputWords is the int32 words a step's inputs take at most (stepPlan's
// layout).
func inputWords(s Sizes, maxb int) int {
	n, q := max(s.MaxTokens, s.MaxSeqs), s.MaxSeqs
	return 3*n + 2*q + 7*q + 1 + q*maxb + 4*(q+n) + q*maxb + 64
}

// devWeightsShape is what buffer sizes depend on.
type devWeightsShape struct {
	dt                                                   cuda.DType
	hidden, qd, kvd, ffn, vocab, heads, headDim, kvHeads int
}

func (d *Device) newStepBufs(w *devWeightsShape, s Sizes) (b *stepBufs, err error) {
	b = &stepBufs{s: s, maxb: (s.MaxModelLen + s.BlockSize - 1) / s.BlockSize}
	defer func() {
		if err != nil {
			b.free(d)
		}
	}()
	n, q := int64(max(s.MaxTokens, s.MaxSeqs)), int64(s.MaxSeqs)
	dt := int64(w.dt.Size())
	parts := partialRows(s, d.Info.SMs, w.kvHeads) * int64(w.heads)
	for _, a := range []struct {
		dst *cuda.Ptr
		n   int64
	}{
		{&b.x, n * int64(w.hidden) * 4}, {&b.hn, n * int64(w.hidden) * dt}, {&b.qkv, n * int64(w.qd+2*w.kvd) * 4},
		{&b.att, n * int64(w.qd) * dt}, {&b.o, n * int64(w.hidden) * 4}, {&b.gu, n * int64(2*w.ffn) * 4},
		{&b.act, n * int64(w.ffn) * dt}, {&b.scale, n * 4}, {&b.hs, q * int64(w.hidden) * dt}, {&b.logits, q * int64(w.vocab) * 4},
		{&b.po, parts * int64(w.headDim) * 4}, {&b.pm, parts * 4}, {&b.pl, parts * 4}, {&b.outTok, 4 * q}, {&b.outLP, 4 * q},
	} {
		if *a.dst, err = d.ctx.Alloc(a.n); err != nil {
			return nil, err
		}
		b.allocs = append(b.allocs, *a.dst)
		b.Bytes += a.n
	}
	b.words = inputWords(s, b.maxb)
	if b.in, err = d.ctx.Alloc(int64(4 * b.words)); err != nil {
		return nil, err
	}
	b.allocs = append(b.allocs, b.in)
	if b.hostRaw, err = d.ctx.HostAlloc(4 * b.words); err != nil {
		return nil, err
	}
	b.host = unsafe.Slice((*int32)(unsafe.Pointer(&b.hostRaw[0])), b.words)
	b.maskWords = (w.vocab + 63) / 64
	if b.masks, err = d.ctx.Alloc(q * int64(b.maskWords) * 8); err != nil {
		return nil, err
	}
	b.allocs = append(b.allocs, b.masks)
	if b.maskRaw, err = d.ctx.HostAlloc(int(q) * b.maskWords * 8); err != nil {
		return nil, err
	}
	b.maskHost = unsafe.Slice((*uint64)(unsafe.Pointer(&b.maskRaw[0])), int(q)*b.maskWords)
	if b.outRaw, err = d.ctx.HostAlloc(int(8 * q)); err != nil {
		return nil, err
	}
	b.hostTok = unsafe.Slice((*int32)(unsafe.Pointer(&b.outRaw[0])), q)
	b.hostLP = unsafe.Slice((*float32)(unsafe.Pointer(&b.outRaw[4*q])), q)
	b.Bytes += int64(4*b.words) + q*int64(b.maskWords)*8
	return b, nil
}

func (b *stepBufs) free(d *Device) {
	for _, p := range b.allocs {
		d.ctx.Free(p)
	}
	b.allocs = nil
	for _, h := range [][]byte{b.hostRaw, b.maskRaw, b.outRaw} {
		d.ctx.FreeHost(h)
	}
	b.hostRaw, b.maskRaw, b.outRaw = nil, nil, nil
}
