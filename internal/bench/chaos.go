package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Chaos makes a share of bench's requests misbehave as real clients do:
// cut mid-stream (with a TCP reset or a clean close), malformed or
// oversized bodies, headers or bodies that trickle in, clients that never
// read their stream, and a burst past the admission limit; then it
// reconciles what the clients saw with the server's own metrics.
type Chaos struct {
	Cut         float64 // share of requests cut mid-stream
	Reset       float64 // of the cuts, the share cut with a TCP reset (the rest close cleanly); default 0.5
	Malformed   float64 // share sent as truncated JSON
	Oversized   float64 // share sent with a body over 32 MiB
	SlowHeaders float64 // share whose headers trickle in a byte at a time
	SlowBody    float64 // share whose body trickles in
	NoRead      float64 // share that never read their stream, then hang up
	Burst       int     // requests sent at once at the run's midpoint
	// SlowFor is how long a slow or non-reading client keeps at it before
	// it gives up (and calls the server's hold on it a failure); default
	// 60 s for trickles, a tenth of it for non-readers.
	SlowFor time.Duration
}

// ParseChaos reads --chaos: comma-separated key=value pairs, e.g.
// "cut=0.1,reset=0.5,malformed=0.05,burst=500".
func ParseChaos(s string) (*Chaos, error) {
	c := &Chaos{Reset: 0.5, SlowFor: 60 * time.Second}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("parse --chaos %q: want key=value pairs (cut, reset, malformed, oversized, slow-headers, slow-body, no-read, burst, slow-for)", kv)
		}
		var err error
		share := func(dst *float64) {
			*dst, err = strconv.ParseFloat(v, 64)
			if err == nil && !(*dst >= 0 && *dst <= 1) { // NaN too
				err = errors.New("a share is between 0 and 1")
			}
		}
		switch k {
		case "cut":
			share(&c.Cut)
		case "reset":
			share(&c.Reset)
		case "malformed":
			share(&c.Malformed)
		case "oversized":
			share(&c.Oversized)
		case "slow-headers":
			share(&c.SlowHeaders)
		case "slow-body":
			share(&c.SlowBody)
		case "no-read":
			share(&c.NoRead)
		case "burst":
			c.Burst, err = strconv.Atoi(v)
			if err == nil && c.Burst < 0 {
				err = errors.New("negative")
			}
		case "slow-for":
			c.SlowFor, err = time.ParseDuration(v)
			if err == nil && c.SlowFor <= 0 {
				err = errors.New("must be positive")
			}
		default:
			return nil, fmt.Errorf("parse --chaos: unknown key %q (want cut, reset, malformed, oversized, slow-headers, slow-body, no-read, burst, slow-for)", k)
		}
		if err != nil {
			return nil, fmt.Errorf("parse --chaos %s=%s: %v", k, v, err)
		}
	}
	if sum := c.Cut + c.Malformed + c.Oversized + c.SlowHeaders + c.SlowBody + c.NoRead; sum > 1 {
		return nil, fmt.Errorf("parse --chaos: the shares add up to %.2f, over 1", sum)
	}
	return c, nil
}

// The faults a request can be given.
const (
	faultNone        = ""
	faultCut         = "cut"
	faultMalformed   = "malformed"
	faultOversized   = "oversized"
	faultSlowHeaders = "slow-headers"
	faultSlowBody    = "slow-body"
	faultNoRead      = "no-read"
	faultBurst       = "burst"
)

// faultOf is request i's fault, fixed by the seed and the index alone, so
// that the same run misbehaves the same way whatever the timing.
func (c *Chaos) faultOf(seed int64, i int) (fault string, u float64) {
	u = unit(uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(i+1)*0xbf58476d1ce4e5b9)
	v := unit(uint64(i+1)*0x94d049bb133111eb ^ uint64(seed))
	for _, f := range []struct {
		name  string
		share float64
	}{{faultCut, c.Cut}, {faultMalformed, c.Malformed}, {faultOversized, c.Oversized}, {faultSlowHeaders, c.SlowHeaders},
		{faultSlowBody, c.SlowBody}, {faultNoRead, c.NoRead}} {
		if u < f.share {
			return f.name, v
		}
		u -= f.share
	}
	return faultNone, v
}

// unit maps x to [0, 1) through splitmix64's finaliser.
func unit(x uint64) float64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// Outcome is what one misbehaving request saw.
type Outcome struct {
	Fault  string
	Status int           // the HTTP status it got, 0 for none
	Events int           // stream events read before a cut
	Done   bool          // the stream had ended before the client cut it
	Reset  bool          // a cut by TCP reset
	Held   time.Duration // how long the server kept a slow client's connection
	Closed bool          // the server closed the connection (not the client giving up)
	Retry  bool          // a 503 carried Retry-After
}

// chaosClient sends the misbehaving requests beside bench's streamer.
type chaosClient struct {
	cfg  *Chaos
	st   *streamer
	base *url.URL
	mu   sync.Mutex
	outs []Outcome
}

func newChaosClient(cfg *Config) (*chaosClient, error) {
	u, err := url.Parse(cfg.BaseURL + cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return &chaosClient{cfg: cfg.Chaos, st: newStreamer(cfg), base: u}, nil
}

func (c *chaosClient) record(o Outcome) {
	c.mu.Lock()
	c.outs = append(c.outs, o)
	c.mu.Unlock()
}

// do sends request i as its fault says.
func (c *chaosClient) do(ctx context.Context, i int, seed int64, rq workload.Request) Output {
	fault, u := c.cfg.faultOf(seed, i)
	var o Outcome
	var out Output
	switch fault {
	case faultNone:
		out = c.st.do(ctx, rq)
		if out.Status == http.StatusServiceUnavailable {
			c.record(Outcome{Fault: faultNone, Status: out.Status})
		}
		return out
	case faultCut:
		o = c.cut(ctx, rq, 1+int(u*16), u < c.cfg.Reset)
	case faultMalformed:
		b := c.st.body(rq)
		o = c.post(ctx, bytes.NewReader(b[:len(b)/2]))
	case faultOversized:
		o = c.oversized(ctx)
	case faultSlowHeaders:
		o = c.slow(ctx, rq, false)
	case faultSlowBody:
		o = c.slow(ctx, rq, true)
	case faultNoRead:
		o = c.noRead(ctx, rq)
	}
	o.Fault = fault
	c.record(o)
	out.Error = fmt.Sprintf("chaos %s", fault)
	return out
}

// burst sends n ordinary requests at once and records the refusals.
func (c *chaosClient) burst(ctx context.Context, n int, rq workload.Request) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			o := Outcome{Fault: faultBurst}
			resp, err := c.request(ctx, bytes.NewReader(c.st.body(rq)))
			if err == nil {
				o.Status = resp.StatusCode
				o.Retry = resp.Header.Get("Retry-After") != ""
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			c.record(o)
		})
	}
	wg.Wait()
}

func (c *chaosClient) request(ctx context.Context, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.st.authorization != "" {
		req.Header.Set("Authorization", c.st.authorization)
	}
	return c.st.client.Do(req)
}

// post sends a bad body and records the status.
func (c *chaosClient) post(ctx context.Context, body io.Reader) Outcome {
	resp, err := c.request(ctx, body)
	if err != nil {
		return Outcome{}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return Outcome{Status: resp.StatusCode}
}

// oversized sends a body over 32 MiB on a connection of its own and reads
// the answer while it writes: a server refusing it with 413 may close the
// connection before the body is all sent, and the client's write then
// fails (sooner or later, by the machine's load) after the answer came.
func (c *chaosClient) oversized(ctx context.Context) Outcome {
	conn, _, err := c.dial(ctx)
	if err != nil {
		return Outcome{}
	}
	defer conn.Close()
	prefix, suffix := `{"model":"`+c.st.model+`","prompt":"`, `"}`
	n := 33 << 20
	go func() {
		body := io.MultiReader(strings.NewReader(c.head(len(prefix)+n+len(suffix))+prefix), &filler{n: n}, strings.NewReader(suffix))
		_, _ = io.Copy(conn, body) // ends when the server closes
	}()
	_ = conn.SetReadDeadline(time.Now().Add(c.st.timeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return Outcome{}
	}
	resp.Body.Close()
	return Outcome{Status: resp.StatusCode}
}

// filler is n bytes of 'a'.
type filler struct{ n int }

func (f *filler) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), f.n)
	for i := range k {
		p[i] = 'a'
	}
	f.n -= k
	return k, nil
}

// dial opens a raw connection to the server (TLS for https).
func (c *chaosClient) dial(ctx context.Context) (net.Conn, *net.TCPConn, error) {
	host := c.base.Host
	if c.base.Port() == "" {
		port := "80"
		if c.base.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(c.base.Hostname(), port)
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, nil, err
	}
	tcp, _ := raw.(*net.TCPConn)
	if c.base.Scheme == "https" {
		tc := tls.Client(raw, &tls.Config{ServerName: c.base.Hostname(), InsecureSkipVerify: true}) // chaos tests the server's handling, not its certificate
		return tc, tcp, nil
	}
	return raw, tcp, nil
}

// head is the request line and headers of a POST of n body bytes.
func (c *chaosClient) head(n int) string {
	h := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n", c.base.RequestURI(), c.base.Host, n)
	if c.st.authorization != "" {
		h += "Authorization: " + c.st.authorization + "\r\n"
	}
	return h + "\r\n"
}

// cut reads after events of a stream, then hangs up: with a reset (SO_LINGER
// 0) or a clean close.
func (c *chaosClient) cut(ctx context.Context, rq workload.Request, after int, reset bool) Outcome {
	o := Outcome{Reset: reset}
	conn, tcp, err := c.dial(ctx)
	if err != nil {
		return o
	}
	defer func() {
		if reset && tcp != nil {
			_ = tcp.SetLinger(0)
		}
		conn.Close()
	}()
	body := c.st.body(rq)
	if _, err := io.WriteString(conn, c.head(len(body))+string(body)); err != nil {
		return o
	}
	_ = conn.SetReadDeadline(time.Now().Add(c.st.timeout))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return o
	}
	o.Status, o.Retry = resp.StatusCode, resp.Header.Get("Retry-After") != ""
	if resp.StatusCode != http.StatusOK {
		return o
	}
	lines := bufio.NewReader(resp.Body)
	for o.Events < after {
		line, err := lines.ReadString('\n')
		if strings.HasPrefix(line, "data:") {
			if strings.TrimSpace(strings.TrimPrefix(line, "data:")) == "[DONE]" {
				o.Done = true
				return o
			}
			o.Events++
		}
		if err != nil {
			o.Done = errors.Is(err, io.EOF)
			return o
		}
	}
	return o
}

// slow trickles the request's headers (or, with body, its body) a byte
// every 100 ms until the server closes the connection or SlowFor passes.
func (c *chaosClient) slow(ctx context.Context, rq workload.Request, body bool) Outcome {
	var o Outcome
	conn, _, err := c.dial(ctx)
	if err != nil {
		return o
	}
	defer conn.Close()
	b := c.st.body(rq)
	msg := c.head(len(b)) + string(b)
	start := time.Now()
	if body {
		if _, err := io.WriteString(conn, c.head(len(b))); err != nil {
			return o
		}
		msg = string(b)
	}
	// A reader notices the server's close (or its answer) at once.
	closed := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			closed <- resp.StatusCode
			return
		}
		closed <- 0
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(c.cfg.SlowFor)
	defer deadline.Stop()
	for i := 0; ; i++ {
		select {
		case st := <-closed:
			o.Status, o.Closed, o.Held = st, true, time.Since(start)
			return o
		case <-deadline.C:
			o.Held = time.Since(start)
			return o
		case <-ctx.Done():
			o.Held = time.Since(start)
			return o
		case <-tick.C:
			if i < len(msg)-1 { // never the last byte: the request stays incomplete
				_, _ = conn.Write([]byte{msg[i]})
			}
		}
	}
}

// noRead sends a streamed request and reads nothing, then hangs up: the
// server must neither block its engine on the full socket nor keep the
// request once the client has gone.
func (c *chaosClient) noRead(ctx context.Context, rq workload.Request) Outcome {
	var o Outcome
	conn, _, err := c.dial(ctx)
	if err != nil {
		return o
	}
	defer conn.Close()
	body := c.st.body(rq)
	if _, err := io.WriteString(conn, c.head(len(body))+string(body)); err != nil {
		return o
	}
	// The status line only: what fills the socket is the body, unread.
	_ = conn.SetReadDeadline(time.Now().Add(c.st.timeout))
	if resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), nil); err == nil {
		o.Status, o.Retry = resp.StatusCode, resp.Header.Get("Retry-After") != ""
	}
	select {
	case <-time.After(c.cfg.SlowFor / 10):
	case <-ctx.Done():
	}
	return o
}

// faults counts the requests given each fault, the burst included.
func (c *chaosClient) faults(n int, seed int64) map[string]int {
	out := map[string]int{}
	for i := range n {
		if f, _ := c.cfg.faultOf(seed, i); f != faultNone {
			out[f]++
		}
	}
	if c.cfg.Burst > 0 {
		out[faultBurst] = c.cfg.Burst
	}
	return out
}
