package cuda

import (
	"os"
	"strings"
	"testing"
)

// libcAPI is a table bound as the driver's is, from C functions every
// glibc machine has: the typed bindings checked through purego without a
// GPU.
type libcAPI struct {
	Strlen func(s *byte) uint64                `c:"strlen"`
	Frexp  func(x float64, exp *int32) float64 `c:"frexp"` // an out-parameter and floats both ways
	Gone   func() int32                        `c:"glassbox_no_such_symbol"`
	Maybe  func() int32                        `c:"glassbox_no_such_symbol_either,optional"`
}

func TestBindTypedFunctions(t *testing.T) {
	if !Supported() {
		t.Skip("SKIPPED: this build loads no libraries (not Linux, or -tags nocuda)")
	}
	lib, err := openLibrary("libc.so.6")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("glibc's libc.so.6 under CI=true: %v", err)
		}
		t.Skipf("SKIPPED: the test binds glibc's libc.so.6, which this machine lacks (%v)", err)
	}
	var api libcAPI
	err = lib.bind(&api)
	if err == nil || !strings.Contains(err.Error(), "glassbox_no_such_symbol") || strings.Contains(err.Error(), "either") {
		t.Errorf("bind: %v, want it to name the one missing required symbol", err)
	}
	if api.Maybe != nil {
		t.Error("an optional symbol the library lacks is bound")
	}
	s := []byte("glassbox\x00")
	if n := api.Strlen(&s[0]); n != 8 {
		t.Errorf("strlen: %d, want 8", n)
	}
	var exp int32
	if m := api.Frexp(48, &exp); m != 0.75 || exp != 6 {
		t.Errorf("frexp(48) = %v × 2^%d, want 0.75 × 2^6", m, exp)
	}
}
