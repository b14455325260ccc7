package cuda

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// openGPU opens the driver and GPU 0, or ends the test saying why not.
func openGPU(t *testing.T) *Context {
	t.Helper()
	d, err := OpenDriver()
	if err != nil {
		reftest.NoGPU(t, err)
	}
	n, err := d.DeviceCount()
	if err == nil && n == 0 {
		reftest.NoGPU(t, &Error{Call: "cuDeviceGetCount", Name: "no devices"})
	}
	if err != nil {
		reftest.NoGPU(t, err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.NewContext(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Logf("GPU 0: %s, compute %d.%d, %d SMs, %.1f GiB, L2 %d MiB, driver CUDA %s, bus %s", dev.Name, dev.Major, dev.Minor, dev.SMs,
		float64(dev.TotalMemory)/(1<<30), dev.L2Bytes>>20, d.Version(), dev.PCIBusID)
	return c
}

// addOne is a hand-written kernel: p[i] += 1 for i < n.
const addOne = `.version 7.0
.target sm_80
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r2, %r2, %r3, %r4;
	setp.ge.s32 %p, %r2, %r1;
	@%p bra DONE;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.s32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	add.f32 %f2, %f1, 0f3F800000;
	st.global.f32 [%rd3], %f2;
DONE:
	ret;
}
`

func TestNoDriverSaysSo(t *testing.T) {
	if _, err := OpenDriver(); err == nil {
		t.Skip("SKIPPED: this machine has an NVIDIA driver; the test checks the message without one")
	} else if msg := err.Error(); len(msg) < 10 || msg[:16] != "no NVIDIA driver" {
		t.Errorf("OpenDriver without a driver: %q, want it to start with 'no NVIDIA driver'", msg)
	}
}

// TestKernelGraphAndEvents runs the whole driver chain: PTX compiled by
// the driver, memory both ways, a launch, a captured graph replayed
// twice, and events timing it on the GPU.
func TestKernelGraphAndEvents(t *testing.T) {
	c := openGPU(t)
	const n = 1 << 20
	err := c.Do(func() error {
		m, err := c.LoadPTX([]byte(addOne))
		if err != nil {
			return err
		}
		defer m.Unload()
		f, err := m.Function("add_one")
		if err != nil {
			return err
		}
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		p, err := c.Alloc(4 * n)
		if err != nil {
			return err
		}
		defer c.Free(p)
		host := make([]float32, n)
		for i := range host {
			host[i] = float32(i)
		}
		if err := CopyIn(s, p, host); err != nil {
			return err
		}
		var a Args
		launch := func() error {
			return f.Launch(s, Dim{X: n / 256}, Dim{X: 256}, 0, a.Reset().Ptr(p).Int(n))
		}
		if err := launch(); err != nil {
			return err
		}
		if err := s.BeginCapture(); err != nil {
			return err
		}
		for range 3 {
			if err := launch(); err != nil {
				return err
			}
		}
		g, err := s.EndCapture()
		if err != nil {
			return err
		}
		defer g.Destroy()
		start, _ := c.NewEvent()
		end, _ := c.NewEvent()
		defer start.Destroy()
		defer end.Destroy()
		if err := start.Record(s); err != nil {
			return err
		}
		for range 2 {
			if err := g.Launch(s); err != nil {
				return err
			}
		}
		if err := end.Record(s); err != nil {
			return err
		}
		if err := end.Synchronize(); err != nil {
			return err
		}
		ms, err := end.Elapsed(start)
		if err != nil {
			return err
		}
		t.Logf("two replays of a 3-kernel graph over 4 MiB: %.3f ms on the GPU", ms)
		if ms <= 0 {
			t.Errorf("elapsed %v ms, want > 0", ms)
		}
		out := make([]float32, n)
		if err := CopyOut(s, out, p); err != nil {
			return err
		}
		for i, v := range out {
			if v != float32(i)+7 { // one launch, then 2 × 3 replayed
				t.Fatalf("element %d: %v, want %v", i, v, float32(i)+7)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWrongThreadIsInvalidContext(t *testing.T) {
	c := openGPU(t)
	// Outside Do the calling thread has no context: the driver must say
	// so rather than act on another's.
	done := make(chan error)
	go func() {
		_, err := c.Alloc(1024)
		done <- err
	}()
	if err := <-done; err == nil {
		t.Skip("SKIPPED: this goroutine happened to run on a thread with a current context")
	} else {
		t.Logf("outside Do: %v", err)
	}
}

func TestBLASLtGEMM(t *testing.T) {
	c := openGPU(t)
	err := c.Do(func() error {
		b, err := OpenBLASLt(c, os.Getenv("GLASSBOX_CUBLAS"), nil)
		if err != nil {
			return err
		}
		defer b.Close()
		t.Logf("cuBLASLt %s from %s", b.VersionString(), b.Path)
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		ws, err := c.Alloc(32 << 20)
		if err != nil {
			return err
		}
		defer c.Free(ws)
		for _, tt := range []struct {
			t          DType
			n, in, out int
		}{{BF16, 1, 4096, 1024}, {BF16, 64, 4096, 14336}, {F16, 7, 896, 4864}, {F32, 5, 64, 512}} {
			if err := checkGEMM(t, c, s, b, ws, tt.t, tt.n, tt.in, tt.out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkGEMM compares one GEMM (with accumulate into a prior Y) against a
// float64 product of the same rounded inputs.
func checkGEMM(t *testing.T, c *Context, s *Stream, b *BLASLt, ws Ptr, dt DType, n, in, out int) error {
	r := rand.New(rand.NewPCG(uint64(n), uint64(out)))
	w := make([]float32, out*in)
	x := make([]float32, n*in)
	y0 := make([]float32, n*out)
	for i := range w {
		w[i] = round(dt, float32(r.NormFloat64()*0.05))
	}
	for i := range x {
		x[i] = round(dt, float32(r.NormFloat64()))
	}
	for i := range y0 {
		y0[i] = float32(r.NormFloat64())
	}
	pw, err := upload(c, s, dt, w)
	if err != nil {
		return err
	}
	defer c.Free(pw)
	px, err := upload(c, s, dt, x)
	if err != nil {
		return err
	}
	defer c.Free(px)
	py, err := upload(c, s, F32, y0)
	if err != nil {
		return err
	}
	defer c.Free(py)
	g, err := b.Plan(dt, F32, n, in, out, 32<<20)
	if err != nil {
		return err
	}
	defer g.Destroy()
	if err := g.Run(s, pw, px, py, true, ws, 32<<20); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	got := make([]float32, n*out)
	if err := CopyOut(s, got, py); err != nil {
		return err
	}
	var worst float64
	for tok := range n {
		for o := range out {
			var want, mag float64
			for i := range in {
				p := float64(w[o*in+i]) * float64(x[tok*in+i])
				want += p
				mag += math.Abs(p)
			}
			want += float64(y0[tok*out+o])
			mag += math.Abs(float64(y0[tok*out+o]))
			worst = max(worst, math.Abs(float64(got[tok*out+o])-want)/mag)
		}
	}
	t.Logf("%s GEMM %d×%d by %d×%d (+= Y): worst error %.2g of the sum of |terms|", dt, n, in, out, in, worst)
	// f32 accumulation over at most 14336 terms: ~1e-6 of the terms' sum.
	if worst > 1e-5 {
		t.Errorf("%s GEMM %d×%d×%d: worst relative error %.3g, want ≤ 1e-5", dt, n, in, out, worst)
	}
	return nil
}

func round(dt DType, v float32) float32 {
	switch dt {
	case BF16:
		return math.Float32frombits(uint32(toBF16(v)) << 16)
	case F16:
		return fromF16(toF16(v))
	}
	return v
}

func upload(c *Context, s *Stream, dt DType, v []float32) (Ptr, error) {
	p, err := c.Alloc(int64(len(v) * dt.Size()))
	if err != nil {
		return 0, err
	}
	switch dt {
	case BF16:
		h := make([]uint16, len(v))
		for i, x := range v {
			h[i] = toBF16(x)
		}
		err = CopyIn(s, p, h)
	case F16:
		h := make([]uint16, len(v))
		for i, x := range v {
			h[i] = toF16(x)
		}
		err = CopyIn(s, p, h)
	default:
		err = CopyIn(s, p, v)
	}
	return p, err
}

func toBF16(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// toF16 and fromF16 handle the normal range the tests use.
func toF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int32(b>>23&0xff) - 127 + 15
	if e <= 0 {
		return sign
	}
	m := b & 0x7fffff
	h := uint32(e)<<10 | m>>13
	rest := m & 0x1fff
	if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

func fromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	if e == 0 {
		return math.Float32frombits(sign)
	}
	return math.Float32frombits(sign | (e+127-15)<<23 | uint32(h&0x3ff)<<13)
}

func TestNVML(t *testing.T) {
	c := openGPU(t)
	n, err := OpenNVML()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	drv, err := n.DriverVersion()
	if err != nil {
		t.Fatal(err)
	}
	dev, err := n.DeviceByPCI(c.Device.PCIBusID)
	if err != nil {
		t.Fatal(err)
	}
	name, err := dev.Name()
	if err != nil {
		t.Fatal(err)
	}
	uuid, _ := dev.UUID()
	total, free, used, err := dev.Memory()
	if err != nil {
		t.Fatal(err)
	}
	draw, limit, err := dev.Power()
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := dev.Clock(ClockSM)
	mem, _ := dev.Clock(ClockMemory)
	util, memUtil, _ := dev.Utilization()
	temp, _ := dev.Temperature()
	t.Logf("NVML: driver %s, %s %s, memory %d MiB (%d free, %d used), power %.0f W of %.0f, SM %d MHz, memory %d MHz, utilization %d%% (memory %d%%), %d °C",
		drv, name, uuid, total>>20, free>>20, used>>20, draw, limit, sm, mem, util, memUtil, temp)
	if name != c.Device.Name || total == 0 || limit <= 0 {
		t.Errorf("NVML's board (%q, %d bytes, limit %v W) is not the CUDA device %q", name, total, limit, c.Device.Name)
	}
	if !dev.GPMSupported() {
		if c.Device.Major >= 9 {
			t.Errorf("GPM not supported on a compute %d.%d board", c.Device.Major, c.Device.Minor)
		}
		t.Skip("SKIPPED: GPM needs Hopper or later")
	}
	checkGPMUnderLoad(t, c, dev)
}
