package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// waitForContent reads SSE lines until an event carries generated text.
func waitForContent(t *testing.T, r *bufio.Reader) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before any content: %v", err)
		}
		if strings.Contains(line, `"content":"`) || strings.Contains(line, `"text":"`) {
			return
		}
	}
}

// waitIdle waits until the engine reports no running sequence. It is called
// after the engine reported the sequences finished, so it does not wait long.
func waitIdle(t *testing.T, eng *engine.Engine) {
	t.Helper()
	for eng.Stats().Running != 0 {
		select {
		case <-t.Context().Done():
			t.Fatal("engine never went idle")
		case <-time.After(time.Millisecond):
		}
	}
}

func TestClientDisconnectAbortsEveryChoice(t *testing.T) {
	x := &alphabetExec{hold: make(chan struct{}), holdAfter: 2}
	handlerDone := make(chan struct{}, 1)
	env := startEnv(t, x, func(_ *engine.Config, c *Config) {
		c.Instrument = func(name string, h http.Handler) http.Handler {
			if name != "/v1/chat/completions" {
				return h
			}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r)
				handlerDone <- struct{}{}
			})
		}
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(x.hold)
		}
	})

	ctx, cancel := context.WithCancel(t.Context())
	body := `{"messages":[{"role":"user","content":"x"}],"n":3,"max_tokens":200,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := env.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitForContent(t, bufio.NewReader(resp.Body))
	if got := env.eng.Stats().Running; got != 3 {
		t.Fatalf("running %d, want the 3 choices", got)
	}

	// The engine is parked inside a step. The client leaves; the handler
	// must abort all three choices before it returns.
	cancel()
	<-handlerDone
	close(x.hold)
	released = true
	for range 3 {
		if reason := <-env.obs.finished; reason != engine.FinishAbort {
			t.Errorf("a choice finished with %q, want abort", reason)
		}
	}
	waitIdle(t, env.eng)
}

func TestOverloadIs503(t *testing.T) {
	x := &alphabetExec{hold: make(chan struct{}), holdAfter: 1}
	var (
		mu       sync.Mutex
		rejected []string // vllm:admission_rejections_total's reasons
	)
	env := startEnv(t, x, func(e *engine.Config, c *Config) {
		e.MaxWaiting = 2
		c.Rejected = func(reason string) { mu.Lock(); rejected = append(rejected, reason); mu.Unlock() }
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(x.hold)
		}
	})
	// Park the engine inside a step, so that nothing queued is admitted.
	first := env.post(t, "/v1/completions", `{"prompt":"a","max_tokens":4,"stream":true}`)
	r := bufio.NewReader(first.Body)
	waitForContent(t, r)

	var body openai.ErrorBody
	resp := env.post(t, "/v1/completions", `{"prompt":"a","n":5,"max_tokens":4}`)
	if got := resp.Header.Get("Retry-After"); got == "" {
		t.Error("503 without Retry-After")
	}
	decodeBody(t, resp, http.StatusServiceUnavailable, &body)
	if body.Error.Type != openai.TypeServiceUnavailable || body.Error.Code != 503 {
		t.Errorf("error %+v", body.Error)
	}
	decodeBody(t, env.post(t, "/v1/completions", `{"prompt":"a","max_tokens":0}`), http.StatusBadRequest, &body)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(rejected, []string{metricspec.RejectQueueFull}) {
		t.Errorf("admission rejections %v, want the one 503 as %q", rejected, metricspec.RejectQueueFull)
	}

	close(x.hold)
	released = true
	rest, err := io.ReadAll(r)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("first stream did not complete: %q, %v", rest, err)
	}
}

func TestInfoRoutes(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	get := func(path string, v any) {
		t.Helper()
		resp, err := env.srv.Client().Get(env.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		decodeBody(t, resp, 200, v)
	}
	var models openai.ModelList
	get("/v1/models", &models)
	if len(models.Data) != 2 || models.Data[0].ID != modelName || models.Data[1].ID != "alias" ||
		models.Data[1].Root != modelName || models.Data[0].MaxModelLen != 256 || models.Object != "list" {
		t.Errorf("models %+v", models)
	}
	var card openai.ModelCard
	get("/v1/models/alias", &card)
	if card != models.Data[1] {
		t.Errorf("models/alias %+v, want the list's card %+v", card, models.Data[1])
	}
	if resp, err := env.srv.Client().Get(env.url + "/v1/models/nope"); err != nil {
		t.Fatal(err)
	} else {
		var e openai.ErrorBody
		decodeBody(t, resp, 404, &e)
		if e.Error.Param == nil || *e.Error.Param != "model" || !strings.Contains(e.Error.Message, "`nope` does not exist") {
			t.Errorf("models/nope: %+v", e.Error)
		}
	}
	var v openai.Version
	get("/version", &v)
	if v.Version != "v-test" {
		t.Errorf("version %+v", v)
	}
	resp, err := env.srv.Client().Get(env.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 0 {
		t.Errorf("/health: status %d, length %d", resp.StatusCode, resp.ContentLength)
	}

	var tok openai.TokenizeResponse
	decodeBody(t, env.post(t, "/tokenize", `{"model":"alias","prompt":"hey","return_token_strs":true}`), 200, &tok)
	want := openai.TokenizeResponse{Count: 3, MaxModelLen: 256, Tokens: []int{'h', 'e', 'y'}, TokenStrs: []string{"h", "e", "y"}}
	if diff := cmp.Diff(want, tok); diff != "" {
		t.Errorf("tokenize (-want +got):\n%s", diff)
	}
	var e openai.ErrorBody
	decodeBody(t, env.post(t, "/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`), 200, &tok)
	rendered := chatML(openai.ChatMessage{Role: "user", Content: "hi"})
	if tok.Count != len(rendered) || (byteModel{}).Decode(tok.Tokens) != rendered {
		t.Errorf("tokenize messages: %+v, want the ChatML rendering %q", tok, rendered)
	}
	// With tools the count is the prompt the template renders for them,
	// as a chat request with those tools would be.
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	plain := tok.Count
	decodeBody(t, env.post(t, "/tokenize", `{"messages":[{"role":"user","content":"hi"}],"tools":`+tools+`}`), 200, &tok)
	if text := (byteModel{}).Decode(tok.Tokens); tok.Count <= plain || !strings.Contains(text, `"get_weather"`) || !strings.Contains(text, "<tools>") {
		t.Errorf("tokenize with tools: %d tokens (%d without), %q", tok.Count, plain, text)
	}
	decodeBody(t, env.post(t, "/tokenize", `{"prompt":"hi","tools":`+tools+`}`), 400, &e)
	if e.Error.Param == nil || *e.Error.Param != "tools" {
		t.Errorf("tokenize a prompt with tools: %+v", e.Error)
	}
	decodeBody(t, env.post(t, "/tokenize", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad name"}}]}`), 400, &e)
	if e.Error.Param == nil || *e.Error.Param != "tools" || !strings.Contains(e.Error.Message, "tools[0].function.name") {
		t.Errorf("tokenize with a bad tool: %+v", e.Error)
	}
	var detok openai.DetokenizeResponse
	decodeBody(t, env.post(t, "/detokenize", `{"tokens":[104,105,256]}`), 200, &detok)
	if detok.Prompt != "hi" {
		t.Errorf("detokenize %+v", detok)
	}
	decodeBody(t, env.post(t, "/detokenize", `{"tokens":[104,9999]}`), 400, &e)
	raw, _ := json.Marshal(e)
	if !strings.Contains(string(raw), `"param":"tokens"`) {
		t.Errorf("detokenize out of vocabulary: %s", raw)
	}
}

func TestExecutorFailure(t *testing.T) {
	env := startEnv(t, &alphabetExec{fail: true})
	var body openai.ErrorBody
	decodeBody(t, env.post(t, "/v1/completions", `{"prompt":"a"}`), http.StatusInternalServerError, &body)
	if body.Error.Type != openai.TypeInternal || !strings.Contains(body.Error.Message, "device lost") {
		t.Errorf("error %+v", body.Error)
	}
	events := readEvents(t, env.post(t, "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"x"}],"stream":true}`).Body)
	// The role chunk comes with the first output, and there is none.
	if len(events) != 2 || !strings.Contains(events[0], `"error":{`) || events[1] != "[DONE]" {
		t.Errorf("events %q, want an error event and [DONE]", events)
	}
}
