package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/router"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/workload"
)

// TestSimulateFleetFlags: --replicas, --router and the autoscaler's flags
// run a fleet and print each replica's share; bad values are refused by
// name.
func TestSimulateFleetFlags(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"simulate", "--replicas", "3", "--router", "endpoint-picker",
		"--router-scorers", "queue-scorer=1,precise-prefix-cache-scorer=2", "--random-input-len", "300", "--random-output-len", "20",
		"--num-prompts", "60", "--request-rate", "20"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"3 replicas (endpoint-picker) of llama-3.1-8b", "simulated-0:8000", "simulated-2:8000", "Successful requests:                     60"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("simulate output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	err = run(context.Background(), []string{"simulate", "--autoscaler", "hpa", "--max-replicas", "3", "--replica-startup-delay", "10s",
		"--max-num-seqs", "8", "--random-input-len", "1000", "--random-output-len", "200", "--num-prompts", "600", "--request-rate", "20"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "autoscaler at +15s: 1 → 3 replicas") {
		t.Errorf("no scale-up in:\n%s", out.String())
	}
	for _, bad := range [][]string{
		{"--router", "fastest"}, {"--router", "endpoint-picker", "--router-scorers", "lora-scorer=1"}, {"--replicas", "-1"},
		{"--autoscaler", "vpa"}, {"--autoscaler", "hpa", "--min-replicas", "0"}, {"--autoscaler", "keda", "--max-replicas", "0"},
		{"--router", "endpoint-picker", "--router-refresh-metrics-interval", "0s"}, {"--router", "endpoint-picker", "--router-precise-block-size", "0"},
		// Flags nothing would read are refused by name.
		{"--router-scorers", "queue-scorer=1"}, {"--router", "random", "--router-prefix-block-size", "128"},
		{"--max-replicas", "4"}, {"--replicas", "2", "--replica-startup-delay", "1m"}, {"--replicas", "0"},
	} {
		args := append([]string{"simulate", "--num-prompts", "1"}, bad...)
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("simulate %v succeeded", bad)
		}
	}
}

// TestDoctorNamesTheHotReplicaOfASimulatedFleet: four replicas behind
// round robin; every fourth request brings a long document no cache holds,
// the others a question after a shared system prompt, so round robin's
// cycle sends every document to the first replica. The fleet's simulated
// series, loaded into a real Prometheus, read as glassbox doctor reads a
// fleet (--selector '{job="glassbox"}'): one report per replica, the hot
// one first and queueing, and the fleet's load-imbalance naming it.
func TestDoctorNamesTheHotReplicaOfASimulatedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	system := make([]int, 1000)
	for i := range system {
		system[i] = 400 + i
	}
	var samples []workload.Sample
	for k := range 200 {
		doc := make([]int, 3000)
		for i := range doc {
			doc[i] = 5000 + (k*3001+i*7)%100000
		}
		samples = append(samples, workload.Sample{PromptIDs: doc, PromptLen: len(doc), OutputLen: 600})
		for q := range 3 {
			p := append(slices.Clone(system), 90000+k*3+q, 90001+k*3+q)
			samples = append(samples, workload.Sample{PromptIDs: p, PromptLen: len(p), OutputLen: 30})
		}
	}
	var offs []time.Duration
	for i := range len(samples) {
		offs = append(offs, time.Duration(i)*time.Second/16) // 16 a second, 4 of them documents
	}
	plan := &workload.Plan{Prompts: samples, Stages: []workload.Stage{{Offsets: offs, Duration: offs[len(offs)-1]}}}
	rc := replica.Config{Sim: sim.Config{Hardware: "h100", Model: "llama-3.1-8b"}, MaxNumSeqs: 16, BlockSize: 16,
		MaxQueuedRequests: 10000, GPUMemoryUtilization: 0.9}
	series := simulate.NewSeries(5 * time.Second)
	res, err := simulate.Run(context.Background(), simulate.Config{Replica: rc, Plan: plan, Replicas: 4,
		Router: router.Config{Policy: router.RoundRobin}, Series: series})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	om := filepath.Join(dir, "metrics.om")
	fh, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if err := series.WriteOpenMetrics(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	importOpenMetrics(t, om, dir)
	prom := startPromOn(t, dir)
	end := simulate.Epoch.Add(45 * time.Second)
	if res.Duration < 45*time.Second {
		t.Fatalf("the run lasted %v", res.Duration)
	}
	var out strings.Builder
	err = run(context.Background(), []string{"doctor", "--prometheus-url", prom.url, "--selector", `{job="glassbox"}`,
		"--end", end.Format(time.RFC3339), "--since", "30s", "--interval", "5s", "--json"}, &out, io.Discard)
	if code := exitCode(err); code != doctorExitWarning && code != doctorExitCritical {
		t.Fatalf("doctor over the simulated fleet: exit %d (%v)\n%s", code, err, out.String())
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Fleet == nil || len(rep.Fleet.Instances) != 4 {
		t.Fatalf("no per-instance reports for 4 replicas:\n%s", out.String())
	}
	for _, in := range rep.Fleet.Instances {
		t.Logf("%s: running %.1f waiting %.1f KV %.2f %v", in.Instance, in.Running, in.Waiting, in.KVUsage, in.Report.Names())
	}
	t.Logf("fleet: %v; %s", rep.Names(), rep.Findings[0].Title)
	const hot = "simulated-0:8000"
	if first := rep.Fleet.Instances[0]; first.Instance != hot || first.Waiting < 1 {
		t.Errorf("the worst instance is %s (%.1f waiting, %v); want %s, queueing", first.Instance, first.Waiting, first.Report.Names(), hot)
	}
	if !slices.Contains(rep.Names(), "load-imbalance") || !strings.Contains(rep.Findings[0].Title, hot) {
		t.Errorf("the fleet's findings %v do not name the imbalance at %s:\n%s", rep.Names(), hot, out.String())
	}
	for _, in := range rep.Fleet.Instances[1:] {
		if in.Waiting > 0.5 {
			t.Errorf("cold replica %s had %.1f waiting", in.Instance, in.Waiting)
		}
	}
}

// TestFleetFlagsAreTheChartsValues: each fleet flag's default is the value
// of deploy/helm/glassbox's values.yaml it stands for, so a simulated fleet
// is the chart's unless told otherwise.
func TestFleetFlagsAreTheChartsValues(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/helm/glassbox/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ShutdownTimeoutSeconds int `yaml:"shutdownTimeoutSeconds"`
		Monitoring             struct {
			Interval string `yaml:"interval"`
		} `yaml:"monitoring"`
		Autoscaling struct {
			MinReplicas                   int     `yaml:"minReplicas"`
			MaxReplicas                   int     `yaml:"maxReplicas"`
			TargetWaitingPerReplica       float64 `yaml:"targetWaitingPerReplica"`
			ScaleDownStabilizationSeconds int     `yaml:"scaleDownStabilizationSeconds"`
			KEDA                          struct {
				PollingInterval   int     `yaml:"pollingInterval"`
				CooldownPeriod    int     `yaml:"cooldownPeriod"`
				ActivationWaiting float64 `yaml:"activationWaiting"`
			} `yaml:"keda"`
		} `yaml:"autoscaling"`
		Router struct {
			Weights struct {
				Queue              float64 `yaml:"queue"`
				KVCacheUtilization float64 `yaml:"kvCacheUtilization"`
				PrefixCache        float64 `yaml:"prefixCache"`
			} `yaml:"weights"`
		} `yaml:"router"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var f fleetFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.register(fs, true)
	a := v.Autoscaling
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	scrape, _ := time.ParseDuration(v.Monitoring.Interval)
	for _, c := range []struct {
		flag, value string
		got, want   any
	}{
		{"--min-replicas", "autoscaling.minReplicas", f.minReplicas, a.MinReplicas},
		{"--max-replicas", "autoscaling.maxReplicas", f.maxReplicas, a.MaxReplicas},
		{"--target-waiting-per-replica", "autoscaling.targetWaitingPerReplica", f.targetWaiting, a.TargetWaitingPerReplica},
		{"--scale-down-stabilization", "autoscaling.scaleDownStabilizationSeconds", f.stabilization, sec(a.ScaleDownStabilizationSeconds)},
		{"--keda-polling-interval", "autoscaling.keda.pollingInterval", f.polling, sec(a.KEDA.PollingInterval)},
		{"--keda-cooldown-period", "autoscaling.keda.cooldownPeriod", f.cooldown, sec(a.KEDA.CooldownPeriod)},
		{"--keda-activation-waiting", "autoscaling.keda.activationWaiting", f.activation, a.KEDA.ActivationWaiting},
		{"--scrape-interval", "monitoring.interval", f.scrape, scrape},
		{"--shutdown-timeout", "shutdownTimeoutSeconds", f.shutdown, sec(v.ShutdownTimeoutSeconds)},
		{"--router-scorers", "router.weights", f.scorers, router.FormatScorers([]router.Scorer{{Type: router.QueueScorer, Weight: v.Router.Weights.Queue},
			{Type: router.KVCacheScorer, Weight: v.Router.Weights.KVCacheUtilization}, {Type: router.PrefixScorer, Weight: v.Router.Weights.PrefixCache}})},
	} {
		if c.got != c.want {
			t.Errorf("%s defaults to %v, the chart's %s is %v", c.flag, c.got, c.value, c.want)
		}
	}
}

// TestPlanFleetFlags: plan searches fleets behind routers (--replicas
// 2 --router ...) and fits the fewest replicas to a target (--replicas
// auto); a router without fleets, or auto without a target, is refused.
func TestPlanFleetFlags(t *testing.T) {
	reftest.Long(t, "plan's fleet searches")
	base := []string{"plan", "--slo", "ttft:p99<=400ms,tpot:p99<=20ms", "--sim-hardware", "h100", "--max-num-seqs", "32",
		"--random-input-len", "200", "--random-output-len", "30", "--num-prompts", "20", "--trial-duration", "10s"}
	var out strings.Builder
	if err := run(context.Background(), append(base, "--replicas", "2", "--router", "round-robin,least-requests"), &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"Highest rate per fleet", "fleet  router", "2      round-robin", "2      least-requests"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), append(base, "--replicas", "auto", "--target-rate", "150"), &out, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "(simulated)") || !strings.Contains(out.String(), "meet the SLOs at 150 requests/s") {
		t.Errorf("no fitted fleet in:\n%s", out.String())
	}
	for _, bad := range [][]string{{"--router", "random"}, {"--replicas", "auto"}, {"--replicas", "0"}, {"--replicas", "2", "--router", "fastest"},
		{"--replicas", "2", "--router-scorers", "queue-scorer=1"}, {"--replicas", "2", "--autoscaler", "hpa"}, {"--replicas", "2", "--max-replicas", "3"}} {
		if err := run(context.Background(), append(base, bad...), io.Discard, io.Discard); err == nil {
			t.Errorf("plan %v succeeded", bad)
		}
	}
}
