// Command glassbox is a white-box LLM serving engine: an OpenAI-compatible
// server with vLLM's scheduling and metrics (serve). Each subcommand lives
// in its own file and only turns flags into package configs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `glassbox: a white-box LLM serving engine

Usage:
  glassbox serve [flags]     serve an OpenAI-compatible API (simulated H200 by default)
  glassbox version           print the version

Run 'glassbox serve -h' for the serve flags.
Not built yet: bench, doctor, model, monitoring.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "glassbox:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "glassbox", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "bench", "doctor", "model", "monitoring":
		return fmt.Errorf("%q is not built yet: this version has only 'serve'", args[0])
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
