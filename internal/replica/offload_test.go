package replica

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// gpuCounters stands for a GPU backend's (never called).
func fakeGPUCounters(time.Duration, string, *slog.Logger) (*dcgm.NVMLExporter, error) {
	return nil, nil
}

// TestOffloadOnlyWhereTheExecutorHasOne: the CPU executor (whose KV cache
// is host memory already) and the GPU's refuse an offload tier by name;
// the simulator's is sized from its bytes.
func TestOffloadOnlyWhereTheExecutorHasOne(t *testing.T) {
	cpu := &backend{}
	if _, err := offload(&Config{Model: "m.gguf", KVOffloadingSize: 4}, cpu, 16); err == nil || !strings.Contains(err.Error(), "CPU executor") {
		t.Errorf("CPU: %v, want a refusal naming the CPU executor", err)
	}
	if _, err := offload(&Config{Model: "m.gguf", Device: "cuda", KVOffloadingSize: 4}, &backend{gpuCounters: fakeGPUCounters}, 16); err == nil || !strings.Contains(err.Error(), "--kv-offloading-size") {
		t.Errorf("no tier: %v, want a refusal naming the flag", err)
	}
	sim := &backend{offload: func(size float64, blockSize int) engine.Offload {
		return engine.Offload{Blocks: int(size) / (blockSize << 17), BlockBytes: int64(blockSize) << 17, Bandwidth: 55e9}
	}}
	o, err := offload(&Config{KVOffloadingSize: 1}, sim, 16)
	if err != nil || o.Blocks != 512 {
		t.Errorf("1 GiB of 2 MiB blocks: %+v, %v; want 512 blocks", o, err)
	}
	if o, err := offload(&Config{}, &backend{}, 16); err != nil || o.Enabled() {
		t.Errorf("no size: %+v, %v; want no tier", o, err)
	}
}
