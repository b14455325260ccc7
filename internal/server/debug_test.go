package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/engine"
)

func TestDebugEngineShowsTheEngine(t *testing.T) {
	env := startEnv(t, &alphabetExec{}, func(e *engine.Config, _ *Config) { e.MaxNumSeqs = 3 })
	var done map[string]any
	decodeBody(t, env.post(t, "/v1/completions", `{"prompt":"abcdefghijklmnopqrstuvwxyz","max_tokens":3}`), 200, &done)
	resp, err := env.srv.Client().Get(env.url + "/debug/engine")
	if err != nil {
		t.Fatal(err)
	}
	var snap engine.Snapshot
	decodeBody(t, resp, 200, &snap)
	wantCfg := engine.SnapshotConfig{MaxNumSeqs: 3, MaxNumBatchedTokens: 4096, MaxModelLen: 256, BlockSize: 16, NumBlocks: 4096, MaxWaiting: 1024}
	if diff := cmp.Diff(wantCfg, snap.Config); diff != "" {
		t.Errorf("scheduler config (-want +got):\n%s", diff)
	}
	if snap.Steps != 3 || len(snap.Running) != 0 || len(snap.Waiting) != 0 {
		t.Errorf("after one 3-token request: %d steps, %d running, %d waiting; want 3, 0, 0", snap.Steps, len(snap.Running), len(snap.Waiting))
	}
	if b := snap.Blocks; b.Total != 4096 || b.Free != 4096 || b.InUse != 0 {
		t.Errorf("block pool %+v: want all 4096 free", b)
	}
}

func TestReadyFailsOnceTheEngineStops(t *testing.T) {
	eng, err := engine.New(engine.Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 16, MaxModelLen: 16, BlockSize: 16, NumBlocks: 1, MaxWaiting: 1}, &alphabetExec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := New(Config{ServedModelNames: []string{modelName}}, eng, byteModel{}).Handler()
	ready := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
		return rec.Code
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	if got := ready(); got != 200 {
		t.Errorf("/ready while running: %d, want 200", got)
	}
	cancel()
	wg.Wait()
	if got := ready(); got != 503 {
		t.Errorf("/ready after shutdown: %d, want 503", got)
	}
}

// fakeProfiler counts calls and fails when told to.
type fakeProfiler struct {
	mu           sync.Mutex
	starts, stop int
	err          error
}

func (p *fakeProfiler) Start() error { p.mu.Lock(); defer p.mu.Unlock(); p.starts++; return p.err }
func (p *fakeProfiler) Stop() error  { p.mu.Lock(); defer p.mu.Unlock(); p.stop++; return p.err }

func TestProfilerRoutes(t *testing.T) {
	off := startEnv(t, &alphabetExec{})
	if resp := off.post(t, "/start_profile", ""); resp.StatusCode != 404 {
		t.Errorf("/start_profile without a profiler: %d, want 404", resp.StatusCode)
	}
	p := &fakeProfiler{}
	env := startEnv(t, &alphabetExec{}, func(_ *engine.Config, c *Config) { c.Profiler = p; c.APIKey = "k" })
	if resp := env.post(t, "/start_profile", ""); resp.StatusCode != 401 {
		t.Errorf("/start_profile without the API key: %d, want 401", resp.StatusCode)
	}
	for _, path := range []string{"/start_profile", "/stop_profile"} {
		resp := env.post(t, path, "", "Authorization", "Bearer k")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("POST %s: %d %q, want 200 and an empty body", path, resp.StatusCode, body)
		}
	}
	if p.starts != 1 || p.stop != 1 {
		t.Errorf("profiler got %d starts, %d stops; want 1 and 1", p.starts, p.stop)
	}
	p.err = errors.New("cpu profiling already in use")
	if resp := env.post(t, "/start_profile", "", "Authorization", "Bearer k"); resp.StatusCode != 500 {
		t.Errorf("failing start: %d, want 500", resp.StatusCode)
	}
}

func TestTraceContextReachesTheEngine(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var resp map[string]any
	decodeBody(t, env.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`,
		"traceparent", tp, "tracestate", "congo=t61rcWkgMzE"), 200, &resp)
	<-env.obs.finished
	id := resp["id"].(string) + "-0"
	v, ok := env.obs.requests.Load(id)
	if !ok {
		t.Fatalf("no finished event for %s", id)
	}
	if r := v.(*engine.Request); r.TraceParent != tp || r.TraceState != "congo=t61rcWkgMzE" {
		t.Errorf("engine request trace context %q %q, want the request's headers", r.TraceParent, r.TraceState)
	}
}

func checkTiming(t *testing.T, what string, ts []ChoiceTiming, indexes ...int) {
	t.Helper()
	if len(ts) != len(indexes) {
		t.Fatalf("%s: timing %+v, want entries for choices %v", what, ts, indexes)
	}
	for i, tm := range ts {
		if tm.Index != indexes[i] || tm.E2E <= 0 || tm.TTFT <= 0 || tm.TTFT > tm.E2E || tm.InferenceTime > tm.E2E ||
			tm.QueueTime < 0 || tm.PrefillTime <= 0 || tm.DecodeTime <= 0 {
			t.Errorf("%s: implausible timing %+v", what, tm)
		}
	}
}

func TestTimingBreakdown(t *testing.T) {
	env := startEnv(t, &alphabetExec{})
	type timed struct {
		Timing []ChoiceTiming `json:"timing"`
	}
	bodies := map[string]string{
		"/v1/completions":      `{"prompt":"abc","max_tokens":4,"n":2%s}`,
		"/v1/chat/completions": `{"messages":[{"role":"user","content":"x"}],"max_tokens":4,"n":2%s}`,
	}
	for path, body := range bodies {
		var got timed
		decodeBody(t, env.post(t, path, strings.Replace(body, "%s", "", 1), TimingHeader, "true"), 200, &got)
		checkTiming(t, path, got.Timing, 0, 1)

		var raw map[string]json.RawMessage
		decodeBody(t, env.post(t, path, strings.Replace(body, "%s", "", 1)), 200, &raw)
		if _, ok := raw["timing"]; ok {
			t.Errorf("%s: timing without %s", path, TimingHeader)
		}

		resp := env.post(t, path, strings.Replace(body, "%s", `,"stream":true`, 1), TimingHeader, "1")
		var streamed []ChoiceTiming
		for _, ev := range readEvents(t, resp.Body) {
			if ev == "[DONE]" {
				continue
			}
			var chunk timed
			if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
				t.Fatalf("%s: chunk %s: %v", path, ev, err)
			}
			if len(chunk.Timing) > 0 && !strings.Contains(ev, `"finish_reason":"length"`) {
				t.Errorf("%s: timing on a chunk that does not finish its choice: %s", path, ev)
			}
			streamed = append(streamed, chunk.Timing...)
		}
		if len(streamed) == 2 && streamed[0].Index == 1 {
			streamed[0], streamed[1] = streamed[1], streamed[0]
		}
		checkTiming(t, path+" streamed", streamed, 0, 1)
	}
}

func TestParseCredentials(t *testing.T) {
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, file string
		allow      []string // Authorization values accepted
		deny       []string
		err        string
	}{
		{name: "bearer", file: "tok3n\n", allow: []string{"Bearer tok3n"}, deny: []string{"", "Bearer tok3", "tok3n", basic("tok3n:")}},
		{name: "basic", file: "prom:pa:ss\n", allow: []string{basic("prom:pa:ss")}, deny: []string{basic("prom:pa"), "Bearer prom:pa:ss"}},
		{name: "several with comments", file: "# rotate\n\n  old  \nnew\nu:p\n", allow: []string{"Bearer old", "Bearer new", basic("u:p")}, deny: []string{"Bearer # rotate"}},
		{name: "empty", file: "# nothing\n\n", err: "lists no token"},
		{name: "no user", file: ":secret", err: "empty user name"},
		{name: "spaces in a token", file: "two words", err: "no spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCredentials([]byte(tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			h := c.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			for _, auth := range append(tt.allow, tt.deny...) {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Authorization", auth)
				h.ServeHTTP(rec, req)
				want := 401
				for _, a := range tt.allow {
					if a == auth {
						want = 200
					}
				}
				if rec.Code != want {
					t.Errorf("Authorization %q: %d, want %d", auth, rec.Code, want)
				}
				if want == 401 && rec.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("Authorization %q: 401 without a challenge", auth)
				}
			}
		})
	}
}

func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte("tok3n\nuser:pass\n# c\n"))
	f.Add([]byte(":x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCredentials(data)
		if err != nil {
			return
		}
		// Whatever parsed must accept its own first credential line.
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			auth := "Bearer " + line
			if strings.Contains(line, ":") {
				auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(line))
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("Authorization", auth)
			if !c.Allow(req) {
				t.Fatalf("%q parsed but its credential %q is refused", data, auth)
			}
			return
		}
	})
}
