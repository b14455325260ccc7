package replica

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
	"github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// tinyGGUF writes a random tiny model to a file.
func tinyGGUF(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shape, _ := model.LookupShape("tiny")
	if err := model.WriteRandom(f, model.RandomSpec{Shape: shape, Type: gguf.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

var ngram = speculative.Config{Method: speculative.MethodNgram, NumSpeculativeTokens: 2, PromptLookupMin: 1, PromptLookupMax: 2}

// TestExecutorsRefuseByName: each executor declares once what it runs,
// and what a configuration asks beyond that is refused at admission,
// naming the flag and the executor: the CPU runs no LoRA adapters and no
// async scheduling, the GPU no speculative decoding (refused before the
// GPU is opened: this test needs none, and a GPU would not change it;
// --device auto then takes the CPU, which runs it, and says why). The
// simulated GPU runs all of them.
func TestExecutorsRefuseByName(t *testing.T) {
	gguf := tinyGGUF(t)
	base := Config{BlockSize: DefaultBlockSize, MaxQueuedRequests: DefaultMaxQueuedRequests, Threads: 1, Model: gguf}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	_, noGPU := cudaLifecycle(&base) // a build without the GPU executor refuses --device cuda for that instead
	for _, c := range []struct {
		name string
		cfg  Config
		want string
		gpu  bool // the row asks for the GPU executor
	}{
		{"async scheduling on the CPU", with(func(c *Config) { c.Device, c.AsyncScheduling = "cpu", true }), "--async-scheduling: the CPU executor", false},
		{"LoRA on the CPU", with(func(c *Config) { c.Device, c.LoRA = "cpu", &LoRA{MaxLoRAs: 1, MaxRank: 8} }), "--enable-lora: the CPU executor", false},
		{"speculative decoding on the GPU", with(func(c *Config) { c.Device, c.Speculative = "cuda", ngram }),
			"--device cuda: --speculative-config: the GPU executor does not run speculative decoding", true},
	} {
		if c.gpu && noGPU != nil {
			t.Logf("%s: skipped: %v", c.name, noGPU)
			continue
		}
		if r, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			if r != nil {
				r.Close()
			}
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
	if noGPU == nil {
		r, err := New(with(func(c *Config) { c.Speculative = ngram }))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Note, "--speculative-config: the GPU executor") || !strings.HasPrefix(r.Describe, "this CPU") {
			t.Errorf("--device auto with speculative decoding: %q on %q, want the CPU and why", r.Note, r.Describe)
		}
		r.Close()
	}
	s, err := New(Config{Sim: sim.Config{Hardware: "h200", Model: "llama-3.1-8b"}, BlockSize: DefaultBlockSize, MaxQueuedRequests: DefaultMaxQueuedRequests,
		Speculative: ngram, AsyncScheduling: true, LoRA: &LoRA{Modules: []server.LoRAModule{{Name: "a", Path: "/a"}}, MaxLoRAs: 1, MaxRank: 8}})
	if err != nil {
		t.Fatalf("the simulator with speculative decoding, async scheduling and LoRA: %v", err)
	}
	s.Close()
}

// TestEmbeddingsRefusedAtSubmit: an embedding request to a model that
// does not pool is refused by the engine at Submit, as an OpenAI 400 on
// "model" naming the executor (and by the API before it reaches the
// engine); the simulator embeds.
func TestEmbeddingsRefusedAtSubmit(t *testing.T) {
	cpu, err := New(Config{Model: tinyGGUF(t), Device: "cpu", Threads: 1, BlockSize: DefaultBlockSize, MaxQueuedRequests: DefaultMaxQueuedRequests})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	p := sampling.Defaults()
	p.MaxTokens = 1
	_, err = cpu.Engine.Submit(&engine.Request{ID: "e", Prompt: []int{1, 2}, Params: p, Embed: true})
	if e := openai.AsError(err); err == nil || e.Status != http.StatusBadRequest || e.Param != "model" || !strings.Contains(e.Message, "the CPU executor") {
		t.Errorf("an embedding on the CPU's generative model: %v, want a 400 on model naming the CPU executor", err)
	}
	rec := httptest.NewRecorder()
	cpu.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/embeddings", strings.NewReader(`{"input": "hi"}`)))
	var body struct {
		Error struct{ Message, Type, Param string }
	}
	if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Param != "model" {
		t.Errorf("POST /v1/embeddings: %d %s, want an OpenAI 400 on model", rec.Code, rec.Body)
	}

	s, err := New(Config{Sim: sim.Config{Hardware: "h200", Model: "llama-3.1-8b"}, BlockSize: DefaultBlockSize, MaxQueuedRequests: DefaultMaxQueuedRequests})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Engine.Submit(&engine.Request{ID: "e", Prompt: []int{1, 2}, Params: p, Embed: true}); err != nil {
		t.Errorf("an embedding on the simulator: %v", err)
	}
}
