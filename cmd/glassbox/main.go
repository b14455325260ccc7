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
  glassbox bench [flags]     load-test any OpenAI-compatible server, as vllm bench serve
  glassbox simulate [flags]  run a load against the simulated GPU in virtual time (serve's and bench's flags)
  glassbox simulate calibrate --runs DIR   fit the simulator to measured vLLM runs, with its error before and after
  glassbox simulate calibrate --from-probe FILE   fit a hardware profile to a GPU probe (scripts/gpu-probe.py)
  glassbox simulate step --decode 64x2048 --prefill 1024@0   price one step, with the DCGM readings it gives
  glassbox plan [flags]      capacity planning: the highest rate each configuration sustains within SLOs, replicas and cost
  glassbox model inspect F   print a GGUF model's architecture, weights, tokenizer and KV cost
  glassbox model random      write a random-weight GGUF model of a real shape (-o FILE)
  glassbox model bench F     llama-bench's pp/tg tests on a GGUF model
  glassbox monitoring export DIR   write Grafana dashboards, Prometheus rules and configs
  glassbox dashboard [flags] the live diagnosis page (serve's /dashboard) for any vLLM-compatible target or fleet
  glassbox doctor [flags]    name the bottleneck from a server's metrics, with evidence (exit 0/1/2: worst is info/warning/critical)
  glassbox version           print the version

Run 'glassbox serve -h' for the serve flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "glassbox:", err)
		code := 1
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			code = ec.ExitCode() // doctor's statuses
		}
		os.Exit(code)
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
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "simulate":
		return runSimulate(ctx, args[1:], stdout, stderr)
	case "plan":
		return runPlan(ctx, args[1:], stdout, stderr)
	case "model":
		return runModel(ctx, args[1:], stdout, stderr)
	case "monitoring":
		return runMonitoring(args[1:], stdout, stderr)
	case "doctor":
		return runDoctor(ctx, args[1:], stdout, stderr)
	case "dashboard":
		return runDashboard(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "glassbox", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
