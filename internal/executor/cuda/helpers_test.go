package cuda

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/cuda"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/tensor"
)

// openTestDevice opens GPU 0 for a test, or ends it saying why not.
func openTestDevice(t *testing.T) *Device {
	t.Helper()
	d, err := OpenDevice(DeviceConfig{BLASLt: os.Getenv("GLASSBOX_CUBLAS")})
	if err != nil {
		if _, drvErr := cuda.OpenDriver(); drvErr != nil {
			reftest.NoGPU(t, err)
		}
		t.Fatal(err) // a driver, but the device would not open
	}
	t.Cleanup(d.Close)
	return d
}

// buf is a device buffer for tests, freed with the test.
func (d *Device) testAlloc(t *testing.T, n int64) cuda.Ptr {
	t.Helper()
	var p cuda.Ptr
	if err := d.Do(func() (err error) { p, err = d.ctx.Alloc(max(n, 1)); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Do(func() error { d.ctx.Free(p); return nil }) })
	return p
}

// put uploads float32 values as dt.
func (d *Device) put(t *testing.T, dt cuda.DType, v []float32) cuda.Ptr {
	t.Helper()
	p := d.testAlloc(t, int64(len(v)*dt.Size()))
	err := d.Do(func() error {
		switch dt {
		case cuda.F16, cuda.BF16:
			return cuda.CopyIn(d.stream, p, toHalf(dt, v))
		}
		return cuda.CopyIn(d.stream, p, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func putInts(t *testing.T, d *Device, v []int32) cuda.Ptr {
	t.Helper()
	p := d.testAlloc(t, int64(4*len(v)))
	if err := d.Do(func() error { return cuda.CopyIn(d.stream, p, v) }); err != nil {
		t.Fatal(err)
	}
	return p
}

// get waits for the stream and downloads n values of type dt as float32.
func (d *Device) get(t *testing.T, dt cuda.DType, p cuda.Ptr, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	err := d.Do(func() error {
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		if dt == cuda.F32 {
			return cuda.CopyOut(d.stream, out, p)
		}
		h := make([]uint16, n)
		if err := cuda.CopyOut(d.stream, h, p); err != nil {
			return err
		}
		copy(out, fromHalf(dt, h))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs f on the device's thread, failing the test on error.
func (d *Device) run(t *testing.T, f func() error) {
	t.Helper()
	if err := d.Do(f); err != nil {
		t.Fatal(err)
	}
}

func toHalf(dt cuda.DType, v []float32) []uint16 {
	h := make([]uint16, len(v))
	for i, x := range v {
		if dt == cuda.BF16 {
			h[i] = tensor.F32ToBF16(x)
		} else {
			h[i] = tensor.F32ToF16(x)
		}
	}
	return h
}

func fromHalf(dt cuda.DType, h []uint16) []float32 {
	v := make([]float32, len(h))
	for i, x := range h {
		if dt == cuda.BF16 {
			v[i] = tensor.BF16ToF32(x)
		} else {
			v[i] = tensor.F16ToF32(x)
		}
	}
	return v
}

// roundTo rounds v as storing it as dt would.
func roundTo(dt cuda.DType, v float32) float32 {
	switch dt {
	case cuda.BF16:
		return tensor.BF16ToF32(tensor.F32ToBF16(v))
	case cuda.F16:
		return tensor.RoundF16(v)
	}
	return v
}

func randoms(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// maxRelErr is the largest |got-want| over the largest |want|: errors
// measured against the values' scale, not each tiny value's.
func maxRelErr(got, want []float32) float64 {
	var worst, scale float64
	for i := range want {
		scale = max(scale, math.Abs(float64(want[i])))
	}
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i])-float64(want[i])))
	}
	if scale == 0 {
		return worst
	}
	return worst / scale
}

// checkClose fails the test when got is further from want than bound
// (relative to want's largest value), logging the error either way.
func checkClose(t *testing.T, what string, got, want []float32, bound float64) {
	t.Helper()
	e := maxRelErr(got, want)
	t.Logf("%s: max error %.3g of the largest value (bound %.1g)", what, e, bound)
	if e > bound || math.IsNaN(e) {
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > bound*math.Abs(float64(want[i]))+1e-30 {
				t.Errorf("%s: first difference at %d: got %v, want %v", what, i, got[i], want[i])
				break
			}
		}
		t.Errorf("%s: max relative error %.3g above %.1g", what, e, bound)
	}
}
