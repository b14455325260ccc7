package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/sampling"
)

// The tests run the real engine with a fake executor and a byte-level fake
// tokenizer, so every generated text is predictable from the prompt.

const (
	eosID     = 256
	vocabSize = 257
	modelName = "test-model"
)

// byteModel is a tokenizer with one token per byte, plus EOS.
type byteModel struct{}

func (byteModel) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids
}

func (m byteModel) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.Write(m.TokenBytes(id))
	}
	return b.String()
}

func (byteModel) TokenBytes(id int) []byte {
	if id < 256 {
		return []byte{byte(id)}
	}
	return nil
}

func (m byteModel) TokenString(id int) string {
	if id == eosID {
		return "<eos>"
	}
	return string(m.TokenBytes(id))
}

func (byteModel) VocabSize() int { return vocabSize }

// chatML is the prompt the server renders for msgs without a template.
func chatML(msgs ...openai.ChatMessage) string {
	ms := make([]jinja.Message, len(msgs))
	for i, m := range msgs {
		ms[i] = jinja.Message{Role: m.Role, Content: m.Content}
	}
	return jinja.ChatML(ms, true)
}

// alphabetExec "generates" the letter after the last token ('a' after 'z'
// or after anything that is not a lower-case letter), so a prompt ending in
// "c" continues "defg…". It emits EOS as output number eosAt (when > 0),
// and when hold is set it parks every step that samples output number
// holdAfter or later until hold is closed.
type alphabetExec struct {
	eosAt     int
	holdAfter int
	hold      chan struct{}
	fail      bool // every step fails, as a broken executor would
}

func (x *alphabetExec) Execute(b *engine.Batch, r *engine.StepResult) error {
	if x.fail {
		return errors.New("device lost")
	}
	r.Samples = r.Samples[:0]
	for i := range b.Seqs {
		sb := &b.Seqs[i]
		r.Samples = append(r.Samples, sampling.Result{})
		if !sb.Sample {
			continue
		}
		outIndex := sb.Pos + len(sb.Tokens) - sb.NumPrompt
		if x.hold != nil && outIndex >= x.holdAfter {
			<-x.hold
		}
		next := nextLetter(sb.Tokens[len(sb.Tokens)-1])
		if x.eosAt > 0 && outIndex == x.eosAt {
			next = eosID
		}
		res := sampling.Result{Token: next, Logprob: -0.25}
		if sb.Params.Logprobs >= 0 {
			alts := []sampling.TokenLogprob{{Token: next, Logprob: -0.25}, {Token: '0', Logprob: -2}, {Token: '1', Logprob: -3}}
			res.Top = alts[:min(sb.Params.Logprobs, len(alts))]
		}
		r.Samples[i] = res
	}
	return nil
}

func nextLetter(tok int) int {
	if tok >= 'a' && tok < 'z' {
		return tok + 1
	}
	return 'a'
}

// letters is what alphabetExec generates after a prompt ending in last.
func letters(last byte, n int) string {
	var b strings.Builder
	t := int(last)
	for range n {
		t = nextLetter(t)
		b.WriteByte(byte(t))
	}
	return b.String()
}

// finishObserver reports each finished sequence's reason.
type finishObserver struct {
	finished chan engine.FinishReason
	requests sync.Map // id → *engine.Request, as the engine reported it finished
}

func (o *finishObserver) ObserveStep(*engine.StepEvent) {}

func (o *finishObserver) ObserveFinished(f *engine.FinishedEvent) {
	o.requests.Store(f.ID, f.Request)
	select {
	case o.finished <- f.Reason:
	default: // nobody is counting in this test
	}
}

// testEnv is a running engine behind an httptest server.
type testEnv struct {
	url    string
	eng    *engine.Engine
	obs    *finishObserver
	srv    *httptest.Server
	server *Server
	exec   *alphabetExec
}

type envOption func(*engine.Config, *Config)

func startEnv(t *testing.T, x *alphabetExec, opts ...envOption) *testEnv {
	t.Helper()
	env := startExec(t, x, opts...)
	env.exec = x
	return env
}

// startExec is startEnv with any executor.
func startExec(t *testing.T, x engine.Executor, opts ...envOption) *testEnv {
	t.Helper()
	ecfg := engine.Config{
		MaxNumSeqs: 256, MaxNumBatchedTokens: 4096, MaxModelLen: 256, BlockSize: 16,
		NumBlocks: 4096, MaxWaiting: 1024, EOS: []int{eosID},
	}
	scfg := Config{ServedModelNames: []string{modelName, "alias"}, Version: "v-test"}
	for _, o := range opts {
		o(&ecfg, &scfg)
	}
	obs := &finishObserver{finished: make(chan engine.FinishReason, 1024)}
	eng, err := engine.New(ecfg, x, obs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	server := New(scfg, eng, byteModel{})
	srv := httptest.NewServer(server.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
		server.background.Wait() // the engine ended every request: no background response runs on
	})
	return &testEnv{url: srv.URL, eng: eng, obs: obs, srv: srv, server: server}
}

// post sends a JSON body and returns the response.
func (e *testEnv) post(t *testing.T, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// decodeBody reads a JSON response into v and checks its status.
func decodeBody(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
}

// readEvents returns the data of every SSE event, checking the framing.
func readEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		events = append(events, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}
