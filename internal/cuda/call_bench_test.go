//go:build linux && !nocuda

package cuda

import (
	"testing"

	"github.com/ebitengine/purego"
)

// BenchmarkTypedCall is the host cost of one C call through a typed
// binding (purego.RegisterFunc, what every driver call now is) against
// the untyped purego.SyscallN the bindings used before, on libc's
// ldexp-free abs: what each kernel launch and GEMM of an eager step pays
// before the driver's own work. Run it on an idle machine:
//
//	go test -run '^$' -bench TypedCall -benchmem ./internal/cuda
func BenchmarkTypedCall(b *testing.B) {
	lib, err := openLibrary("libc.so.6")
	if err != nil {
		b.Skipf("SKIPPED: glibc's libc.so.6: %v", err)
	}
	var api struct {
		Abs func(v int32) int32 `c:"abs"`
		// An eleven-argument signature like cuLaunchKernel's, bound to a
		// function that reads only its first argument.
		Launch func(a uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra *uintptr) int32 `c:"abs"`
	}
	if err := lib.bind(&api); err != nil {
		b.Fatal(err)
	}
	sym := dlsym(lib.h, "abs")
	var params uintptr
	b.Run("typed/1 arg", func(b *testing.B) {
		for b.Loop() {
			api.Abs(-3)
		}
	})
	b.Run("typed/11 args", func(b *testing.B) {
		for b.Loop() {
			api.Launch(3, 1, 1, 1, 256, 1, 1, 0, 0, &params, nil)
		}
	})
	b.Run("SyscallN/1 arg", func(b *testing.B) {
		for b.Loop() {
			purego.SyscallN(sym, uintptr(3))
		}
	})
}
