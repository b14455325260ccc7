package reftest

import (
	"path/filepath"
	"testing"
)

func TestPathFindsShared(t *testing.T) {
	p := Path(t, "compat")
	if filepath.Base(p) != "compat" || filepath.Base(filepath.Dir(p)) != "shared" {
		t.Errorf("Path = %s, want …/shared/compat", p)
	}
}

// fakeTB records how a missing path was reported.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Skipf(string, ...any)     { f.skipped = true; panic(f) }
func (f *fakeTB) Fatalf(string, ...any)    { f.failed = true; panic(f) }
func (f *fakeTB) report(do func()) *fakeTB { defer func() { _ = recover() }(); do(); return f }

func TestMissingSkipsOrFailsUnderCI(t *testing.T) {
	for _, tt := range []struct {
		ci             string
		skip, failWant bool
	}{{"", true, false}, {"true", false, true}} {
		t.Setenv("CI", tt.ci)
		f := &fakeTB{}
		f.report(func() { Path(f, "no-such-reference-file") })
		if f.skipped != tt.skip || f.failed != tt.failWant {
			t.Errorf("CI=%q: skipped %v failed %v, want %v %v", tt.ci, f.skipped, f.failed, tt.skip, tt.failWant)
		}
	}
}
