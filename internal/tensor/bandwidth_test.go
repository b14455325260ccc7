package tensor

import (
	"encoding/binary"
	"testing"
)

// TestReadSum: the probe's sum is every 8-byte word's, the assembly's
// pieces and the Go tail alike, at any length and alignment.
func TestReadSum(t *testing.T) {
	buf := make([]byte, 4096+13)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	for _, off := range []int{0, 1, 5} {
		for _, n := range []int{0, 7, 8, 127, 128, 129, 1000, 4096} {
			b := buf[off : off+n]
			var want uint64
			i := 0
			for ; i+8 <= n; i += 8 {
				want += binary.LittleEndian.Uint64(b[i:])
			}
			for ; i < n; i++ {
				want += uint64(b[i])
			}
			if got := readSum(b); got != want {
				t.Errorf("offset %d, %d bytes: %d, want %d", off, n, got, want)
			}
		}
	}
}

func TestReadRate(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	if _, err := ReadRate(p, [][]byte{nil}, 1); err == nil {
		t.Error("nothing was measured")
	}
	bufs := [][]byte{make([]byte, 3<<20+5), make([]byte, 1<<20)}
	bw, err := ReadRate(p, bufs, 2)
	if err != nil || !(bw > 0) {
		t.Fatalf("ReadRate = %v, %v", bw, err)
	}
}
