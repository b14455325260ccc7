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
