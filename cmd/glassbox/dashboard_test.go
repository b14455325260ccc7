package main

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/reftest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the dashboard tests' pictures into docs/ (dashboard*.png)")

// browser starts headless Chromium (in UTC, as the docs' pictures are) and
// collects the page's console errors and uncaught exceptions.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	chromium := reftest.Tool(t, "chromium")
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")), chromedp.WindowSize(1280, 1800), chromedp.Env("TZ=UTC"),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true)}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // start the browser and its tab, so that Console sees the page from the start
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errs []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), errs...) }
}

// pagePoint is what the page reports it drew last (window.__glassbox).
type pagePoint struct {
	Points                          int
	Running, Waiting, KV, GenTokens *float64
	Findings                        []string
}

func readPage(ctx context.Context) (ready bool, refreshes, bytes int, pts []pagePoint, errs []string, err error) {
	type state struct {
		Ready     bool
		Refreshes int
		Bytes     int
		Errors    []string
		Instances []struct {
			Points    int
			Running   *float64 `json:"running"`
			Waiting   *float64 `json:"waiting"`
			KV        *float64 `json:"kv"`
			GenTokens *float64 `json:"gen_tokens"`
			Findings  []string `json:"findings"`
		}
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[state](`window.__glassbox`))
	if err != nil {
		return false, 0, 0, nil, nil, err
	}
	for _, in := range st.Instances {
		pts = append(pts, pagePoint{Points: in.Points, Running: in.Running, Waiting: in.Waiting, KV: in.KV, GenTokens: in.GenTokens, Findings: in.Findings})
	}
	return st.Ready, st.Refreshes, st.Bytes, pts, st.Errors, nil
}

// TestDashboardUnderKVPressure opens serve's /dashboard in headless
// Chromium while a KV-starved replica is loaded: the page draws every
// chart, names the KV-capacity bound, agrees with /metrics, and keeps its
// data behind the API key.
func TestDashboardUnderKVPressure(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium against a loaded server; skipped with -short")
	}
	ctx, consoleErrors := browser(t)
	base, _ := serveTest(t, "--sim-time-scale", "1", "--max-model-len", "1024", "--kv-cache-memory-bytes", kvBytes(256), "--api-key", "sekrit",
		"--metrics-port", "0")
	inst, _ := servers.Load(base)
	metricsBase := "http://" + inst.(*instance).metricsAddr // open: the API key guards the API port only
	if code := getStatus(t, metricsBase+"/dashboard/api/state", ""); code != http.StatusOK {
		t.Errorf("the page's data on the metrics port: %d, want 200", code)
	}
	if code := getStatus(t, base+"/dashboard/api/state", ""); code != http.StatusUnauthorized {
		t.Errorf("the page's data without the key: %d, want 401", code)
	}
	if code := getStatus(t, base+"/dashboard/", ""); code != http.StatusOK {
		t.Errorf("the page itself: %d, want 200 (it holds no data)", code)
	}
	lctx, stopLoad := context.WithCancel(context.Background())
	wait := runLoad(lctx, base, bench.Config{APIKey: "sekrit", Dataset: random(200, 300), RequestRate: 30, NumPrompts: 120}, 10*time.Second)
	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(base+"/dashboard/#key=sekrit")); err != nil {
		t.Fatal(err)
	}
	// Wait for the KV-capacity finding while the load runs.
	var pts []pagePoint
	deadline := time.Now().Add(40 * time.Second)
	for {
		ready, _, _, p, _, err := readPage(tctx)
		if err != nil {
			t.Fatal(err)
		}
		if ready && len(p) == 1 && p[0].Points >= 6 && contains(p[0].Findings, "kv-capacity-bound") {
			pts = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the KV-capacity finding: %+v", p)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-finding="kv-capacity-bound"]').length`)); err != nil || n != 1 {
		t.Errorf("the KV-capacity finding is not on the page (%d, %v)", n, err)
	}
	// The three answers head the page, as the doctor gives them: the KV
	// cache is the limit.
	if kv, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(document.querySelector('[data-question="kv_limit"]') || {}).dataset?.answer || ""`)); err != nil || kv != "yes" {
		t.Errorf("the page's answer to 'KV cache the limit?' is %q (%v), want yes", kv, err)
	}
	if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-question]').length`)); err != nil || n != 3 {
		t.Errorf("the page shows %d of the three questions (%v)", n, err)
	}
	checkChartsDrawn(t, tctx, screenshot(t, tctx))
	// Once the load is over and the engine idle, what the page drew last
	// is what /metrics says, and its throughput integrates to the
	// generated-token counter.
	stopLoad()
	wait()
	actx, acancel := context.WithTimeout(context.Background(), time.Minute)
	defer acancel()
	if err := inst.(*instance).engine.AwaitIdle(actx); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, metricsBase)
	_, before, _, _, _, _ := readPage(tctx)
	deadline = time.Now().Add(20 * time.Second)
	for {
		_, refreshes, size, p, errs, err := readPage(tctx)
		if err != nil {
			t.Fatal(err)
		}
		if refreshes >= before+3 && p[0].Running != nil && *p[0].Running == 0 {
			pts = p
			t.Logf("%d refreshes, %d bytes of state in all (%.0f per refresh); page errors %v", refreshes, size, float64(size)/float64(refreshes), errs)
			if len(errs) > 0 {
				t.Errorf("the page reported errors: %v", errs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not settle after the load: %+v", p)
		}
		time.Sleep(500 * time.Millisecond)
	}
	p := pts[0]
	if *p.Running != after["vllm:num_requests_running"] || *p.Waiting != after["vllm:num_requests_waiting"] || *p.KV != after["vllm:kv_cache_usage_perc"] {
		t.Errorf("the page's last point: running %v, waiting %v, KV %v; /metrics: %v, %v, %v", *p.Running, *p.Waiting, *p.KV,
			after["vllm:num_requests_running"], after["vllm:num_requests_waiting"], after["vllm:kv_cache_usage_perc"])
	}
	gen := after["vllm:generation_tokens_total"]
	if d := *p.GenTokens - gen; d > 0.01*gen || d < -0.01*gen {
		t.Errorf("the page's generation throughput integrates to %.0f tokens; /metrics counted %.0f", *p.GenTokens, gen)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func getStatus(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return shot
}

// checkChartsDrawn: every chart's canvas has coloured (data) pixels.
func checkChartsDrawn(t *testing.T, ctx context.Context, shot []byte) {
	t.Helper()
	type box struct{ X, Y, W, H float64 }
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`[...document.querySelectorAll(".chart canvas")].map(c => {
		const r = c.getBoundingClientRect(); return {X: r.x + window.scrollX, Y: r.y + window.scrollY, W: r.width, H: r.height}; })`))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if len(boxes) == 0 || len(boxes)%4 != 0 {
		t.Fatalf("%d charts on the page, want 4 an instance", len(boxes))
	}
	for i, b := range boxes {
		if n := colouredPixelsIn(img, image.Rect(int(b.X), int(b.Y), int(b.X+b.W), int(b.Y+b.H))); n < 150 {
			t.Errorf("chart %d has %d coloured pixels: no data drawn", i+1, n)
		}
	}
}

func colouredPixelsIn(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if max(cr, cg, cb)-min(cr, cg, cb) > 0x3000 {
				n++
			}
		}
	}
	return n
}

// TestDashboardOnVLLMCapture: glassbox dashboard pointed at a real vLLM
// 0.30 scrape served over HTTP, at one reading: the axis spans the minute
// up to it, the gauges' legends read the reading's numbers and the rates
// say they need a second, the answers are the doctor's for that one
// reading (glassbox doctor --metrics-file), and the page says what one
// reading cannot show.
func TestDashboardOnVLLMCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; skipped with -short")
	}
	path := reftest.Path(t, "compat", "vllm-0.30-metrics.txt")
	capture, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(capture)
	}))
	defer vllm.Close()
	url := startDashboard(t, "--metrics-url", vllm.URL+"/metrics", "--interval", "1h")
	ctx, consoleErrors := browser(t)
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	g := waitGlance(t, tctx, 1, 0)
	name := strings.TrimPrefix(vllm.URL, "http://")
	want, _ := answersOf(t, doctorJSON(t, "--metrics-file", path), name)
	checkGlance(t, g, 0, 0, want, true)
	if span := g.Window.To - g.Window.From; span != 60 || !g.Window.Live {
		t.Errorf("at one reading the window spans %v s (live %v), want the minute up to it", span, g.Window.Live)
	}
	notice, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector("section .notice").textContent`))
	if err != nil || !strings.Contains(notice, "one reading") || !strings.Contains(notice, "need two readings") {
		t.Errorf("the page's notice for one reading: %q (%v)", notice, err)
	}
	if n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-finding="single-reading"]').length`)); err != nil || n != 1 {
		t.Errorf("the single-reading finding is not on the page (%d, %v)", n, err)
	}
	top, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard-one-reading.png"), top, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _, _, errs, _ := readPage(tctx)
	if all := append(errs, consoleErrors()...); len(all) > 0 {
		t.Errorf("page errors: %v", all)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDashboardRejectsBadFlags: the command says what is wrong with its
// targets before it listens.
func TestDashboardRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dashboard"}, "give --metrics-url"},
		{[]string{"dashboard", "--metrics-url", "http://a:1/metrics,http://b:1/metrics", "--dcgm-url", "http://a:9400/metrics"}, "1 --dcgm-url entries for 2"},
		{[]string{"dashboard", "--metrics-url", "not a url"}, "--metrics-url"},
		{[]string{"dashboard", "--metrics-url", "http://a:1/metrics", "--since", "1h"}, "give --prometheus-url"},
		{[]string{"dashboard", "--prometheus-url", "http://p:9090", "--end", "yesterday"}, "--end"},
		{[]string{"dashboard", "--prometheus-url", "p:9090"}, "--prometheus-url"},
		{[]string{"dashboard", "--prometheus-url", "http://p:9090", "--selector", "rate(x[5m])"}, "selector"},
		{[]string{"dashboard", "--prometheus-url", "http://p:9090", "--since", "-1h"}, "positive"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
