package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// This file holds the plumbing of TestMonitoringStack: the external
// processes (Prometheus, Alertmanager), the webhook receiver, the Prometheus
// HTTP API client and the load loops.

// stackTool finds prometheus, promtool, prometheus-alertmanager or amtool:
// skip without it, except in CI (CI=true), where it must be installed.
func stackTool(t *testing.T, name string) string {
	t.Helper()
	return reftest.Tool(t, name)
}

// freeLoopbackAddr picks a free 127.0.0.1 port for a child process. The
// port is released before the child binds it; a clash fails the start,
// which the readiness wait reports.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startChild runs a process until the test ends, then kills it and waits.
// Its output is logged if the test fails.
func startChild(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("%s output (last 4 KiB):\n%s", filepath.Base(bin), tail(out.String(), 4096))
			mu.Unlock()
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitFor polls cond every 250 ms until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func httpOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// promSample is one sample of an instant query.
type promSample struct {
	Metric map[string]string
	Value  float64
}

// promQuery runs an instant query through Prometheus' HTTP API.
func promQuery(promURL, q string) ([]promSample, error) { return promQueryAt(promURL, q, time.Time{}) }

// promQueryAt is promQuery evaluated at t (zero: now).
func promQueryAt(promURL, q string, t time.Time) ([]promSample, error) {
	u := promURL + "/api/v1/query?query=" + url.QueryEscape(q)
	if !t.IsZero() {
		u += fmt.Sprintf("&time=%.3f", float64(t.UnixNano())/1e9)
	}
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode query answer: %w", err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	var out []promSample
	switch body.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &vec); err != nil {
			return nil, err
		}
		for _, s := range vec {
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			out = append(out, promSample{s.Metric, v})
		}
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(body.Data.Result, &sc); err != nil {
			return nil, err
		}
		v, _ := strconv.ParseFloat(fmt.Sprint(sc[1]), 64)
		out = append(out, promSample{nil, v})
	default:
		return nil, fmt.Errorf("query %q: unexpected result type %q", q, body.Data.ResultType)
	}
	return out, nil
}

// webhook records the alerts Alertmanager delivers, by receiver path.
type webhook struct {
	mu        sync.Mutex
	firing    map[string]map[string]bool     // path → alertname → seen firing
	instances map[string]map[string][]string // path → alertname → instances seen firing
}

func newWebhook(t *testing.T) (*webhook, *httptest.Server) {
	w := &webhook{firing: map[string]map[string]bool{}, instances: map[string]map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var msg struct {
			Alerts []struct {
				Status string            `json:"status"`
				Labels map[string]string `json:"labels"`
			} `json:"alerts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.firing[r.URL.Path] == nil {
			w.firing[r.URL.Path], w.instances[r.URL.Path] = map[string]bool{}, map[string][]string{}
		}
		for _, a := range msg.Alerts {
			if a.Status == "firing" {
				name := a.Labels["alertname"]
				w.firing[r.URL.Path][name] = true
				if inst := a.Labels["instance"]; !slices.Contains(w.instances[r.URL.Path][name], inst) {
					w.instances[r.URL.Path][name] = append(w.instances[r.URL.Path][name], inst)
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return w, srv
}

func (w *webhook) got(path, alert string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firing[path][alert]
}

// firingInstances lists the instances an alert has reached path for.
func (w *webhook) firingInstances(path, alert string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.instances[path][alert])
}

// loadLoop runs workers goroutines, each sending up to perWorker
// completions built by body(worker, i), until ctx ends. Errors other than
// the cancellation are counted, not fatal: the test asserts on metrics.
func loadLoop(ctx context.Context, base string, workers, perWorker int, body func(w, i int) map[string]any) (wait func() (ok, failed int)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var okN, failN int
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range workers {
		wg.Go(func() {
			for i := 0; i < perWorker && ctx.Err() == nil; i++ {
				b, _ := json.Marshal(body(w, i))
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				if err == nil && resp.StatusCode == http.StatusOK {
					okN++
				} else if ctx.Err() == nil {
					failN++
				}
				mu.Unlock()
			}
		})
	}
	return func() (int, int) { wg.Wait(); return okN, failN }
}
