package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// TestSimModelFromHub: --sim-model hf://OWNER/REPO fetches the
// repository's config.json from the hub (here a fake one) into the cache
// and simulates its shape; a second run reads the cache.
func TestSimModelFromHub(t *testing.T) {
	cfg, err := os.ReadFile(reftest.Path(t, "reference", "models", "mistral-nemo-instruct-2407", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fetched int
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mistralai/Mistral-Nemo-Instruct-2407/resolve/main/config.json" {
			http.NotFound(w, r)
			return
		}
		fetched++
		http.ServeContent(w, r, "config.json", time.Time{}, bytes.NewReader(cfg))
	}))
	t.Cleanup(hub.Close)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("GLASSBOX_CACHE", t.TempDir())
	for range 2 {
		r := stepJSON(t, "--sim-model", "hf://mistralai/Mistral-Nemo-Instruct-2407", "--sim-hardware", "h100", "--decode", "8x1024")
		if r.Model != "Mistral-Nemo-Instruct-2407" || r.DurationMS <= 0 {
			t.Errorf("priced %q: %.3f ms", r.Model, r.DurationMS)
		}
	}
	if fetched != 1 {
		t.Errorf("the hub served config.json %d times, want once (then the cache)", fetched)
	}
	err = run(context.Background(), []string{"simulate", "step", "--decode", "1x8", "--sim-model", "hf://nobody/none"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--sim-model") || !strings.Contains(err.Error(), "no such file on the hub") {
		t.Errorf("a repository the hub lacks: %v", err)
	}
}

// TestSimModelConfigPath: a dense model's config.json, a path, prices
// as the built-in of the same shape does.
func TestSimModelConfigPath(t *testing.T) {
	dir := reftest.Path(t, "reference", "models", "llama-3.1-8b-instruct")
	for _, arg := range []string{dir, filepath.Join(dir, "config.json")} {
		got := stepJSON(t, "--sim-model", arg, "--decode", "64x2048", "--prefill", "512@0")
		want := stepJSON(t, "--sim-model", "llama-3.1-8b", "--decode", "64x2048", "--prefill", "512@0")
		if got.DurationMS != want.DurationMS || got.FLOPs != want.FLOPs || got.Model != "llama-3.1-8b-instruct" {
			t.Errorf("%s: %s %.4f ms, %.4g FLOP; the built-in %.4f ms, %.4g FLOP", arg, got.Model, got.DurationMS, got.FLOPs, want.DurationMS, want.FLOPs)
		}
	}
}
