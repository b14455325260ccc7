//go:build nocuda

package replica

import "errors"

// cudaBackend in a build tagged nocuda: the GPU executor and NVIDIA's
// bindings are not linked (a static, CPU-only binary), so --device auto
// takes the CPU and --device cuda says why it cannot.
func cudaBackend(*Config) (*backend, error) {
	return nil, errors.New("this glassbox build has no GPU executor (built with -tags nocuda: a static, CPU-only binary)")
}
