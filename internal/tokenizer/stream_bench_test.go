package tokenizer

import "testing"

// BenchmarkTextSinkAppend measures the per-token cost on the engine
// goroutine with two stop strings to match.
func BenchmarkTextSinkAppend(b *testing.B) {
	p, ids := tokenize("Hello", ",", " wor", "ld", " \xe2\x82", "\xac", "\n", "The", " end")
	b.ReportAllocs()
	for b.Loop() {
		s := NewTextSink(p, []string{"STOP", "\n\n"}, false)
		for _, id := range ids {
			s.Append(id)
		}
		s.Flush()
	}
}
