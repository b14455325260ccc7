//go:build amd64 && !purego

package tensor

import (
	"fmt"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// TestRepackX8Runs: the one-token AVX2 kernels give the same bits read as
// x8Streams runs at once and as one run with prefetching, whichever this
// machine uses (readRuns).
func TestRepackX8Runs(t *testing.T) {
	if detect() == isaGeneric {
		t.Skip("no assembly kernels here: matrices are not repacked")
	}
	saved := readRuns
	defer func() { readRuns = saved }()
	for _, runs := range []int{1, x8Streams} {
		readRuns = runs
		for _, typ := range []gguf.TensorType{gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
			for _, rows := range []int{48, 104} {
				t.Run(fmt.Sprintf("runs%d/%s/rows%d", runs, typ, rows), func(t *testing.T) { testRepack(t, isaAVX2, typ, 0, rows) })
			}
		}
	}
}
