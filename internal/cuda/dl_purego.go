//go:build linux && !nocuda

package cuda

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// supported says whether this build can load NVIDIA's libraries at all.
const supported = true

// dlopen opens a shared library by name (the loader's search) or path.
func dlopen(name string) (uintptr, error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", name, err)
	}
	return h, nil
}

// dlsym is the address of a symbol, 0 when the library lacks it.
func dlsym(h uintptr, name string) uintptr {
	p, err := purego.Dlsym(h, name)
	if err != nil {
		return 0
	}
	return p
}

// ccall calls a C function with integer and pointer arguments (none of
// the functions bound here takes a float by value) and returns its
// integer result.
func ccall(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
