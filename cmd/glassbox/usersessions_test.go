package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
)

// replayNamesConfig: two conversations of two turns, six requests, so
// each slot starts a second conversation.
const replayNamesConfig = `
load:
  type: concurrent
  stages: [{num_requests: 6, concurrency_level: 2}]
api: {type: completion, streaming: true}
data:
  type: conversation_replay
  conversation_replay:
    num_conversations: 2
    shared_system_prompt_len: 40
    turns_per_conversation: {type: fixed, mean: 2}
    input_tokens_per_turn: {type: fixed, mean: 8}
    output_tokens_per_turn: {type: fixed, mean: 4}
report:
  request_lifecycle: {per_request: true}
`

// extraInfos reads per_request_lifecycle_metrics.json's extra_info, as
// "user_session/chat_round", sorted.
func extraInfos(t *testing.T, dir string) []string {
	t.Helper()
	var per []map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "per_request_lifecycle_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &per); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range per {
		x := r["info"].(map[string]any)["extra_info"].(map[string]any)
		out = append(out, fmt.Sprintf("%v/%v", x["user_session"], x["chat_round"]))
	}
	slices.Sort(out)
	return out
}

// TestUserSessionExtraInfo: per_request_lifecycle_metrics.json gives each
// request of a user session inference-perf's extra_info — its session's
// name (a conversation that starts over in its slot is a session of its
// own) and its round in it, from 1 — from bench against a live server and
// from simulate alike.
func TestUserSessionExtraInfo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cr.yaml")
	if err := os.WriteFile(cfg, []byte(replayNamesConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{"conv_0/1", "conv_0/2", "conv_1/1", "conv_1/2", "slot_0_convo_1/1", "slot_1_convo_1/1"}
	simDir := filepath.Join(dir, "sim")
	if err := run(t.Context(), []string{"simulate", "--config", cfg, "--inference-perf-report", simDir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := extraInfos(t, simDir); !slices.Equal(got, want) {
		t.Errorf("simulate's extra_info %v, want %v", got, want)
	}
	res := benchBubble(t, []string{"--served-model-name", "m", "--sim-model", "llama-3.1-8b"}, []string{"--config", cfg, "--model", "m"})
	w, err := inferenceperf.Read(cfg)
	if err != nil {
		t.Fatal(err)
	}
	benchDir := filepath.Join(dir, "bench")
	if _, err := inferenceperf.WriteReports(res, w, benchDir, "", nil); err != nil {
		t.Fatal(err)
	}
	if got := extraInfos(t, benchDir); !slices.Equal(got, want) {
		t.Errorf("bench's extra_info %v, want %v", got, want)
	}
}
