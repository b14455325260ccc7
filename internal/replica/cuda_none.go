//go:build nocuda

package replica

import (
	"errors"
	"log/slog"
	"time"

	"github.com/glassbox-llm/glassbox/internal/dcgm"
	"github.com/glassbox-llm/glassbox/internal/executor"
)

// errNoCUDA is why a build tagged nocuda runs nothing on a GPU: the GPU
// executor and NVIDIA's bindings are not linked (a static, CPU-only
// binary), so --device auto takes the CPU and --device cuda says why it
// cannot.
var errNoCUDA = errors.New("this glassbox build has no GPU executor (built with -tags nocuda: a static, CPU-only binary)")

func cudaLifecycle(*Config) (executor.Lifecycle, error) { return nil, errNoCUDA }

// gpuCounters: no executor of this build runs on a GPU to read.
func gpuCounters(string, time.Duration, string, *slog.Logger) (*dcgm.NVMLExporter, func(), error) {
	return nil, nil, errNoCUDA
}
