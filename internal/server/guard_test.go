package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// guarded serves h behind the guard on a real listener (deadlines need a
// connection).
func guarded(t *testing.T, cfg GuardConfig, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(Guard(cfg, h))
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func echo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
}

// TestSlowBodyIsCut: a client whose body trickles in is answered 408 with
// OpenAI's error body once the read timeout passes, and its connection is
// closed; it cannot hold a handler open.
func TestSlowBodyIsCut(t *testing.T) {
	addr := guarded(t, GuardConfig{ReadTimeout: 300 * time.Millisecond}, echo())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	// Trickle a byte every 50 ms: never 1000 bytes within the timeout.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on a hung test, not a measurement
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body: %v", err)
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusRequestTimeout || body.Error.Code != 408 || !resp.Close {
		t.Errorf("status %d, close %v, body %+v (%v): want 408 with OpenAI's body and the connection closed", resp.StatusCode, resp.Close, body, err)
	}
}

// TestGuardLeavesLongStreamsAlone: the body's deadline is lifted once it
// has arrived, so a response that streams longer than the read timeout is
// not cut.
func TestGuardLeavesLongStreamsAlone(t *testing.T) {
	addr := guarded(t, GuardConfig{ReadTimeout: 100 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		for i := range 6 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(60 * time.Millisecond):
			}
		}
	}))
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(b), "data:"); n != 6 {
		t.Errorf("a stream longer than the read timeout was cut after %d of 6 events: %q", n, b)
	}
}

// TestLimitConcurrency: beyond --limit-concurrency a request gets 503 with
// Retry-After and OpenAI's body at once; probes and /metrics still answer;
// the slots come back when requests end.
func TestLimitConcurrency(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // a failure must not leave the handlers (and the server's Close) waiting
	entered := make(chan struct{}, 2)
	var rejected int
	var mu sync.Mutex
	addr := guarded(t, GuardConfig{LimitConcurrency: 2, Rejected: func() { mu.Lock(); rejected++; mu.Unlock() }}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			entered <- struct{}{}
			<-release
		}
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	// Both hold their slots before the third asks: it is refused.
	<-entered
	<-entered
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third request with both slots held: %s, want 503", resp.Status)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":503`) || !strings.Contains(string(b), "limit-concurrency") {
		t.Errorf("refusal: Retry-After %q, body %s", resp.Header.Get("Retry-After"), b)
	}
	for _, path := range []string{"/health", "/metrics"} {
		r, err := http.Get("http://" + addr + path)
		if err != nil || r.StatusCode != http.StatusOK {
			t.Errorf("%s while full: %v %v", path, r.Status, err)
		} else {
			r.Body.Close()
		}
	}
	free()
	wg.Wait()
	r, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader("{}"))
	if err != nil || r.StatusCode != http.StatusOK {
		t.Errorf("after the holders ended: %v %v", r.Status, err)
	} else {
		r.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if rejected == 0 {
		t.Error("the refusal was not reported")
	}
}

// TestDeclaredOversizedBodyRefusedAtOnce: a body whose Content-Length is
// over the limit is answered 413 before any of it is read, however slowly
// it would arrive (reading 32 MiB first could outlast the read timeout).
func TestDeclaredOversizedBodyRefusedAtOnce(t *testing.T) {
	addr := guarded(t, GuardConfig{ReadTimeout: time.Minute}, echo())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", maxBodyBytes+1)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on a hung test, not a measurement
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a declared oversized body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("status %d, close %v: want 413 and the connection closed", resp.StatusCode, resp.Close)
	}
}
