package cuda

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/model"
)

// shapeOf is a model's attention shape over a cache of blockSize-token
// blocks.
func shapeOf(c *model.Config, blockSize int) attnShape {
	return attnShape{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, blockSize: blockSize}
}

// What a model's shape and the engine's step sizes ask of the GPU,
// checked when the model is loaded: a kernel that cannot launch on this
// GPU is replaced by one that can, or the model is refused by name,
// rather than the first step failing.

// plainPrefillTokens is how many tokens an item of the CUDA-core prefill
// kernel takes on a GPU whose blocks may have sharedLimit bytes of shared
// memory: the most (up to prefillRows query rows) whose rows fit, 0 when
// not even one token's rows fit (its shared memory grows with the rows:
// at head dim 128, 64 rows take 107,648 bytes, past the 99 KiB of sm_86
// and sm_89).
func plainPrefillTokens(s attnShape, sharedLimit int) int {
	for n := s.prefillTokens(); n > 0; n-- {
		if prefillShared(s.headDim, n*s.group()) <= sharedLimit {
			return n
		}
	}
	return 0
}

// kernelsFor is the attention kernels shape s can run on GPU info, before
// the self-check: the fast ones where they take the shape and fit, and
// each prefill kernel's tokens an item (0: it does not fit).
func kernelsFor(info *cuda.Device, s attnShape) kernelSet {
	k := kernelSet{tiled: s.fastDecode(), plainTokens: plainPrefillTokens(s, info.SharedOptin)}
	if s.flash() && flashShared(s.headDim) <= info.SharedOptin {
		k.flash, k.flashTokens = true, s.prefillTokens()
	}
	if k.flash && k.plainTokens == 0 {
		k.note = fmt.Sprintf("tensor-core prefill not checked: the CUDA-core kernel needs %d bytes of shared memory a block, %d here; ",
			prefillShared(s.headDim, s.group()), info.SharedOptin)
	}
	return k
}

// checkLimits refuses, by name, a shape or step sizes some launch of the
// forward pass could not make on GPU info.
func checkLimits(info *cuda.Device, s attnShape, sizes Sizes) error {
	k := kernelsFor(info, s)
	if !k.flash && k.plainTokens == 0 {
		return fmt.Errorf("head dim %d with %d query heads per KV head: the prefill attention kernel needs %d bytes of shared memory for one token's rows, and %s gives a block at most %d",
			s.headDim, s.group(), prefillShared(s.headDim, s.group()), info.Name, info.SharedOptin)
	}
	grids := []struct {
		what string
		n    int
	}{
		{"query and KV heads (the QKV epilogue's grid)", s.heads + 2*s.kvHeads},
		{"query heads (decode attention's combine grid)", s.heads},
		{"KV heads (the prefill attention grid)", s.kvHeads},
	}
	if s.fastDecode() {
		grids = append(grids, struct {
			what string
			n    int
		}{"--max-num-seqs (decode attention's grid)", sizes.MaxSeqs})
	}
	for _, g := range grids {
		if g.n > maxGridYZ {
			return fmt.Errorf("%d %s: a kernel grid takes at most %d", g.n, g.what, maxGridYZ)
		}
	}
	return nil
}
