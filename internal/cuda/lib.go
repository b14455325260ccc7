// Package cuda binds, at run time and without cgo, the parts of NVIDIA's
// libraries that glassbox's GPU executor uses: the CUDA driver API
// (libcuda: devices, a context, modules from PTX, memory, streams, events,
// launches, graphs), cuBLASLt (GEMMs) and NVML (the board's counters,
// with GPM on Hopper). A machine without them gets a plain error from
// Open, and the same binary runs on its CPU.
//
// A CUDA context is current on one OS thread: Context owns a goroutine
// locked to its thread, and everything that touches the device runs
// inside Context.Do. It must not import the engine, server, metrics or
// executor packages; it reads no environment (callers pass paths).
package cuda

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrUnsupported is returned on builds that cannot load NVIDIA's
// libraries (not Linux, or the nocuda tag).
var ErrUnsupported = errors.New("this glassbox build has no CUDA support (Linux builds without the nocuda tag have it)")

// Supported reports whether this build can load NVIDIA's libraries.
func Supported() bool { return supported }

// library is an opened shared library.
type library struct {
	path string
	h    uintptr
}

func openLibrary(names ...string) (*library, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	var errs []string
	for _, n := range names {
		h, err := dlopen(n)
		if err == nil {
			return &library{path: n, h: h}, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

// bind fills each function pointer from the library's symbols, naming
// every missing one.
func (l *library) bind(syms map[string]*uintptr) error {
	var missing []string
	for name, p := range syms {
		if *p = dlsym(l.h, name); *p == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", l.path, strings.Join(missing, ", "))
	}
	return nil
}

// call is ccall with Go pointers among the arguments kept alive and in
// place for the call's duration (converted in the argument list, as
// unsafe.Pointer's rule 4 asks).
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) uintptr { return ccall(fn, args...) }

// ptr is the address of a Go value for a C out-parameter; the value must
// stay reachable until the call returns (pass it in the call's argument
// list).
func ptr[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// cString is a NUL-terminated copy of s for C.
func cString(s string) []byte { return append([]byte(s), 0) }

// goString reads a NUL-terminated C string of at most max bytes.
func goString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cStringAt reads a NUL-terminated string from C memory (nil: "").
func cStringAt(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
