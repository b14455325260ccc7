// Package cuda binds, at run time and without cgo, the parts of NVIDIA's
// libraries that glassbox's GPU executor uses: the CUDA driver API
// (libcuda: devices, a context, modules from PTX, memory, streams, events,
// launches, graphs), cuBLASLt (GEMMs) and NVML (the board's counters,
// with GPM on Hopper). A machine without them gets a plain error from
// Open, and the same binary runs on its CPU.
//
// Each library is a table of typed Go functions, one per C function and
// typed as its prototype (DriverAPI, BLASLtAPI, nvmlAPI), with C structs
// as Go structs of the same layout (HeuristicResult, nvml_api.go's):
// purego fills the tables from the libraries, tests fill them with a
// fake (internal/fakecuda). No call passes an address as an integer, so
// every variable handed to C as an out-parameter lives on the heap.
//
// A CUDA context is current on one OS thread: Context owns a goroutine
// locked to its thread, and everything that touches the device runs
// inside Context.Do. It must not import the engine, server, metrics or
// executor packages; it reads no environment (callers pass paths).
package cuda

import (
	"errors"
	"fmt"
	"reflect"
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

// bind fills api, a pointer to one of the API tables (DriverAPI,
// BLASLtAPI, nvmlAPI), from the library's symbols: each func field
// tagged `c:"symbol"` becomes a typed call of that C function. A field
// tagged `c:"symbol,optional"` stays nil when the library lacks it (an
// older NVML); a missing required one is named in the error.
func (l *library) bind(api any) error {
	v := reflect.ValueOf(api).Elem()
	var missing []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag, ok := f.Tag.Lookup("c")
		if !ok || f.Type.Kind() != reflect.Func {
			continue
		}
		name, optional := strings.CutSuffix(tag, ",optional")
		sym := dlsym(l.h, name)
		if sym == 0 {
			if !optional {
				missing = append(missing, name)
			}
			continue
		}
		registerFunc(v.Field(i).Addr().Interface(), sym)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", l.path, strings.Join(missing, ", "))
	}
	return nil
}

// unbound names api's required functions that are nil: a table a test
// filled must still have every function the package may call.
func unbound(api any) error {
	v := reflect.ValueOf(api).Elem()
	var missing []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag, ok := f.Tag.Lookup("c")
		if ok && f.Type.Kind() == reflect.Func && !strings.HasSuffix(tag, ",optional") && v.Field(i).IsNil() {
			missing = append(missing, tag)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s without %s", v.Type().Name(), strings.Join(missing, ", "))
	}
	return nil
}

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
