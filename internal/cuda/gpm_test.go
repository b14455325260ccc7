package cuda

import (
	"testing"
	"time"
)

// checkGPMUnderLoad reads GPM's metrics over ~0.3 s of a memory-bound
// kernel run back to back: the engine and DRAM must read busy.
func checkGPMUnderLoad(t *testing.T, c *Context, dev *NVMLDevice) {
	before, err := dev.NewGPMSample()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Free()
	after, err := dev.NewGPMSample()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Free()
	const n = 64 << 20 // floats: 256 MiB
	var launches int
	start := time.Now()
	err = c.Do(func() error {
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
		if err := before.Take(); err != nil {
			return err
		}
		var a Args
		for time.Since(start) < 300*time.Millisecond {
			for range 50 {
				if err := f.Launch(s, Dim{X: n / 256}, Dim{X: 256}, 0, a.Reset().Ptr(p).Int(n)); err != nil {
					return err
				}
				launches++
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
		}
		return after.Take()
	})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	ids := []int{GPMGraphicsUtil, GPMSMUtil, GPMSMOccupancy, GPMAnyTensorUtil, GPMDRAMBWUtil}
	v, err := GPMMetrics(before, after, ids...)
	if err != nil {
		t.Fatal(err)
	}
	gbps := float64(launches) * 8 * n / elapsed.Seconds() / 1e9
	t.Logf("GPM over %d launches in %v (%.0f GB/s read+write): graphics %.1f%%, SM active %.1f%%, occupancy %.1f%%, tensor %.1f%%, DRAM %.1f%%",
		launches, elapsed.Round(time.Millisecond), gbps, v[0], v[1], v[2], v[3], v[4])
	if v[0] < 50 || v[4] < 30 {
		t.Errorf("a GPU streaming memory read graphics %.1f%%, DRAM %.1f%%: want ≥ 50 and ≥ 30", v[0], v[4])
	}
}
