//go:build nocuda

package main

import (
	"errors"
	"flag"
	"io"

	"github.com/glassbox-llm/glassbox/internal/model"
)

// runModelBenchCUDA in a build tagged nocuda, which links no GPU code.
func runModelBenchCUDA(*flag.FlagSet, model.BenchConfig, int, string, string, bool, bool, io.Writer) error {
	return errors.New("model bench -device cuda: this glassbox build has no GPU executor (built with -tags nocuda: a static, CPU-only binary)")
}
