package glassbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// post sends a JSON body to the handler and decodes the answer.
func post(t *testing.T, h http.Handler, path, body string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	if v != nil && rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, rec.Body)
		}
	}
	return rec.Code
}

// TestLibraryMatchesHandler: Generate, Chat and StreamChat give what the
// OpenAI API gives for the same prompt and conversation, greedy: the same
// tokenization, template and engine.
func TestLibraryMatchesHandler(t *testing.T) {
	l := open(t, Options{Sim: &SimOptions{}})
	h := l.Handler()

	var comp struct {
		Choices []struct{ Text string }
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if code := post(t, h, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":12,"temperature":0}`, &comp); code != 200 {
		t.Fatalf("completions: status %d", code)
	}
	outs, err := l.Generate(t.Context(), []string{"Once upon a time"}, SamplingParams{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	if got := outs[0]; got.Completions[0].Text != comp.Choices[0].Text || len(got.PromptTokenIDs) != comp.Usage.PromptTokens {
		t.Errorf("Generate %q (%d prompt tokens), /v1/completions %q (%d)", got.Completions[0].Text, len(got.PromptTokenIDs), comp.Choices[0].Text, comp.Usage.PromptTokens)
	}

	var chat struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	body := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about the sea."}],"max_tokens":12,"temperature":0}`
	if code := post(t, h, "/v1/chat/completions", body, &chat); code != 200 {
		t.Fatalf("chat: status %d", code)
	}
	conv := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Tell me about the sea."}}
	couts, err := l.Chat(t.Context(), [][]Message{conv}, SamplingParams{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	if got := couts[0]; got.Completions[0].Text != chat.Choices[0].Message.Content || len(got.PromptTokenIDs) != chat.Usage.PromptTokens {
		t.Errorf("Chat %q (%d prompt tokens), /v1/chat/completions %q (%d)", got.Completions[0].Text, len(got.PromptTokenIDs), chat.Choices[0].Message.Content, chat.Usage.PromptTokens)
	}
	if !strings.HasPrefix(couts[0].Prompt, "<|im_start|>system\nBe brief.<|im_end|>") {
		t.Errorf("the simulator's chat prompt %q is not ChatML", couts[0].Prompt)
	}
	var streamed strings.Builder
	for c, err := range l.StreamChat(t.Context(), conv, SamplingParams{MaxTokens: 12}) {
		if err != nil {
			t.Fatal(err)
		}
		streamed.WriteString(c.Text)
	}
	if streamed.String() != chat.Choices[0].Message.Content {
		t.Errorf("StreamChat %q, /v1/chat/completions %q", streamed.String(), chat.Choices[0].Message.Content)
	}
}

// TestHandlerMetricsRoute: Handler serves /metrics from the LLM's own
// registry or from a Registerer that is a Gatherer, and has no such route
// for a Registerer it cannot read.
func TestHandlerMetricsRoute(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tc := range []struct {
		name string
		reg  prometheus.Registerer
		want int
	}{
		{"own registry", nil, http.StatusOK},
		{"a Registry", reg, http.StatusOK},
		{"a bare Registerer", prometheus.WrapRegistererWith(prometheus.Labels{"replica": "a"}, prometheus.NewRegistry()), http.StatusNotFound},
	} {
		l := open(t, Options{Sim: &SimOptions{}, Registerer: tc.reg})
		rec := httptest.NewRecorder()
		l.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != tc.want {
			t.Errorf("%s: /metrics status %d, want %d", tc.name, rec.Code, tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(rec.Body.String(), "vllm:kv_cache_usage_perc") {
			t.Errorf("%s: /metrics lacks vllm:kv_cache_usage_perc", tc.name)
		}
	}
}
