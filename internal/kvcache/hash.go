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
	if n := len(parent) + 4*len(tokens); len(h.buf) != n {
		h.buf = make([]byte, n)
	}
	copy(h.buf, parent[:])
	w := h.buf[len(parent):]
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(w[4*i:], uint32(t))
	}
	full := sha256.Sum256(h.buf)
	var out Hash
	copy(out[:], full[:])
	return out
}

// ChainHashes are the prefix cache's keys of tokens' full blocks in a
// namespace (Seq.SetNamespace's: 0 the base model, a LoRA adapter's
// otherwise): what a router holding the engines' KV events would compute
// for a prompt, since vLLM's block hashes include the adapter too.
func ChainHashes(blockSize int, namespace uint32, tokens []int) []Hash {
	var h hasher
	out := make([]Hash, 0, len(tokens)/blockSize)
	parent := namespaceRoot(namespace)
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		parent = h.sum(parent, tokens[i:i+blockSize])
		out = append(out, parent)
	}
	return out
}

// namespaceRoot is the parent of a namespace's first block: the zero hash
// for the default namespace, one no chain can reach for the others.
func namespaceRoot(id uint32) Hash {
	var root Hash
	if id != 0 {
		binary.LittleEndian.PutUint32(root[:], id)
		root[15] = 0x10 // never the zero hash
	}
	return root
}
