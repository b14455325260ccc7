package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkStreamedTokens measures end-to-end streamed tokens per second
// through HTTP (SSE) against the simulator with zero step cost: the cost of
// glassbox itself per token (engine, detokenizing, JSON, HTTP), for 64
// concurrent streams of 256 tokens per iteration.
func BenchmarkStreamedTokens(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := startServe(ctx, []string{"--host", "127.0.0.1", "--port", "0", "--sim-time-scale", "0", "--log-level", "error"}, io.Discard, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); <-inst.done }()
	url := "http://" + inst.addr + "/v1/completions"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const streams, tokens = 64, 256
	body := fmt.Sprintf(`{"model":"llama-3.1-8b","prompt":"Once upon a time","max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
	var chunks atomic.Int64
	for b.Loop() {
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "data: {") {
						chunks.Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.N*streams*tokens)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(chunks.Load())/float64(b.N*streams), "chunks/stream")
}
