package tensor

import (
	"encoding/binary"
	"fmt"
	"sync"
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
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data, rowBytes: int(rb)}
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
	if err := Dequantize(m.Type, m.Data[r*m.rowBytes:(r+1)*m.rowBytes], dst); err != nil {
		panic("BUG: tensor: " + err.Error())
	}
}

// Scratch is per-call working memory for MulBatch; reuse it across calls.
type Scratch struct {
	act  []float32 // activations rounded for F16/BF16 weights
	q    Q8
	rows [][]float32 // per worker: one dequantised weight row
}

// MulBatch computes out[t·Rows+r] = Σ_c W[r][c]·x[t·Cols+c] for n tokens,
// with the activations rounded or quantised to the weight's dot-product
// type exactly as llama.cpp does. Rows are split across threads.
func (m *Matrix) MulBatch(x []float32, n int, out []float32, threads int, s *Scratch) {
	if len(x) < n*m.Cols || len(out) < n*m.Rows {
		panic(fmt.Sprintf("BUG: tensor: MulBatch of %d tokens: x %d, out %d for %dx%d", n, len(x), len(out), m.Rows, m.Cols))
	}
	x = x[:n*m.Cols]
	switch m.Type {
	case gguf.F16:
		s.act = resize(s.act, len(x))
		for i, v := range x {
			s.act[i] = RoundF16(v)
		}
		x = s.act
	case gguf.BF16:
		s.act = resize(s.act, len(x))
		for i, v := range x {
			s.act[i] = BF16ToF32(F32ToBF16(v))
		}
		x = s.act
	case gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0:
		QuantizeQ8_0(x, &s.q)
	case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		QuantizeQ8_K(x, &s.q)
	}
	threads = max(1, min(threads, m.Rows/8))
	for len(s.rows) < threads {
		s.rows = append(s.rows, make([]float32, m.Cols))
	}
	if threads == 1 {
		m.mulRows(0, m.Rows, x, n, out, s, s.rows[0][:0])
		return
	}
	var wg sync.WaitGroup
	chunk := (m.Rows + threads - 1) / threads
	for w := range threads {
		lo, hi := w*chunk, min(m.Rows, (w+1)*chunk)
		if lo >= hi {
			break
		}
		buf := s.rows[w][:0]
		wg.Go(func() { m.mulRows(lo, hi, x, n, out, s, buf) })
	}
	wg.Wait()
}

func (m *Matrix) mulRows(lo, hi int, x []float32, n int, out []float32, s *Scratch, buf []float32) {
	cols := m.Cols
	for r := lo; r < hi; r++ {
		switch m.Type {
		case gguf.F32:
			w := m.f32[r*cols : (r+1)*cols]
			for t := range n {
				out[t*m.Rows+r] = dotF32(w, x[t*cols:(t+1)*cols])
			}
		case gguf.F16, gguf.BF16:
			buf = resize(buf, cols)
			m.Row(r, buf)
			for t := range n {
				out[t*m.Rows+r] = dotF32(buf, x[t*cols:(t+1)*cols])
			}
		case gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
			buf = resize(buf, cols)
			m.Row(r, buf)
			for t := range n {
				out[t*m.Rows+r] = dotQ8K(buf, s.q.Q[t*cols:(t+1)*cols], s.q.D[t*cols/256:(t+1)*cols/256])
			}
		default:
			row := m.Data[r*m.rowBytes : (r+1)*m.rowBytes]
			for t := range n {
				out[t*m.Rows+r] = m.dotQ8_0(row, s.q.Q[t*cols:(t+1)*cols], s.q.D[t*cols/32:(t+1)*cols/32])
			}
		}
	}
}

func dotF32(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotQ8K is dot(dequantised weight row, q·d) per 256-block: the value
// llama.cpp's K-quant dot products compute.
func dotQ8K(w []float32, q []int8, d []float32) float32 {
	var sum float32
	for b := range d {
		var s float32
		ws, qs := w[b*256:b*256+256], q[b*256:b*256+256]
		for j := range 256 {
			s += ws[j] * float32(qs[j])
		}
		sum += s * d[b]
	}
	return sum
}

// dotQ8_0 is the integer block dot of a Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weight row
// with Q8_0 activations: Σ_blocks d_w·d_a·Σ w_q·a_q (plus m·d_a·Σ a_q for
// the types with a minimum).
func (m *Matrix) dotQ8_0(row []byte, q []int8, d []float32) float32 {
	var sum float32
	bb := m.Type.BlockBytes()
	for b := range d {
		blk, qs := row[b*bb:(b+1)*bb], q[b*32:b*32+32]
		var sumi int32
		switch m.Type {
		case gguf.Q8_0:
			for j := range 32 {
				sumi += int32(int8(blk[2+j])) * int32(qs[j])
			}
			sum += float32(sumi) * (f16at(blk, 0) * d[b])
		case gguf.Q4_0:
			for j := range 16 {
				sumi += (int32(blk[2+j]&0xf)-8)*int32(qs[j]) + (int32(blk[2+j]>>4)-8)*int32(qs[j+16])
			}
			sum += float32(sumi) * (f16at(blk, 0) * d[b])
		case gguf.Q5_0:
			qh := binary.LittleEndian.Uint32(blk[2:])
			for j := range 16 {
				h0 := int32((qh>>j)<<4) & 0x10
				h1 := int32(qh>>(j+12)) & 0x10
				sumi += ((int32(blk[6+j]&0xf)|h0)-16)*int32(qs[j]) + ((int32(blk[6+j]>>4)|h1)-16)*int32(qs[j+16])
			}
			sum += float32(sumi) * (f16at(blk, 0) * d[b])
		case gguf.Q4_1, gguf.Q5_1:
			// Rare in current files: dequantise the block and dot in float.
			var wq [32]float32
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
	}
	return sum
}
