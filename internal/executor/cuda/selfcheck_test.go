package cuda

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// fakeProbe answers the self-check's runs: the plain kernels' output is
// ones; a fast kernel's is what fast says for the check (nil: ones too).
type fakeProbe struct {
	dt     cuda.DType // the type the probe was opened for
	fast   func(c check) ([]float32, error)
	runs   []string // "name fast" / "name plain"
	closed bool
}

func (f *fakeProbe) run(c check, ks kernelSet) ([]float32, error) {
	isFast := *c.on(&ks)
	f.runs = append(f.runs, c.name+map[bool]string{true: " fast", false: " plain"}[isFast])
	if isFast && f.fast != nil {
		return f.fast(c)
	}
	return filled(8, 1), nil
}

func (f *fakeProbe) open(s attnShape, dt cuda.DType, per int) (kernelProbe, func(), error) {
	f.dt = dt
	return f, func() { f.closed = true }, nil
}

var llama8B = attnShape{heads: 32, kvHeads: 8, headDim: 128, blockSize: 16}

// TestSelfCheckKeepsWhatAgrees: both fast kernels agree with the plain
// ones (within the output type's rounding for bf16): both are kept, each
// check ran both kernels, in the model's activation type, and the inputs
// were freed.
func TestSelfCheckKeepsWhatAgrees(t *testing.T) {
	for _, dt := range []cuda.DType{cuda.F32, cuda.F16, cuda.BF16} {
		f := &fakeProbe{fast: func(c check) ([]float32, error) {
			v := filled(8, 1)
			if dt == cuda.BF16 {
				v[3] = 1 + 1.0/128 // one bf16 step: rounding, not a fault
			}
			return v, nil
		}}
		ks, err := checkKernels(kernelsFor(h100, llama8B), llama8B, dt, f.open, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ks.flash || !ks.tiled || ks.note != "" || ks.prefillTokens() != 16 {
			t.Errorf("%s: %+v", dt, ks)
		}
		if f.dt != dt || !f.closed || len(f.runs) != 6 {
			t.Errorf("%s: the probe was opened for %s, closed %v, ran %v", dt, f.dt, f.closed, f.runs)
		}
	}
}

// TestSelfCheckFallsBackWhenAFastKernelFailsToLaunch: a fast kernel the
// driver refuses to launch (resources) leaves the executor on the plain
// kernel, with a note; start-up goes on. It used to fail Start.
func TestSelfCheckFallsBackWhenAFastKernelFailsToLaunch(t *testing.T) {
	f := &fakeProbe{fast: func(c check) ([]float32, error) {
		if c.decode {
			return filled(8, 1), nil
		}
		return nil, &cuda.Error{Call: "cuLaunchKernel", Code: 701, Name: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"}
	}}
	ks, err := checkKernels(kernelsFor(h100, llama8B), llama8B, cuda.BF16, f.open, time.Minute)
	if err != nil {
		t.Fatalf("a fast kernel that cannot launch failed start-up: %v", err)
	}
	if ks.flash || !ks.tiled || !strings.Contains(ks.String(), "tensor-core prefill failed to run") {
		t.Errorf("kernels %s", ks)
	}
	if !strings.HasPrefix(ks.String(), "CUDA-core prefill, tiled decode attention") {
		t.Errorf("kernels %s", ks)
	}
}

// TestSelfCheckTurnsOffWhatDiffers: a fast kernel that gives other
// numbers (or NaN) is turned off; the other splits' check of the same
// kernel is not run again.
func TestSelfCheckTurnsOffWhatDiffers(t *testing.T) {
	f := &fakeProbe{fast: func(c check) ([]float32, error) {
		v := filled(8, 1)
		if c.decode {
			v[0] = nan32
		} else {
			v[5] = 1.1
		}
		return v, nil
	}}
	ks, err := checkKernels(kernelsFor(h100, llama8B), llama8B, cuda.F16, f.open, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ks.flash || ks.tiled {
		t.Errorf("kernels %s", ks)
	}
	if strings.Contains(strings.Join(f.runs, ","), "4 splits") {
		t.Errorf("ran %v: the 4-split check of a kernel already off", f.runs)
	}
}

// TestSelfCheckStickyFaultSaysTheContextIsDead: a fast kernel that faults
// leaves the context unusable: start-up ends with an error that says so
// (and the probe is not freed: every call on the context would fail).
func TestSelfCheckStickyFaultSaysTheContextIsDead(t *testing.T) {
	f := &fakeProbe{fast: func(c check) ([]float32, error) {
		if !c.decode {
			return filled(8, 1), nil
		}
		return nil, &cuda.Error{Call: "cuStreamSynchronize", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}
	}}
	_, err := checkKernels(kernelsFor(h100, llama8B), llama8B, cuda.BF16, f.open, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "context is dead") || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") ||
		!strings.Contains(err.Error(), "tiled decode") {
		t.Errorf("err %v", err)
	}
	if f.closed {
		t.Error("freed the inputs on a dead context")
	}
}

// TestSelfCheckHangIsBounded: a fast kernel that never ends makes the
// check give up after its limit with an error naming it, instead of
// hanging start-up.
func TestSelfCheckHangIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := &fakeProbe{fast: func(c check) ([]float32, error) {
			if c.decode {
				<-release // the GPU never finishes
			}
			return filled(8, 1), nil
		}}
		start := time.Now()
		_, err := checkKernels(kernelsFor(h100, llama8B), llama8B, cuda.F16, f.open, selfCheckLimit)
		if !errors.Is(err, cuda.ErrHung) || !strings.Contains(err.Error(), "tiled decode") {
			t.Errorf("err %v", err)
		}
		if waited := time.Since(start); waited != selfCheckLimit {
			t.Errorf("gave up after %v, want %v", waited, selfCheckLimit)
		}
		close(release) // the hung wait's goroutine ends with the test
	})
}

// TestSelfCheckWithoutFastKernels: a shape no fast kernel takes runs no
// check.
func TestSelfCheckWithoutFastKernels(t *testing.T) {
	f := &fakeProbe{}
	s8 := attnShape{heads: 8, kvHeads: 4, headDim: 8, blockSize: 16}
	ks, err := checkKernels(kernelsFor(h100, s8), s8, cuda.F32, f.open, time.Minute)
	if err != nil || ks.flash || ks.tiled || len(f.runs) != 0 {
		t.Errorf("kernels %s, err %v, runs %v", ks, err, f.runs)
	}
}
