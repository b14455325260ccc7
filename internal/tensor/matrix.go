package tensor

import (
	"fmt"
	"unsafe"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// Matrix is a weight matrix kept in its GGUF encoding: Rows rows of Cols
// elements, row-major (ggml's ne = [Cols, Rows]). Data usually aliases the
// memory-mapped file.
type Matrix struct {
	Type       gguf.TensorType
	Rows, Cols int
	Data       []byte
	rowBytes   int
	f32        []float32 // Data viewed as float32 (F32 only)
	u16        []uint16  // Data viewed as uint16 (F16, BF16)
	isa        isa       // kernel set, the best the CPU has
	group      int       // rows per group when Data is repacked (Repack), else 0
	pack       isa       // the kernel set the repacked layout is for
}

// NewMatrix checks that data holds rows×cols elements of t.
func NewMatrix(t gguf.TensorType, rows, cols int, data []byte) (*Matrix, error) {
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("matrix %dx%d: %w", rows, cols, err)
	}
	if int64(len(data)) != rb*int64(rows) {
		return nil, fmt.Errorf("matrix %dx%d %s: %d bytes, want %d", rows, cols, t, len(data), rb*int64(rows))
	}
	switch t {
	case gguf.F32, gguf.F16, gguf.BF16, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
	default:
		return nil, fmt.Errorf("matrix: weight type %s is not supported", t)
	}
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data, rowBytes: int(rb), isa: detect()}
	if len(data) > 0 && isLittleEndian() {
		switch t {
		case gguf.F32:
			m.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
		case gguf.F16, gguf.BF16:
			m.u16 = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
		}
	}
	return m, nil
}

func isLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// Row dequantises row r into dst (len Cols): embeddings are looked up this way.
func (m *Matrix) Row(r int, dst []float32) {
	if m.group != 0 {
		m.rowRepacked(r, dst)
		return
	}
	if err := Dequantize(m.Type, m.Data[r*m.rowBytes:(r+1)*m.rowBytes], dst); err != nil {
		panic("BUG: tensor: " + err.Error())
	}
}

// Scratch is per-call working memory for MulBatch; reuse it across calls.
type Scratch struct {
	act   []float32 // activations rounded for F16/BF16 weights
	bf    []uint16  // or, for the VDPBF16PS kernels, as BF16 bits
	pairs []float32 // activations for the 512-bit F32 tile (pairTokens)
	// last is the previous matmul's weight type: for F32, F16 and BF16, act
	// and pairs hold its input's, which SameInput keeps as it keeps q.
	last  gguf.TensorType
	q     Q8
	rows  [][]float32 // per worker: one dequantised weight row
	task  mulTask
	multi multiTask // MulBatches'; its parts slice is kept for the next call
	quant quantTask
	same  bool // the next MulBatch has the previous one's input (SameInput)
}

// SameInput tells s that the next MulBatch multiplies the same activations
// (x and n) as the previous one: Q, K and V of one layer, or gate and up.
// It then keeps the quantised activations when the two matrices' kernels
// read the same layout, and the rounded or paired ones when they are of
// the same float type, instead of making them again.
func (s *Scratch) SameInput() { s.same = true }

// quantTask quantises activation blocks on the pool (prefill has many).
type quantTask struct {
	x []float32
	q *Q8
}

func (t *quantTask) Run(_, lo, hi int) { t.q.quantize(t.x, lo, hi) }

func (s *Scratch) quantize(x []float32, block int, layout actLayout, off int32, tokens int, p *Pool) {
	if s.same && s.q.Block == block && len(s.q.Q) == len(x) && s.q.layout == layout && s.q.off == off && s.q.tokens == tokens {
		return
	}
	s.q.layout, s.q.off, s.q.tokens = layout, off, tokens
	s.q.prepare(len(x), block)
	s.quant = quantTask{x: x, q: &s.q}
	p.Run(&s.quant, len(x)/block, max(1, 8192/block))
	s.quant = quantTask{}
}

// vnniOffset is what the VNNI kernels add to a weight type's signed quants
// to make them unsigned (0 when another kernel set runs).
func vnniOffset(k isa, t gguf.TensorType) int32 {
	if !k.avx512() {
		return 0
	}
	switch t {
	case gguf.Q8_0:
		return 128
	case gguf.Q4_0:
		return 8
	case gguf.Q5_0:
		return 16
	}
	return 0
}

// kTiled reports whether m's K-quant kernels read the KTile layout: the
// VNNI row tiles, and the AVX2 kernels of repacked matrices.
func (m *Matrix) kTiled() bool {
	if m.group == 0 {
		return m.isa.avx512() && m.Type != gguf.Q5_K
	}
	return m.packedISA() == isaAVX2
}

// roundActs rounds x into dst through F16 or BF16, as llama.cpp converts
// the activations that meet those weights.
func roundActs(k isa, bf16 bool, x, dst []float32) {
	for i := roundActsAsm(k, bf16, x, dst); i < len(x); i++ {
		if bf16 {
			dst[i] = BF16ToF32(F32ToBF16(x[i]))
		} else {
			dst[i] = RoundF16(x[i])
		}
	}
}

// mulTask is MulBatch's share of work for the pool: a range of rows.
type mulTask struct {
	m   *Matrix
	x   []float32
	n   int
	out []float32
	s   *Scratch
}

func (t *mulTask) Run(worker, lo, hi int) { t.m.mulRows(lo, hi, t.x, t.n, t.out, t.s, worker) }

// multiTask is MulBatches' work: its matrices' chunks, one item each.
type multiTask struct {
	parts []mulPart
	x     []float32
	n     int
	s     *Scratch
}

// mulPart is rows [lo, hi) of m into out.
type mulPart struct {
	m      *Matrix
	out    []float32
	lo, hi int
}

func (t *multiTask) Run(worker, lo, hi int) {
	for _, c := range t.parts[lo:hi] {
		c.m.mulRows(c.lo, c.hi, t.x, t.n, c.out, t.s, worker)
	}
}

// mulChunkMACs is about how much work one chunk of rows carries: tens of
// microseconds, so that the atomic counter and the barrier cost little,
// small matrices run on the caller alone, and in decode each thread
// streams a long run of weights (interleaving 36 KB chunks of a Q4_K
// matrix between two threads decoded 9% slower than 150 KB ones here;
// 1 MB chunks lose it again to imbalance).
const mulChunkMACs = 1 << 18

// evenChunk adjusts a chunk of about want rows to a multiple of unit rows
// (16, or what decodeUnit says) that splits rows into chunks the threads
// share evenly: Qwen2.5-0.5B's 896-row matrices in chunks of 288 left one
// thread 576 rows and the other 320. A matrix within one chunk stays on
// one thread.
func evenChunk(rows, want, unit, threads int) int {
	units, per := (rows+unit-1)/unit, max(1, want/unit)
	if units <= per || threads < 2 {
		return max(want, unit*per)
	}
	best, bestLoad := per, 0
	for c := max(1, per/2); c <= 2*per; c++ {
		chunks := (units + c - 1) / c
		load := (chunks + threads - 1) / threads * c // the busiest thread's units
		if bestLoad == 0 || load < bestLoad || load == bestLoad && abs(c-per) <= abs(best-per) {
			best, bestLoad = c, load
		}
	}
	return unit * best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// MulBatch computes out[t·Rows+r] = Σ_c W[r][c]·x[t·Cols+c] for n tokens,
// with the activations rounded or quantised to the weight's dot-product
// type exactly as llama.cpp does. Chunks of rows go to p's threads; every
// token's activations meet each weight row while it is in cache.
func (m *Matrix) MulBatch(x []float32, n int, out []float32, p *Pool, s *Scratch) {
	m.check(x, n, out)
	if n == 0 {
		return
	}
	x = m.prepare(x[:n*m.Cols], n, p, s)
	s.task = mulTask{m: m, x: x, n: n, out: out, s: s}
	p.Run(&s.task, m.Rows, m.chunkRows(n, p.Size()))
	s.task = mulTask{}
}

// MulBatches is MulBatch of several matrices on one input x (Q, K and V
// of a layer; gate and up), outs[i] for ms[i]. Matrices of one type and
// layout read the same activations: they run as one parallel operation,
// with one barrier instead of one each, and a matrix too small to split
// (Qwen2.5-0.5B's K and V in decode) runs beside the others' chunks
// instead of on one thread while the other waits. Others run one after
// another, each reusing what it can of the previous one's activations.
func MulBatches(ms []*Matrix, x []float32, n int, outs [][]float32, p *Pool, s *Scratch) {
	if len(outs) != len(ms) {
		panic(fmt.Sprintf("BUG: tensor: MulBatches of %d matrices into %d outputs", len(ms), len(outs)))
	}
	if !sameKernels(ms) {
		for i, m := range ms {
			if i > 0 {
				s.SameInput()
			}
			m.MulBatch(x, n, outs[i], p, s)
		}
		return
	}
	for i, m := range ms {
		m.check(x, n, outs[i])
	}
	if n == 0 {
		return
	}
	t := &s.multi
	t.x, t.n, t.s = ms[0].prepare(x[:n*ms[0].Cols], n, p, s), n, s
	for i, m := range ms {
		chunk := m.chunkRows(n, p.Size())
		for lo := 0; lo < m.Rows; lo += chunk {
			t.parts = append(t.parts, mulPart{m: m, out: outs[i], lo: lo, hi: min(lo+chunk, m.Rows)})
		}
	}
	p.Run(t, len(t.parts), 1)
	clear(t.parts) // the scratch must not keep the matrices and outputs reachable
	*t = multiTask{parts: t.parts[:0]}
}

// sameKernels reports whether the matrices' kernels read the same
// activations, prepared once (MulBatches).
func sameKernels(ms []*Matrix) bool {
	if len(ms) < 2 {
		return false
	}
	a := ms[0]
	for _, m := range ms[1:] {
		if m.Type != a.Type || m.Cols != a.Cols || m.group != a.group || m.pack != a.pack || m.isa != a.isa {
			return false
		}
	}
	return true
}

func (m *Matrix) check(x []float32, n int, out []float32) {
	if len(x) < n*m.Cols || len(out) < n*m.Rows {
		panic(fmt.Sprintf("BUG: tensor: MulBatch of %d tokens: x %d, out %d for %dx%d", n, len(x), len(out), m.Rows, m.Cols))
	}
}

// prepare rounds or quantises the activations x of n tokens for m's
// kernels into s (keeping those of the previous matmul after SameInput
// where they are the same) and returns what the float kernels read.
func (m *Matrix) prepare(x []float32, n int, p *Pool, s *Scratch) []float32 {
	float := m.Type == gguf.F32 || m.Type == gguf.F16 || m.Type == gguf.BF16
	dp := m.dotsBF16()
	made := len(s.act)
	if dp {
		made = len(s.bf)
	}
	keep := s.same && s.last == m.Type && (m.Type == gguf.F32 || made == len(x))
	switch m.Type {
	case gguf.F32:
		s.q.Block = 0 // the quantised activations are stale now
	case gguf.F16, gguf.BF16:
		s.q.Block = 0
		switch {
		case keep:
		case dp:
			s.bf, s.act = resize(s.bf, len(x)), s.act[:0]
			for i := packBF16Asm(m.isa, x, s.bf); i < len(x); i++ {
				s.bf[i] = F32ToBF16(x[i])
			}
		default:
			s.act, s.bf = resize(s.act, len(x)), s.bf[:0]
			roundActs(m.isa, m.Type == gguf.BF16, x, s.act)
		}
		if !dp {
			x = s.act
		}
	case gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0:
		switch off := vnniOffset(m.isa, m.Type); {
		case m.group != 0:
			s.quantize(x, 32, layoutX8, x8Offset(m.Type, m.pack), n, p)
		case off != 0:
			s.quantize(x, 32, layoutVNNI, off, 0, p)
		default:
			s.quantize(x, 32, layoutPlain, 0, 0, p)
		}
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		if m.kTiled() {
			s.quantize(x, 256, layoutKTile, 0, n, p)
		} else {
			s.quantize(x, 256, layoutPlain, 0, 0, p)
		}
	}
	switch {
	case !float || !runsTileZ(m.isa, floatKindOf(m.Type), n):
		s.pairs = s.pairs[:0]
	case !keep || len(s.pairs) == 0:
		s.pairs = pairTokens(x, n, m.Cols, s.pairs)
	}
	s.last = m.Type
	s.same = false
	for len(s.rows) < p.Size() {
		s.rows = append(s.rows, nil)
	}
	return x
}

// chunkRows is the rows of one chunk of a matmul over n tokens on threads.
func (m *Matrix) chunkRows(n, threads int) int {
	chunk := max(16, mulChunkMACs/max(1, m.Cols*n))
	if n < 16 {
		unit := 16
		if n == 1 {
			unit = m.decodeUnit()
		}
		chunk = evenChunk(m.Rows, chunk, unit, threads)
	}
	if n >= 16 {
		// A long batch (prefill) streams its activations once per chunk:
		// chunks of 64 rows reuse each tile of them four times as long as
		// 16 did (2x on AVX2 for Qwen2.5-0.5B's 896-wide matrices).
		chunk = max(chunk, min(64, m.Rows/threads))
	}
	return max(16, chunk&^15)
}

// mulRows computes rows [lo, hi) for every token.
func (m *Matrix) mulRows(lo, hi int, x []float32, n int, out []float32, s *Scratch, worker int) {
	if m.group != 0 {
		m.mulRowsRepacked(lo, hi, n, out, &s.q)
		return
	}
	cols, rb := m.Cols, m.rowBytes
	switch m.Type {
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0:
		if q8RowsAsm(m.isa, m.Type, m.Data[lo*rb:hi*rb], rb, hi-lo, &s.q, n, out[lo:], m.Rows) {
			return
		}
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		if kRowsAsm(m.isa, m.Type, m.Data[lo*rb:hi*rb], rb, hi-lo, &s.q, n, out[lo:], m.Rows) {
			return
		}
	case gguf.F32, gguf.F16, gguf.BF16:
		if m.mulFloatRows(lo, hi, x, n, out, s, worker) {
			return
		}
	}
	for r := lo; r < hi; r++ {
		row := m.Data[r*rb : (r+1)*rb]
		for t := range n {
			out[t*m.Rows+r] = m.dotRow(r, row, x[t*cols:(t+1)*cols], &s.q, t, s, worker)
		}
	}
}

// dotsBF16 reports whether m's kernels are the VDPBF16PS ones, which read
// the activations as BF16 bits (Scratch.bf).
func (m *Matrix) dotsBF16() bool {
	return m.Type == gguf.BF16 && m.isa == isaBF16 && m.u16 != nil
}

// mulFloatRows is mulRows for F32, F16 and BF16 weights on the tile
// kernels (false where there are none): a long batch of F16 or BF16 rows
// widens them to F32 once (widens); the columns after the last whole 8
// are added in Go.
func (m *Matrix) mulFloatRows(lo, hi int, x []float32, n int, out []float32, s *Scratch, worker int) bool {
	if m.f32 == nil && m.u16 == nil {
		return false // a big-endian host
	}
	cols, rb := m.Cols, m.rowBytes
	if m.dotsBF16() {
		return bf16RowsAsm(m.isa, m.u16[lo*cols:hi*cols], s.bf, cols, hi-lo, n, out[lo:], m.Rows)
	}
	kind := floatKindOf(m.Type)
	var done int
	if widens(m.isa, kind, n) {
		done, s.rows[worker] = rowsWideAsm(m.isa, kind, m.u16[lo*cols:hi*cols], cols, hi-lo, x, s.pairs, n, out[lo:], m.Rows, s.rows[worker])
	} else {
		done = floatRowsAsm(m.isa, kind, m.Data[lo*rb:hi*rb], rb, cols, hi-lo, x, s.pairs, n, out[lo:], m.Rows)
	}
	if done < 0 {
		return false
	}
	for r := lo; r < hi && done < cols; r++ {
		for t := range n {
			xt := x[t*cols+done : (t+1)*cols]
			var v float32
			switch kind {
			case floatF32:
				v = dotF32(m.f32[r*cols+done:(r+1)*cols], xt)
			case floatF16:
				v = dotF16(m.u16[r*cols+done:(r+1)*cols], xt)
			default:
				v = dotBF16(m.u16[r*cols+done:(r+1)*cols], xt)
			}
			out[t*m.Rows+r] += v
		}
	}
	return true
}

// dotRow is one weight row against token t's activations (x as floats,
// q as quantised for the integer formats).
func (m *Matrix) dotRow(r int, row []byte, x []float32, q *Q8, t int, s *Scratch, worker int) float32 {
	cols := m.Cols
	switch m.Type {
	case gguf.F32:
		if m.f32 != nil {
			w := m.f32[r*cols : (r+1)*cols]
			v, done := dotF32Asm(m.isa, w, x)
			return v + dotF32(w[done:], x[done:])
		}
	case gguf.F16:
		if m.u16 != nil {
			w := m.u16[r*cols : (r+1)*cols]
			v, done := dotF16Asm(m.isa, w, x)
			return v + dotF16(w[done:], x[done:])
		}
	case gguf.BF16:
		if m.u16 != nil {
			w := m.u16[r*cols : (r+1)*cols]
			v, done := dotBF16Asm(m.isa, w, x)
			return v + dotBF16(w[done:], x[done:])
		}
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0:
		nb := cols / 32
		return dotQ8Lanes(m.Type, row, q.Q[t*cols:(t+1)*cols], q.D[t*nb:(t+1)*nb])
	case gguf.Q4_1, gguf.Q5_1:
		nb := cols / 32
		return m.dotQ8_1(row, q.Q[t*cols:(t+1)*cols], q.D[t*nb:(t+1)*nb])
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		nb := cols / 256
		qs, d, bs := q.Q[t*cols:(t+1)*cols], q.D[t*nb:(t+1)*nb], q.BSums[t*nb*16:(t+1)*nb*16]
		switch m.Type {
		case gguf.Q4_K:
			return dotQ4K(row, qs, d, bs)
		case gguf.Q5_K:
			return dotQ5K(row, qs, d, bs)
		}
		return dotQ6K(row, qs, d, bs)
	}
	// F32, F16 and BF16 on a big-endian host: dequantise the row.
	buf := resize(s.rows[worker], cols)
	s.rows[worker] = buf
	m.Row(r, buf)
	return dotF32(buf, x)
}

// dotQ8_1 is Q4_1/Q5_1 (rare in current files) against Q8_0 activations:
// each block dequantised and dotted in float.
func (m *Matrix) dotQ8_1(row []byte, q []int8, d []float32) float32 {
	var sum float32
	bb := m.Type.BlockBytes()
	var wq [32]float32
	for b := range d {
		blk, qs := row[b*bb:(b+1)*bb], q[b*32:b*32+32]
		if m.Type == gguf.Q4_1 {
			dequantQ4_1(blk, wq[:])
		} else {
			dequantQ5_1(blk, wq[:])
		}
		var s float32
		for j := range 32 {
			s += wq[j] * float32(qs[j])
		}
		sum += s * d[b]
	}
	return sum
}
