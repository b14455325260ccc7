package model

import "fmt"

// Single stages of the forward pass, exported so that other executors'
// tests (the GPU's) check their kernels against the CPU's own code.

// RMSNorm is the forward pass's RMSNorm: dst = rmsnorm(x)·w.
func RMSNorm(dst, x, w []float32, eps float32) { rmsNorm(dst, x, w, eps) }

// RopeTable is the cos and sin of RoPE's angles for every position below
// n, as pairs: [pos][RopeDims/2][cos, sin], the values the forward pass
// rotates by.
func (c *Config) RopeTable(n int) []float32 {
	t := make([]float32, n*c.RopeDims)
	for p := range n {
		c.ropeAngles(p, t[p*c.RopeDims:(p+1)*c.RopeDims])
	}
	return t
}

// Rope rotates every head of x (a token's q or k) for position pos.
func (r *Runner) Rope(x []float32, pos int) { r.rope(x, pos) }

// WriteKV stores one token's K and V (all KV heads) of layer l at
// position pos of the sequence with this block table.
func (kv *KVCache) WriteKV(l int, table []int, pos int, k, v []float32) {
	kv.write(l, table, pos, k, v)
}

// Attend runs layer l's paged attention for the batch as Forward does,
// with the batch's queries given (q: a row of Heads·HeadDim per token,
// after RoPE) and K/V already in the cache; out gets a row per token.
func (r *Runner) Attend(l int, seqs []Seq, q, out []float32) error {
	c := &r.W.Config
	n := 0
	for _, s := range seqs {
		n += len(s.Tokens)
	}
	qd := c.Heads * c.HeadDim
	if len(q) != n*qd || len(out) != n*qd {
		return fmt.Errorf("attend: %d tokens need q and out of %d, got %d and %d", n, n*qd, len(q), len(out))
	}
	r.grow(n)
	t := 0
	for i, s := range seqs {
		for j := range s.Tokens {
			r.pos[t], r.owner[t] = s.Pos+j, i
			t++
		}
	}
	copy(r.q, q)
	r.planAttention(seqs)
	r.attention(l, seqs)
	copy(out, r.att[:n*qd])
	return nil
}
