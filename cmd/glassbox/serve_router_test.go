package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// eppScrape reads /metrics the way the llm-d router's endpoint picker does
// (llm-d/llm-d-router v0.10.0, pkg/epp/framework/plugins/datalayer): a
// plain GET with no Authorization and no Accept header, parsed with the
// legacy-name text parser, where one bad line fails the whole poll; the
// first series of each family wins, and cache_config_info's block_size and
// num_gpu_blocks must be decimal integers (strconv.Atoi).
func eppScrape(ctx context.Context, url string) (waiting, running int, kv float64, blockSize, blocks int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
		return
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return
	}
	first := func(name string) *dto.Metric {
		if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0]
		}
		return nil
	}
	gauge := func(name string) float64 {
		m := first(name)
		if m == nil {
			err = fmt.Errorf("%s is missing", name)
			return 0
		}
		return m.GetGauge().GetValue()
	}
	waiting, running, kv = int(gauge("vllm:num_requests_waiting")), int(gauge("vllm:num_requests_running")), gauge("vllm:kv_cache_usage_perc")
	info := first("vllm:cache_config_info")
	if info == nil {
		return 0, 0, 0, 0, 0, errors.New("vllm:cache_config_info is missing")
	}
	for _, lp := range info.GetLabel() {
		switch lp.GetName() {
		case "block_size":
			blockSize, err = strconv.Atoi(lp.GetValue())
		case "num_gpu_blocks":
			blocks, err = strconv.Atoi(lp.GetValue())
		}
		if err != nil {
			return
		}
	}
	// vllm:lora_requests_info: vLLM registers it only with --enable-lora,
	// and the picker treats its absence as "no adapters"; glassbox serves
	// no LoRA, so it is absent here as it is on a vLLM without LoRA.
	if fams["vllm:lora_requests_info"] != nil {
		err = errors.New("vllm:lora_requests_info is exported without LoRA")
	}
	return
}

// TestRouterScrapesTheMetricsPort: with --api-key guarding the API (and its
// /metrics), a router polling the --metrics-port every 50 ms with no
// credentials reads every family it routes by, under load.
func TestRouterScrapesTheMetricsPort(t *testing.T) {
	base, _ := serveTest(t, "--api-key", "sekrit", "--metrics-port", "0", "--sim-time-scale", "0.2")
	inst, _ := servers.Load(base)
	metricsURL := "http://" + inst.(*instance).metricsAddr + "/metrics"
	for _, path := range []string{"/v1/models", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the key: %d, want 401", path, resp.StatusCode)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; ctx.Err() == nil; i++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions",
				strings.NewReader(`{"prompt":"`+words(40, i)+`","max_tokens":64,"ignore_eos":true}`))
			req.Header.Set("Authorization", "Bearer sekrit")
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	busy := 0
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := range 40 {
		<-tick.C
		waiting, running, kv, blockSize, blocks, err := eppScrape(ctx, metricsURL)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if blockSize != 16 || blocks < 1 || kv < 0 || kv > 1 || waiting < 0 {
			t.Errorf("poll %d: block size %d, %d blocks, KV %v, waiting %d", i, blockSize, blocks, kv, waiting)
		}
		if running > 0 {
			busy++
		}
	}
	cancel()
	<-loadDone
	if busy == 0 {
		t.Error("no poll saw a running request: the load never reached the server")
	}
}
