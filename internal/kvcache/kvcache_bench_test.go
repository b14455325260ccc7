package kvcache

import "testing"

// BenchmarkAllocateFree allocates a 512-token sequence block by block as
// decoding would, caches it, and frees it.
func BenchmarkAllocateFree(b *testing.B) {
	for _, prefix := range []bool{false, true} {
		name := "prefix=off"
		if prefix {
			name = "prefix=on"
		}
		b.Run(name, func(b *testing.B) {
			m, _ := New(Config{NumBlocks: 4096, BlockSize: 16, EnablePrefixCaching: prefix})
			tokens := seqTokens(512, 0)
			s := &Seq{}
			b.ReportAllocs()
			for b.Loop() {
				for n := 16; n <= len(tokens); n += 16 {
					m.Allocate(s, tokens, n-16, 16)
					m.Cache(s, tokens, n)
				}
				m.Free(s)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32, "ns/block")
		})
	}
}

// BenchmarkFleetChurn is the prefix cache as sixteen replicas of a fleet
// use it (BenchmarkFleet16x1h's: 25,650 blocks of 16 tokens each, 200
// sequences running): in turn, each frees its oldest sequence and admits a
// new 1,024-token prompt of tokens no other has, then decodes 128 tokens
// into it, so that every block allocated evicts a cached one. The caches
// together outgrow the CPU's, as a fleet's do.
func BenchmarkFleetChurn(b *testing.B) {
	const replicas, running, prompt, output, bs = 16, 200, 1024, 128, 16
	type replica struct {
		m    *Manager
		seqs [running]*Seq
		next int
	}
	rs := make([]replica, replicas)
	for i := range rs {
		m, err := New(Config{NumBlocks: 25650, BlockSize: bs, EnablePrefixCaching: true})
		if err != nil {
			b.Fatal(err)
		}
		rs[i].m = m
	}
	tokens := make([]int, prompt+output)
	base := 0
	admit := func(r *replica) {
		if s := r.seqs[r.next]; s != nil {
			r.m.Free(s)
		}
		base += len(tokens)
		for i := range tokens {
			tokens[i] = base + i
		}
		s := &Seq{}
		hit := r.m.LookupPrefix(s, tokens[:prompt])
		if !r.m.Allocate(s, tokens, hit, prompt-hit) {
			b.Fatal("no room for a prompt")
		}
		r.m.Cache(s, tokens, prompt)
		for n := prompt; n < prompt+output; n += bs {
			if !r.m.Allocate(s, tokens, n, bs) {
				b.Fatal("no room to decode")
			}
			r.m.Cache(s, tokens, n+bs)
		}
		r.seqs[r.next] = s
		r.next = (r.next + 1) % running
	}
	for range 2 * running { // fill every cache: from here each block evicts
		for i := range rs {
			admit(&rs[i])
		}
	}
	n := 0
	for b.Loop() {
		admit(&rs[n%replicas])
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/((prompt+output)/bs), "ns/block")
}
