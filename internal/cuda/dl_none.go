//go:build !linux || nocuda

package cuda

// supported says whether this build can load NVIDIA's libraries at all:
// NVIDIA's Linux driver only, and not in a build tagged nocuda (a fully
// static binary, which links no package that imports this one: the
// executor and the replica's GPU backend are left out of it).
const supported = false

func dlopen(string) (uintptr, error) { return 0, ErrUnsupported }

func dlsym(uintptr, string) uintptr { return 0 }

func registerFunc(any, uintptr) { panic("BUG: cuda: bind without a loaded library") }
