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

// registerFunc makes *fptr, a typed Go function, call the C function at
// sym (purego.RegisterFunc: arguments by their Go kind, pointers kept
// alive for the call, the result converted back).
func registerFunc(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }
