package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/live"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// The page a person reads at a glance, looked at in headless Chromium at
// one reading, after minutes of load, on a fleet of three and on a past
// incident read from Prometheus. Each view is checked for what a glance
// needs: the window on every time axis, a number in every legend and in
// the summary strip, and the doctor's three answers for the same window;
// -update-screenshot writes each picture into docs/.

// glance is what the page shows, read from it.
type glance struct {
	Window struct {
		From, To float64
		Live     bool
	}
	Instances []struct {
		Name      string
		X         [2]*float64
		Points    int
		Questions map[string]string
	}
	Values []struct{ Instance, Series, Text string } // every legend and strip value
	// Answers are the answer cards' data-answer, by instance and question.
	Answers []struct{ Instance, Question, Answer string }
	Rows    []string // the fleet table's instances, in order
	Doctor  string   // the doctor command the page names, if any
}

func readGlance(ctx context.Context) (glance, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[glance](`({
		window: window.__glassbox.window,
		instances: window.__glassbox.instances.map((i) => ({name: i.name, x: i.x, points: i.points, questions: i.questions})),
		values: [...document.querySelectorAll(".legend .v, .strip .v")].map((e) => ({instance: e.closest("section").dataset.instance, series: e.dataset.series || e.dataset.strip, text: e.textContent})),
		answers: [...document.querySelectorAll("section.instance [data-question]")].map((e) => ({instance: e.closest("section").dataset.instance, question: e.dataset.question, answer: e.dataset.answer})),
		rows: [...document.querySelectorAll("#fleet tr[data-row]")].map((e) => e.dataset.row),
		doctor: (document.querySelector(".answered code") || {}).textContent || "",
	})`))
}

// waitGlance waits until the page has drawn every instance want names
// (with at least points intervals each) and returns what it shows.
func waitGlance(t *testing.T, ctx context.Context, instances, points int) glance {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		ready, _, _, _, errs, err := readPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Fatalf("the page reported errors: %v", errs)
		}
		if ready {
			g, err := readGlance(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done := len(g.Instances) == instances
			for _, in := range g.Instances {
				done = done && in.Points >= points
			}
			if done {
				return g
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page never drew %d instances with %d points: %+v", instances, points, g.Instances)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pageAnswers are the doctor's three answers by instance and question.
type pageAnswers map[string]map[string]string

// doctorReport is the part of the doctor's JSON the page is checked
// against.
type doctorReport struct {
	Questions map[string]struct{ Answer string } `json:"questions"`
	Fleet     *struct {
		Instances []struct {
			Instance string
			Report   doctorReport
		}
	} `json:"fleet"`
}

// answersOf reads the doctor's JSON report: one instance's answers under
// name, or a fleet's, each under its instance, in the report's order.
func answersOf(t *testing.T, js []byte, name string) (pageAnswers, []string) {
	t.Helper()
	var rep doctorReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("the doctor's JSON: %v\n%s", err, js)
	}
	out := pageAnswers{}
	one := func(name string, q map[string]struct{ Answer string }) {
		out[name] = map[string]string{}
		for k, a := range q {
			out[name][k] = a.Answer
		}
	}
	if rep.Fleet == nil {
		one(name, rep.Questions)
		return out, []string{name}
	}
	var order []string
	for _, in := range rep.Fleet.Instances {
		one(in.Instance, in.Report.Questions)
		order = append(order, in.Instance)
	}
	return out, order
}

// doctorJSON runs glassbox doctor with args and --json, as a user would.
func doctorJSON(t *testing.T, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	var errb strings.Builder
	if err := run(context.Background(), append(append([]string{"doctor"}, args...), "--json"), &out, &errb); exitCode(err) > 2 {
		t.Fatalf("glassbox doctor %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// checkGlance: the time axes span the window (from–to, when given), every
// legend and strip value is a number (at one reading, the rates say they
// need a second), and the answer cards and the page's own record are the
// doctor's, instance by instance.
func checkGlance(t *testing.T, g glance, from, to float64, want pageAnswers, oneReading bool) {
	t.Helper()
	if from != 0 && (math.Abs(g.Window.From-from) > 1e-3 || math.Abs(g.Window.To-to) > 1e-3) {
		t.Errorf("the page's window is %v – %v, want %v – %v", g.Window.From, g.Window.To, from, to)
	}
	for _, in := range g.Instances {
		if in.X[0] == nil || in.X[1] == nil || math.Abs(*in.X[0]-g.Window.From) > 1e-3 || math.Abs(*in.X[1]-g.Window.To) > 1e-3 {
			t.Errorf("%s: the time axis spans %v – %v, want the window %v – %v", in.Name, deref(in.X[0]), deref(in.X[1]), g.Window.From, g.Window.To)
		}
		if want != nil && fmt.Sprint(in.Questions) != fmt.Sprint(want[in.Name]) {
			t.Errorf("%s: the page answers %v, the doctor %v", in.Name, in.Questions, want[in.Name])
		}
	}
	digit := regexp.MustCompile(`[0-9]`)
	gauges := map[string]bool{"running": true, "waiting": true, "kv": true}
	if len(g.Values) < 20*len(g.Instances) {
		t.Errorf("%d legend and strip values for %d instances", len(g.Values), len(g.Instances))
	}
	for _, v := range g.Values {
		switch {
		case oneReading && !gauges[v.Series]:
			if v.Text != "needs 2 readings" {
				t.Errorf("%s: at one reading, %s reads %q, want it to say it needs a second", v.Instance, v.Series, v.Text)
			}
		case strings.HasPrefix(v.Series, "spec_") && v.Text == "n/a":
			// These targets do not speculate: without --speculative-config
			// the spec-decode families do not exist (as in vLLM), and the
			// speculative legends have nothing to read.
		case !digit.MatchString(v.Text):
			t.Errorf("%s: the legend of %s reads %q, not a number", v.Instance, v.Series, v.Text)
		}
	}
	if want != nil {
		n := 0
		for _, a := range g.Answers {
			n++
			if w := want[a.Instance][a.Question]; a.Answer != w {
				t.Errorf("%s: the card for %s says %q, the doctor %q", a.Instance, a.Question, a.Answer, w)
			}
		}
		if n != 3*len(g.Instances) {
			t.Errorf("%d answer cards for %d instances", n, len(g.Instances))
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// shoot takes the page's first screen, checks that every chart on it has
// data drawn, and with -update-screenshot writes it to docs/name.
func shoot(t *testing.T, ctx context.Context, name string) image.Image {
	t.Helper()
	full := screenshot(t, ctx)
	checkChartsDrawn(t, ctx, full)
	top, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(top))
	if err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", name), top, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// virtualLoad runs a corpus scenario's replica through its minutes of load
// in virtual time while a live page samples it every 2 s, as serve's own
// page does (the page's clock is the run's), and keeps the same readings
// as the doctor reads them.
func virtualLoad(t *testing.T, sc corpus.Scenario) (*live.Page, *doctor.Window) {
	t.Helper()
	f, err := parseSimulateFlags(sc.Args(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.replicaConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc.DCGM = true
	plan, err := f.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var now time.Time
	var body []byte
	page, err := live.New(live.Config{Interval: 2 * time.Second, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Targets: []live.Target{{Name: simulate.DefaultInstance, Read: func(context.Context) ([]byte, error) { mu.Lock(); defer mu.Unlock(); return body, nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	all := doctor.NewWindow("simulate", sc.Name)
	var errs []error
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	_, err = simulate.Run(ctx, simulate.Config{Replica: rc, Plan: plan, ObserveInterval: 2 * time.Second,
		Observe: func(at time.Time, in simulate.Instance) {
			g, dcgm := in.Gatherer, in.DCGM
			if at.Sub(simulate.Epoch) > sc.Duration() {
				stop() // the load is over: the page is looked at while it runs, not while it drains
				return
			}
			own, err := text(g)
			rec := httptest.NewRecorder()
			dcgm.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			mu.Lock()
			now, body = at, []byte(own+rec.Body.String())
			mu.Unlock()
			page.Sample(context.Background())
			s, err2 := promtext.Parse(bytes.NewReader(body))
			if err2 == nil {
				source.Append(all, at, s)
			}
			errs = append(errs, err, err2)
		}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return page, all
}

// TestDashboardAfterMinutesOfLoad: serve's page after five and a half
// minutes of a KV-bound load (in virtual time, the page's clock the run's): the axes span since the
// first reading, every legend reads a number, and the three answers are
// the doctor's over the last two minutes of the same readings; dark mode
// redraws the charts in its colours.
func TestDashboardAfterMinutesOfLoad(t *testing.T) {
	reftest.Long(t, "minutes of simulated load, in Chromium")
	if testing.Short() {
		t.Skip("runs minutes of virtual load and drives Chromium; skipped with -short")
	}
	sc := corpusScenario(t, "kv-capacity/h200/llama-3.1-8b/long-generations")
	page, all := virtualLoad(t, sc)
	srv := httptest.NewServer(page.Handler("/dashboard"))
	defer srv.Close()
	ctx, consoleErrors := browser(t)
	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/dashboard/")); err != nil {
		t.Fatal(err)
	}
	g := waitGlance(t, tctx, 1, 100)
	logDrawTime(t, tctx, "first refresh")
	var st live.State
	getJSON(t, srv.URL+"/dashboard/api/state", &st)
	first, last := all.Snapshots[0].T, all.Snapshots[len(all.Snapshots)-1].T
	an := st.Items[0].Answered
	var js bytes.Buffer
	if err := defaults.Diagnose(windowBetween(all, an.From, an.To), nil).WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	want, _ := answersOf(t, js.Bytes(), simulate.DefaultInstance)
	checkGlance(t, g, seconds(first), seconds(last), want, false)
	if span := an.To - an.From; an.To != seconds(last) || span > 120 || span < 116 {
		t.Errorf("the answers read %v – %v, want the findings window's last 2 minutes up to %v", an.From, an.To, seconds(last))
	}
	if want[simulate.DefaultInstance]["kv_limit"] != "yes" {
		t.Errorf("the scenario's KV cache is not the limit: %v", want)
	}
	shoot(t, tctx, "dashboard.png")

	// Hovering the middle of a chart shows every value at that time.
	hover := `(() => { const o = document.querySelector(".u-over"), r = o.getBoundingClientRect();
		for (const type of ["mouseenter", "mousemove"]) o.dispatchEvent(new MouseEvent(type, {clientX: r.left + r.width / 2, clientY: r.top + 10, bubbles: true})); })()`
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[any](hover)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	when, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector(".strip .when").textContent`))
	if err != nil || !regexp.MustCompile(`^at 00:0[23]:\d\d$`).MatchString(when) {
		t.Errorf("hovering the middle of the window shows the values %q (%v), want at a time in it", when, err)
	}
	if g2, err := readGlance(tctx); err != nil {
		t.Fatal(err)
	} else {
		// A hovered interval's latency quantiles are that interval's: at
		// the KV watermark no request may start in it (no TTFT) or end
		// (no end-to-end latency), and its legend then says n/a.
		g2.Values = slices.DeleteFunc(g2.Values, func(v struct{ Instance, Series, Text string }) bool {
			return v.Text == "n/a" && (strings.HasPrefix(v.Series, "ttft_") || strings.HasPrefix(v.Series, "e2e_"))
		})
		checkGlance(t, g2, seconds(first), seconds(last), want, false)
	}

	// A preset, then a range typed into the page: each is the window, in
	// the address; the fixed one is answered over its own readings.
	g = pick(t, tctx, `document.querySelector("#presets button").click()`, "?range=5m")
	checkGlance(t, g, seconds(last)-300, seconds(last), nil, false)
	g = pick(t, tctx, `document.getElementById("from").value = "2026-01-01T00:02:00"; document.getElementById("to").value = "2026-01-01T00:04:00";
		document.getElementById("apply").click()`, "?from=2026-01-01T00%3A02%3A00Z&to=2026-01-01T00%3A04%3A00Z")
	js.Reset()
	from, to := seconds(simulate.Epoch.Add(2*time.Minute)), seconds(simulate.Epoch.Add(4*time.Minute))
	if err := defaults.Diagnose(windowBetween(all, from, to), nil).WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	fixed, _ := answersOf(t, js.Bytes(), simulate.DefaultInstance)
	checkGlance(t, g, from, to, fixed, false)
	if g.Window.Live {
		t.Error("a range typed into the page is live")
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/dashboard/")); err != nil {
		t.Fatal(err)
	}
	waitGlance(t, tctx, 1, 100)

	// Dark: the page follows the colour scheme without a reload.
	if err := chromedp.Do(tctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}), chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	dark := shoot(t, tctx, "dashboard-dark.png")
	if r, gr, b, _ := dark.At(5, dark.Bounds().Dy()-5).RGBA(); max(r, gr, b) > 0x4000 {
		t.Errorf("in dark mode the page's background is %x %x %x, not dark", r, gr, b)
	}
	g = waitGlance(t, tctx, 1, 100)
	checkGlance(t, g, seconds(first), seconds(last), want, false)
	_, n, _, _, _, _ := readPage(tctx)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, m, _, _, _, _ := readPage(tctx); m >= n+2 {
			break
		}
	}
	logDrawTime(t, tctx, "a refresh with nothing new")
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestDashboardPastIncident: the docs' past incident, and a fleet of three
// simulated into the same Prometheus with --metrics-instance, read back
// through glassbox dashboard --prometheus-url --since --end: the window on
// the axes, every legend a number, the fleet worst first as the doctor
// orders it, and every instance's three answers the doctor's JSON for the
// same window, the one the page starts on and one chosen on the page (the
// doctor command the page names, run as written).
func TestDashboardPastIncident(t *testing.T) {
	reftest.Long(t, "four simulated incidents in a real Prometheus, in Chromium")
	if testing.Short() {
		t.Skip("simulates four incidents into a real Prometheus and drives Chromium; skipped with -short")
	}
	promtool := stackTool(t, "promtool")
	dir := t.TempDir()
	incident := []string{"--sim-hardware", "h200", "--max-model-len", "8192", "--kv-cache-memory-bytes", "1310720000",
		"--random-input-len", "6000", "--random-output-len", "200", "--request-rate", "1", "--duration", "5m30s", "--num-prompts", "400",
		"--metrics-interval", "10s"} // docs/dashboard.md's first command
	runs := [][]string{incident}
	for i, name := range []string{"kv-capacity/h200/llama-3.1-8b/long-generations", "compute/h200/llama-3.1-8b/long-prompts", "healthy/h200/llama-3.1-8b/chat"} {
		sc := corpusScenario(t, name)
		runs = append(runs, append(sc.Args(), "--metrics-interval", sc.Interval.String(), "--metrics-instance", fmt.Sprintf("replica-%d:8000", i)))
	}
	for i, args := range runs {
		om := filepath.Join(dir, fmt.Sprintf("run%d.om", i))
		if err := run(context.Background(), append(append([]string{"simulate"}, args...), "--metrics-out", om), io.Discard, io.Discard); err != nil {
			t.Fatalf("simulate %v: %v", args, err)
		}
		if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
			t.Fatalf("promtool: %v\n%s", err, out)
		}
	}
	prom := startPromOn(t, dir).url
	ctx, consoleErrors := browser(t)
	window := []string{"--since", "4m", "--end", "2026-01-01T00:05:30Z", "--interval", "10s"}
	from, to := seconds(simulate.Epoch.Add(90*time.Second)), seconds(simulate.Epoch.Add(330*time.Second))

	t.Run("incident", func(t *testing.T) {
		sel := `{instance="simulated:8000"}`
		url := startDashboard(t, append([]string{"--prometheus-url", prom, "--selector", sel}, window...)...)
		tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		g := waitGlance(t, tctx, 1, 20)
		want, _ := answersOf(t, doctorJSON(t, append([]string{"--prometheus-url", prom, "--selector", sel}, window...)...), simulate.DefaultInstance)
		checkGlance(t, g, from, to, want, false)
		if g.Window.Live {
			t.Error("a window ending at --end is live")
		}
		if want[simulate.DefaultInstance]["kv_limit"] != "yes" {
			t.Errorf("the incident's KV cache is not the limit: %v", want)
		}
		shoot(t, tctx, "dashboard-incident.png")

		// A window chosen on the page: its address, and the doctor
		// command it names gives its answers.
		if err := chromedp.Do(tctx, chromedp.Navigate(url+"?from=2026-01-01T00:03:00Z&to=2026-01-01T00:05:30Z")); err != nil {
			t.Fatal(err)
		}
		g = waitGlance(t, tctx, 1, 10)
		args := shellWords(g.Doctor)
		if len(args) < 3 || args[0] != "glassbox" || args[1] != "doctor" {
			t.Fatalf("the page names no doctor command: %q", g.Doctor)
		}
		want, _ = answersOf(t, doctorJSON(t, args[2:]...), simulate.DefaultInstance)
		checkGlance(t, g, seconds(simulate.Epoch.Add(3*time.Minute)), to, want, false)
	})

	t.Run("fleet", func(t *testing.T) {
		sel := `{instance=~"replica-.*"}`
		url := startDashboard(t, append([]string{"--prometheus-url", prom, "--selector", sel}, window...)...)
		tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		g := waitGlance(t, tctx, 3, 20)
		want, order := answersOf(t, doctorJSON(t, append([]string{"--prometheus-url", prom, "--selector", sel}, window...)...), "")
		checkGlance(t, g, from, to, want, false)
		if fmt.Sprint(g.Rows) != fmt.Sprint(order) {
			t.Errorf("the fleet's rows are %v, the doctor's order %v", g.Rows, order)
		}
		var drawn []string
		for _, in := range g.Instances {
			drawn = append(drawn, in.Name)
		}
		if fmt.Sprint(drawn) != fmt.Sprint(order) {
			t.Errorf("the instances are drawn %v, the doctor's order %v", drawn, order)
		}
		if len(order) != 3 || order[0] != "replica-0:8000" {
			t.Errorf("the doctor's fleet %v does not put the KV-bound replica first", order)
		}
		shoot(t, tctx, "dashboard-fleet.png")
	})
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// pick runs js (a click on the page's window controls), waits for the
// address to end in query and the page to redraw, and reads it.
func pick(t *testing.T, ctx context.Context, js, query string) glance {
	t.Helper()
	_, before, _, _, _, _ := readPage(ctx)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](js)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
		if err != nil {
			t.Fatal(err)
		}
		if _, refreshes, _, _, _, _ := readPage(ctx); loc == query && refreshes > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's address is %q, want %q", loc, query)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return waitGlance(t, ctx, 1, 1)
}

// logDrawTime logs how long the page took to parse and draw its last
// answer (measured, not asserted).
func logDrawTime(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__glassbox.drawMs || 0`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: parsed and drawn in %.1f ms", what, ms)
}

// startDashboard runs glassbox dashboard with args until the test ends and
// returns its page's address.
func startDashboard(t *testing.T, args ...string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"dashboard", "--listen", "127.0.0.1:0"}, args...), out, io.Discard)
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("dashboard: %v", err)
		}
	})
	addrRE := regexp.MustCompile(`http://(\S+)/dashboard/`)
	for range 200 {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			return "http://" + m[1] + "/dashboard/"
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("dashboard %v: %v", args, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("dashboard did not start: %s", out.String())
	return ""
}

// corpusScenario is the corpus's scenario of that name.
func corpusScenario(t *testing.T, name string) corpus.Scenario {
	t.Helper()
	for _, sc := range corpus.Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no corpus scenario %s", name)
	return corpus.Scenario{}
}

// windowBetween is w's readings from from to to (Unix seconds).
func windowBetween(w *doctor.Window, from, to float64) *doctor.Window {
	sub := *w
	sub.Snapshots = nil
	for _, s := range w.Snapshots {
		if at := seconds(s.T); at >= from-1e-4 && at <= to+1e-4 {
			sub.Snapshots = append(sub.Snapshots, s)
		}
	}
	return &sub
}

func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// shellWords splits a command line as a POSIX shell would, for the
// single-quoted words the page writes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
			}
			in = false
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
