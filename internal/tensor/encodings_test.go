//go:build amd64

package tensor

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestARM64Encodings re-assembles the mnemonic beside every WORD of the
// arm64 kernels (kernelgen's encoders and the instructions it writes
// verbatim) with GNU as and requires the same instruction word, so that
// the hand-encoded NEON instructions say what they do. (It runs on the x86
// build, where the cross binutils are; the kernels themselves are tested
// under qemu.)
func TestARM64Encodings(t *testing.T) {
	as := reftest.Tool(t, "aarch64-linux-gnu-as")
	objdump := reftest.Tool(t, "aarch64-linux-gnu-objdump")
	re := regexp.MustCompile(`(?m)^\s*WORD \$0x([0-9a-f]{8}) // (.+)$`)
	var ms [][]string
	for _, file := range []string{"kernels_arm64.s", "x8_arm64.s"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindAllStringSubmatch(string(src), -1); len(m) >= 100 {
			ms = append(ms, m...)
		} else {
			t.Fatalf("%d WORDs with mnemonics in %s", len(m), file)
		}
	}
	var text strings.Builder
	for _, m := range ms {
		text.WriteString(m[2] + "\n")
	}
	dir := t.TempDir()
	in, obj := filepath.Join(dir, "k.s"), filepath.Join(dir, "k.o")
	if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=armv8.2-a+dotprod", "-o", obj, in).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", as, err, out)
	}
	dump, err := exec.Command(objdump, "-d", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	words := regexp.MustCompile(`(?m)^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s`).FindAllStringSubmatch(string(dump), -1)
	if len(words) != len(ms) {
		t.Fatalf("%d instructions assembled from %d mnemonics", len(words), len(ms))
	}
	for i, m := range ms {
		if words[i][1] != m[1] {
			t.Errorf("WORD $0x%s // %s: GNU as encodes it %s", m[1], m[2], words[i][1])
		}
	}
}

// TestX86Encodings does the same for the x86 kernels' instructions Go's
// assembler lacks (VDPBF16PS), spelled as BYTEs: GNU as must encode the
// mnemonic beside them (Go's operand order is AT&T's) to the same bytes.
func TestX86Encodings(t *testing.T) {
	as := reftest.Tool(t, "as")
	objdump := reftest.Tool(t, "objdump")
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*((?:BYTE \$0x[0-9a-f]{2}; )*BYTE \$0x[0-9a-f]{2}) // (VDPBF16PS) (Z\d+), (Z\d+), (Z\d+)$`)
	ms := re.FindAllStringSubmatch(string(src), -1)
	if len(ms) < 100 {
		t.Fatalf("%d VDPBF16PS BYTEs in kernels_amd64.s", len(ms))
	}
	zmm := func(z string) string { return "%zmm" + z[1:] }
	var text strings.Builder
	for _, m := range ms {
		text.WriteString(strings.ToLower(m[2]) + " " + zmm(m[3]) + ", " + zmm(m[4]) + ", " + zmm(m[5]) + "\n")
	}
	dir := t.TempDir()
	in, obj := filepath.Join(dir, "k.s"), filepath.Join(dir, "k.o")
	if err := os.WriteFile(in, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-o", obj, in).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", as, err, out)
	}
	dump, err := exec.Command(objdump, "-d", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	insns := regexp.MustCompile(`(?m)^\s*[0-9a-f]+:\s+((?:[0-9a-f]{2} )+)\s`).FindAllStringSubmatch(string(dump), -1)
	if len(insns) != len(ms) {
		t.Fatalf("%d instructions assembled from %d mnemonics", len(insns), len(ms))
	}
	for i, m := range ms {
		got := strings.ReplaceAll(strings.ReplaceAll(m[1], "BYTE $0x", ""), "; ", " ")
		if want := strings.TrimSpace(insns[i][1]); got != want {
			t.Errorf("%s // VDPBF16PS %s, %s, %s: GNU as encodes it %s", m[1], m[3], m[4], m[5], want)
		}
	}
}
