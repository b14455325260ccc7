package tensor

import (
	"encoding/binary"
	"fmt"
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

// BenchmarkReadRate is the read ceiling on the buffer size of
// BenchmarkMulBatch's "mem" matrices (64 MiB, two threads): run the two
// together and compare GB/s.
func BenchmarkReadRate(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	b.SetBytes(2 * int64(len(buf))) // ReadRate reads it reps+1 times
	for b.Loop() {
		if _, err := ReadRate(p, [][]byte{buf}, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStreams reads the same 64 MiB on two threads in pieces of
// 2 KiB to 256 KiB, each piece (on amd64) as eight interleaved streams
// piece/8 bytes apart: how many streams a thread keeps going, and how far
// apart, decides its read rate. On the 2-vCPU AMD EPYC (Zen 3) of
// docs/cpu.md, eight streams within 2–8 KiB (one stream, in effect) read
// 15–16 GB/s, 4 KiB apart 24 and 32 KiB apart 30: why the one-token
// kernels of the repacked formats read four runs of groups at once.
func BenchmarkReadStreams(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for _, piece := range []int{2 << 10, 8 << 10, 32 << 10, 256 << 10} {
		b.Run(fmt.Sprint(piece>>10, "KiB"), func(b *testing.B) {
			t := &piecesTask{buf: buf, piece: piece, sums: make([]uint64, p.Size())}
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				p.Run(t, len(buf)/readChunk, 1)
			}
		})
	}
}

// piecesTask reads readChunk-sized spans of buf piece by piece.
type piecesTask struct {
	buf   []byte
	piece int
	sums  []uint64
}

func (t *piecesTask) Run(worker, lo, hi int) {
	span := t.buf[lo*readChunk : hi*readChunk]
	for len(span) >= t.piece {
		t.sums[worker] += readSum(span[:t.piece])
		span = span[t.piece:]
	}
}
