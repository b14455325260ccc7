//go:build !unix

package simulate

import "time"

// cpuTime is not read here: the benchmarks' cpu-ns/step reads 0.
func cpuTime() time.Duration { return 0 }
