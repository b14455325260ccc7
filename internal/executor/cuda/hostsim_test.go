package cuda

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// The kernels' own code run on the CPU: testdata/hostsim compiles the
// CUDA C of kernels/ with the system's C++ compiler against a serial
// simulation of a thread block (sim.h), with every buffer guarded so that
// an out-of-bounds access stops the job naming the buffer. Each job reads
// its inputs on stdin and writes its outputs on stdout.

var hostSimBuild struct {
	sync.Once
	dir, path string
	err       error
}

// TestMain removes the host simulation's build.
func TestMain(m *testing.M) {
	code := m.Run()
	if hostSimBuild.dir != "" {
		os.RemoveAll(hostSimBuild.dir)
	}
	os.Exit(code)
}

// hostSim is the simulation's program, built once per test binary; without
// a C++ compiler the test is skipped (failed under CI=true).
func hostSim(t *testing.T) string {
	t.Helper()
	cxx := ""
	for _, name := range []string{"c++", "g++", "clang++"} {
		if p, err := exec.LookPath(name); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		cxx = reftest.Tool(t, "c++")
	}
	b := &hostSimBuild
	b.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "glassbox-hostsim"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "hostsim")
		cmd := exec.Command(cxx, "-std=c++17", "-O2", "-fno-strict-aliasing", "-Wall", "-Wno-unknown-pragmas",
			"-I", "kernels", "-o", b.path, filepath.Join("testdata", "hostsim", "main.cc"), "-lm")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = &simError{what: "build the host simulation with " + cxx, out: string(out), err: err}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

type simError struct {
	what, out string
	err       error
}

func (e *simError) Error() string {
	return e.what + ": " + e.err.Error() + "\n" + strings.TrimSpace(e.out)
}

// simIn builds a job's input: little-endian values in the job's order.
type simIn struct{ bytes.Buffer }

func (b *simIn) ints(v ...int) *simIn {
	for _, x := range v {
		_ = binary.Write(&b.Buffer, binary.LittleEndian, int32(x))
	}
	return b
}

func (b *simIn) i32s(v []int32) *simIn { _ = binary.Write(&b.Buffer, binary.LittleEndian, v); return b }
func (b *simIn) f32s(v []float32) *simIn {
	_ = binary.Write(&b.Buffer, binary.LittleEndian, v)
	return b
}
func (b *simIn) u16s(v []uint16) *simIn {
	_ = binary.Write(&b.Buffer, binary.LittleEndian, v)
	return b
}
func (b *simIn) u64s(v []uint64) *simIn {
	_ = binary.Write(&b.Buffer, binary.LittleEndian, v)
	return b
}

// simOut reads a job's output in order.
type simOut struct {
	t *testing.T
	r *bytes.Reader
}

func (o *simOut) read(v any) {
	o.t.Helper()
	if err := binary.Read(o.r, binary.LittleEndian, v); err != nil {
		o.t.Fatalf("host simulation: short output: %v", err)
	}
}

func (o *simOut) i32s(n int) []int32   { v := make([]int32, n); o.read(v); return v }
func (o *simOut) f32s(n int) []float32 { v := make([]float32, n); o.read(v); return v }
func (o *simOut) u16s(n int) []uint16  { v := make([]uint16, n); o.read(v); return v }

// runSim runs one job; an out-of-bounds access, a deadlock or any other
// failure of the program fails the test with its message.
func runSim(t *testing.T, job string, in *simIn) *simOut {
	t.Helper()
	out, err := trySim(t, job, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trySim(t *testing.T, job string, in *simIn) (*simOut, error) {
	t.Helper()
	cmd := exec.Command(hostSim(t), job)
	cmd.Stdin = &in.Buffer
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &simError{what: "kernel job " + job + " on the host", out: stderr.String(), err: err}
	}
	return &simOut{t: t, r: bytes.NewReader(stdout.Bytes())}, nil
}

// f32sOf is n float32 values of v.
func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

var nan32 = float32(math.NaN())
