//go:build !linux || nocuda

package cuda

// supported says whether this build can load NVIDIA's libraries at all:
// NVIDIA's Linux driver only, and not in a build tagged nocuda (a fully
// static binary).
const supported = false

func dlopen(string) (uintptr, error) { return 0, ErrUnsupported }

func dlsym(uintptr, string) uintptr { return 0 }

func ccall(uintptr, ...uintptr) uintptr { panic("BUG: cuda: call without a loaded library") }
