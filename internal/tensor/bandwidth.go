package tensor

import (
	"errors"
	"time"
)

// ReadBandwidth measures how fast threads can stream memory, in bytes per
// second: STREAM's read-only test, summing a buffer of size bytes (far
// larger than the caches) with the same SIMD loads and pool as the matrix
// kernels, best of reps passes. It is the ceiling decode is held to, since
// a decode step reads every weight once.
func ReadBandwidth(threads, size, reps int) (float64, error) {
	if size < 1<<20 || reps < 1 {
		return 0, errors.New("read bandwidth: need at least 1 MiB and one pass")
	}
	t := &readTask{buf: make([]float32, size/4), sums: make([]float32, max(1, threads))}
	for i := range t.buf {
		t.buf[i] = float32(i & 7) // touched, so every page is backed
	}
	p := NewPool(threads)
	defer p.Close()
	const chunk = 1 << 16 // 256 KiB of floats per item
	items := (len(t.buf) + chunk - 1) / chunk
	t.chunk = chunk
	best := 0.0
	for range reps + 1 { // the first pass warms the pool and the TLB
		start := time.Now()
		p.Run(t, items, 1)
		if bw := float64(len(t.buf)*4) / time.Since(start).Seconds(); bw > best {
			best = bw
		}
	}
	return best, nil
}

type readTask struct {
	buf   []float32
	chunk int
	sums  []float32 // one per worker, so the reads cannot be elided
}

func (t *readTask) Run(worker, lo, hi int) {
	for i := lo; i < hi; i++ {
		s := t.buf[i*t.chunk : min((i+1)*t.chunk, len(t.buf))]
		// Both operands the same: one stream from memory.
		v, done := dotF32Asm(hostISA, s, s)
		t.sums[worker] += v + dotF32(s[done:], s[done:])
	}
}
