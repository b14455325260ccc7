package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
)

// Hash identifies a block's content and everything before it: SHA-256 (as
// vLLM's default prefix_caching_hash_algo) of the parent block's hash and the
// block's tokens, truncated to 128 bits.
type Hash [16]byte

type hasher struct{ buf []byte }

func (h *hasher) sum(parent Hash, tokens []int) Hash {
	h.buf = append(h.buf[:0], parent[:]...)
	for _, t := range tokens {
		h.buf = binary.LittleEndian.AppendUint32(h.buf, uint32(t))
	}
	full := sha256.Sum256(h.buf)
	var out Hash
	copy(out[:], full[:])
	return out
}

// ChainHashes are the prefix cache's keys of tokens' full blocks: what a
// router holding the engines' KV events would compute for a prompt.
func ChainHashes(blockSize int, tokens []int) []Hash {
	var h hasher
	out := make([]Hash, 0, len(tokens)/blockSize)
	var parent Hash
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		parent = h.sum(parent, tokens[i:i+blockSize])
		out = append(out, parent)
	}
	return out
}
