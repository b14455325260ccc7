package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

// sweepResult runs a small sweep against the fake server.
func sweepResult(t *testing.T) *Result {
	scripts := map[string]script{
		"prompt a": {ttft: 100 * ms, gaps: []time.Duration{20 * ms, 20 * ms, 20 * ms}, promptTokens: 10},
		"prompt b": {ttft: 200 * ms, gaps: []time.Duration{10 * ms, 30 * ms}, promptTokens: 20},
		"prompt c": {ttft: 300 * ms, gaps: []time.Duration{900 * ms, 900 * ms}, promptTokens: 30},
		"prompt d": {ttft: 400 * ms, gaps: []time.Duration{50 * ms, 50 * ms, 50 * ms, 50 * ms}, promptTokens: 40},
	}
	slo := 250.0
	return runFake(t, scripts, Config{Sweep: true, SweepSize: 4, SLOAttained: 0.5, Goodput: SLOs{TTFT: &slo},
		ScrapeInterval: 200 * ms})
}

func TestSweepResultAndReport(t *testing.T) {
	res := sweepResult(t)
	if len(res.Sweep.Points) != 4 || res.Sweep.Knee < 0 {
		t.Fatalf("%d sweep points, knee %d; want 4 and a knee (half the requests meet the TTFT SLO)", len(res.Sweep.Points), res.Sweep.Knee)
	}
	var html bytes.Buffer
	if err := res.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cdf-ttft", "cdf-tpot", "cdf-itl", "cdf-e2el", "throughput", "concurrency", "server-queue", "server-kv",
		"sweep-throughput", "sweep-output", "sweep-latency"} {
		if !strings.Contains(html.String(), `id="`+id+`"`) {
			t.Errorf("report lacks the %s plot", id)
		}
	}
	if strings.Contains(html.String(), "http://") && strings.Contains(html.String(), "<script src") {
		t.Error("report loads a script from the network")
	}
	b, err := res.JSON(false)
	if err != nil || !bytes.Contains(b, []byte(`"knee_request_rate"`)) || !bytes.Contains(b, []byte(`"strategy": "synchronous"`)) {
		t.Errorf("sweep JSON lacks the knee or the passes (err %v)", err)
	}
}

// TestReportRendersInChromium opens the report in headless Chromium and
// checks every plot has drawn lines and non-white pixels on a screenshot.
func TestReportRendersInChromium(t *testing.T) {
	chromium := reftest.Tool(t, "chromium")
	res := sweepResult(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true)}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="1"]`))); err != nil {
		t.Fatalf("open the report: %v", err)
	}
	type box struct {
		ID         string
		X, Y, W, H float64
		Lines      int // polylines with a non-empty bounding box
	}
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`[...document.querySelectorAll("svg.plot")].map(s => {
		const r = s.getBoundingClientRect();
		const lines = [...s.querySelectorAll("polyline.series")].filter(p => { const b = p.getBBox(); return b.width > 0 || b.height > 0; }).length;
		return {ID: s.id, X: r.x + window.scrollX, Y: r.y + window.scrollY, W: r.width, H: r.height, Lines: lines};
	})`))
	if err != nil {
		t.Fatalf("measure plots: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if len(boxes) < 11 {
		t.Fatalf("%d plots rendered, want 11", len(boxes))
	}
	for _, b := range boxes {
		if b.W < 100 || b.H < 100 || b.Lines == 0 {
			t.Errorf("plot %s: %vx%v px with %d drawn lines", b.ID, b.W, b.H, b.Lines)
			continue
		}
		// Axes and labels are grey; only the data lines are coloured.
		if n := colouredPixels(img, image.Rect(int(b.X), int(b.Y), int(b.X+b.W), int(b.Y+b.H))); n < 100 {
			t.Errorf("plot %s has %d coloured pixels on the screenshot: no data drawn", b.ID, n)
		}
	}
}

// colouredPixels counts pixels of r that are clearly not grey.
func colouredPixels(img image.Image, r image.Rectangle) int {
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

// TestEmptyStageIsNotNaN: a stage that sent nothing (a sweep's 1 req/s
// for half a second) has rates of 0, and the result still marshals.
func TestEmptyStageIsNotNaN(t *testing.T) {
	m := calculate(nil, 0, []float64{99}, SLOs{}, 0)
	if m.RequestThroughput != 0 || m.OutputThroughput != 0 || m.TotalTokenThroughput != 0 {
		t.Errorf("empty metrics %+v", m)
	}
	if _, err := json.Marshal(object{{"r", m.RequestThroughput}}); err != nil {
		t.Error(err)
	}
}
