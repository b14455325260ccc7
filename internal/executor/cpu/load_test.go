package cpu

import "testing"

// TestTooBigToCopy: a model is read into memory unless it would take more
// than three quarters of what is available (unknown: read it).
func TestTooBigToCopy(t *testing.T) {
	for _, c := range []struct {
		size, avail int64
		want        bool
	}{{500, 1000, false}, {800, 1000, true}, {1 << 40, 0, false}} {
		if got := tooBigToCopy(c.size, c.avail); got != c.want {
			t.Errorf("tooBigToCopy(%d, %d) = %v", c.size, c.avail, got)
		}
	}
}

// TestDefaultKVBytes: room for every sequence at full length, capped by a
// quarter of available memory and 4 GiB, never below one sequence.
func TestDefaultKVBytes(t *testing.T) {
	for _, c := range []struct {
		perToken    int64
		len, seqs   int
		avail, want int64
	}{
		{100, 1000, 10, 0, 1_000_000},
		{100, 1000, 10, 400_000, 100_000},
		{100, 1000, 10, 40_000, 100_000},     // a quarter is less than one sequence: one sequence
		{1 << 20, 1 << 12, 4096, 0, 4 << 30}, // the 4 GiB cap
	} {
		if got := DefaultKVBytes(c.perToken, c.len, c.seqs, c.avail); got != c.want {
			t.Errorf("DefaultKVBytes(%d, %d, %d, %d) = %d, want %d", c.perToken, c.len, c.seqs, c.avail, got, c.want)
		}
	}
}
