package replica

import (
	"math"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor"
)

// tieredLifecycle is a lifecycle with a host KV tier of blocks of
// blockSize << 17 bytes.
type tieredLifecycle struct{ fakeLifecycle }

func (*tieredLifecycle) OffloadTier(size float64, blockSize int) (engine.Offload, error) {
	return engine.Offload{Blocks: int(size) / (blockSize << 17), BlockBytes: int64(blockSize) << 17, Bandwidth: 55e9}, nil
}

// TestOffloadOnlyWhereTheExecutorHasOne: the CPU executor (whose KV cache
// is host memory already) and the GPU's refuse an offload tier by name;
// the simulator's is sized from its bytes.
func TestOffloadOnlyWhereTheExecutorHasOne(t *testing.T) {
	cpu := &executor.Spec{Info: map[string]string{"executor": "cpu"}}
	gpu := &executor.Spec{Info: map[string]string{"executor": "cuda"}}
	if _, err := offload(&Config{Model: "m.gguf", KVOffloadingSize: 4}, &fakeLifecycle{}, cpu, 16); err == nil || !strings.Contains(err.Error(), "CPU executor") {
		t.Errorf("CPU: %v, want a refusal naming the CPU executor", err)
	}
	if _, err := offload(&Config{Model: "m.gguf", Device: "cuda", KVOffloadingSize: 4}, &fakeLifecycle{}, gpu, 16); err == nil || !strings.Contains(err.Error(), "--kv-offloading-size") {
		t.Errorf("no tier: %v, want a refusal naming the flag", err)
	}
	o, err := offload(&Config{KVOffloadingSize: 1}, &tieredLifecycle{}, gpu, 16)
	if err != nil || o.Blocks != 512 {
		t.Errorf("1 GiB of 2 MiB blocks: %+v, %v; want 512 blocks", o, err)
	}
	if o, err := offload(&Config{}, &fakeLifecycle{}, cpu, 16); err != nil || o.Enabled() {
		t.Errorf("no size: %+v, %v; want no tier", o, err)
	}
	// A size past the tier's 32-bit block ids is refused by the flag,
	// not crashed on (1e9 GiB) nor miscounted as no block (1e30 GiB).
	for _, gib := range []float64{1e9, 1e30, math.MaxFloat64} {
		if o, err := offload(&Config{KVOffloadingSize: gib}, &tieredLifecycle{}, gpu, 16); err == nil || !strings.Contains(err.Error(), "at most 2147483647") {
			t.Errorf("%v GiB: %+v, %v; want a refusal naming the tier's limit", gib, o, err)
		}
	}
}
