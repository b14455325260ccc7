package replica

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/promtext"
)

// TestDataParallelRanksBehindOneAPI: --data-parallel-size 2 serves one API
// over two engines: a burst is shared between them, and /metrics carries
// each rank's vLLM series with its engine label (the API server's own
// families once); an executor with one model copy refuses it by name.
func TestDataParallelRanksBehindOneAPI(t *testing.T) {
	r, err := New(Config{Sim: sim.Config{Hardware: "h100", Model: "llama-3.1-8b"}, BlockSize: 16, MaxModelLen: 2048,
		MaxQueuedRequests: 100, DataParallelSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	defer r.Close()
	if len(r.Ranks) != 2 || !strings.Contains(r.Describe, "2 data-parallel ranks") {
		t.Fatalf("%d ranks, %q", len(r.Ranks), r.Describe)
	}
	for range 8 {
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/completions",
			strings.NewReader(`{"model":"llama-3.1-8b","prompt":"a short prompt","max_tokens":3}`)))
		if rec.Code != http.StatusOK {
			t.Fatalf("POST /v1/completions: %d %s", rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	r.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	s, err := promtext.Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"0", "1"} {
		if v, _ := s.Sum("vllm:request_success_total", promtext.Labels{"engine": engine}); v != 4 {
			t.Errorf("engine %s finished %v requests, want 4 of 8", engine, v)
		}
	}
	if v, _ := s.Sum("http_requests_total", nil); v != 8 {
		t.Errorf("http_requests_total %v, want 8 (the one API server's)", v)
	}

	_, err = New(Config{Model: "m.gguf", Device: "cpu", BlockSize: 16, MaxQueuedRequests: 1, DataParallelSize: 2})
	if err == nil {
		t.Error("the CPU executor took --data-parallel-size")
	}
}

// TestDataParallelExpertParallel: with --enable-expert-parallel the
// experts spread over every rank's GPUs (EP = TP × DP, as vLLM places
// them), so each rank holds fewer experts' weights and more KV blocks
// than a lone rank of the same TP does.
func TestDataParallelExpertParallel(t *testing.T) {
	blocks := func(dp int) int {
		r, err := New(Config{Sim: sim.Config{Hardware: "h100", Model: "mixtral-8x7b", TensorParallel: 2, ExpertParallel: true},
			BlockSize: 16, MaxModelLen: 2048, MaxQueuedRequests: 1, DataParallelSize: dp})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return r.EngineConfig.NumBlocks
	}
	if one, two := blocks(1), blocks(2); two <= one {
		t.Errorf("a rank of TP 2 × DP 2 with expert parallelism has %d KV blocks, a lone rank %d: want more", two, one)
	}
}
