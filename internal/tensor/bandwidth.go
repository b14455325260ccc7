package tensor

import (
	"encoding/binary"
	"errors"
	"time"
)

// readChunk is how much one work item of ReadRate streams: as long as a
// decode chunk of rows (mulChunkMACs of a byte-sized format), so that the
// threads interleave their reads as they do in a matmul.
const readChunk = 256 << 10

// ReadRate measures how fast p's threads stream bufs from memory, in bytes
// per second: STREAM's read-only test (every byte loaded once per pass and
// summed, with SIMD loads where the kernels have them; on amd64 each piece
// as eight interleaved streams, which read faster than one, as the float
// decode kernels do), the best of reps passes after one that warms the
// pool. Given a model's weight matrices it
// reads the very pages a decode step streams (huge pages or 4 KiB ones,
// read into memory or mapped, already touched, so no page faults) on the
// threads that run the kernels: the ceiling decode is held to.
func ReadRate(p *Pool, bufs [][]byte, reps int) (float64, error) {
	t := &readTask{sums: make([]uint64, p.Size())}
	var total int64
	for _, b := range bufs {
		total += int64(len(b))
		for len(b) > 0 {
			n := min(len(b), readChunk)
			t.spans = append(t.spans, b[:n])
			b = b[n:]
		}
	}
	if total == 0 || reps < 1 {
		return 0, errors.New("read rate: need bytes to read and one pass")
	}
	best := 0.0
	for i := range reps + 1 {
		start := time.Now()
		p.Run(t, len(t.spans), 1)
		if bw := float64(total) / time.Since(start).Seconds(); i > 0 && bw > best {
			best = bw
		}
	}
	return best, nil
}

type readTask struct {
	spans [][]byte
	sums  []uint64 // one per worker, so the loads cannot be dropped
}

func (t *readTask) Run(worker, lo, hi int) {
	for _, s := range t.spans[lo:hi] {
		t.sums[worker] += readSum(s)
	}
}

// readSum adds up b's 8-byte words (the bytes past the last whole word
// one by one): a read whose only cost is the loads.
func readSum(b []byte) uint64 {
	v, done := readSumAsm(hostISA, b)
	b = b[done:]
	var s0, s1, s2, s3 uint64
	for ; len(b) >= 32; b = b[32:] {
		s0 += binary.LittleEndian.Uint64(b)
		s1 += binary.LittleEndian.Uint64(b[8:])
		s2 += binary.LittleEndian.Uint64(b[16:])
		s3 += binary.LittleEndian.Uint64(b[24:])
	}
	for ; len(b) >= 8; b = b[8:] {
		s0 += binary.LittleEndian.Uint64(b)
	}
	for _, c := range b {
		s0 += uint64(c)
	}
	return v + s0 + s1 + s2 + s3
}
