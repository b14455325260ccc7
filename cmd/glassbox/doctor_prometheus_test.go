package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/doctor"
)

// TestDoctorSameAnswerFromPrometheus runs two scenarios with a real
// Prometheus scraping the server every second: the doctor's direct
// scrapes and its range queries over the same window must name the same
// findings.
func TestDoctorSameAnswerFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	promBin := stackTool(t, "prometheus")
	all := scenarios()
	for _, sc := range []scenario{all[1], all[3]} { // KV-capacity bound; concurrency cap
		t.Run(sc.name, func(t *testing.T) {
			sc.window = 6 * time.Second
			base, _ := serveTest(t, append([]string{"--sim-time-scale", "1"}, sc.serve...)...)
			target := strings.TrimPrefix(base, "http://")
			promURL := startPrometheus(t, promBin, target)

			ctx, cancel := context.WithCancel(context.Background())
			wait := runLoad(ctx, base, sc.load, sc.window)
			waitForLoad(t, base)
			// Prometheus's value at the window's start is its last scrape
			// before it: let that scrape see the load too, or the first of
			// its readings can predate the load that the direct one sees.
			loaded := time.Now()
			waitFor(t, "a Prometheus scrape of the loaded server", 10*time.Second, func() bool {
				s, err := promQuery(promURL, fmt.Sprintf(`timestamp(up{instance=%q})`, target))
				return err == nil && len(s) == 1 && s[0].Value > float64(loaded.UnixMilli())/1000
			})
			direct, err := doctor.Run(context.Background(), doctor.Config{MetricsURL: base + "/metrics", Duration: sc.window, Interval: time.Second})
			cancel()
			wait()
			if err != nil {
				t.Fatal(err)
			}
			// Prometheus must have scraped past the window's end.
			waitFor(t, "a Prometheus scrape after the window", 10*time.Second, func() bool {
				s, err := promQuery(promURL, fmt.Sprintf(`timestamp(up{instance=%q})`, target))
				return err == nil && len(s) == 1 && s[0].Value > float64(direct.End.UnixMilli())/1000+1
			})
			viaProm, err := doctor.Run(context.Background(), doctor.Config{PrometheusURL: promURL, Selector: fmt.Sprintf(`{instance=%q}`, target),
				Since: direct.End.Sub(direct.Start), End: direct.End, Interval: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var a, b strings.Builder
			_ = direct.WriteText(&a)
			_ = viaProm.WriteText(&b)
			t.Logf("direct:\n%s\nprometheus:\n%s", a.String(), b.String())
			checkScenario(t, sc, direct)
			if d := cmp.Diff(sorted(direct.Names()), sorted(viaProm.Names())); d != "" {
				t.Errorf("direct scrapes and Prometheus disagree (-direct +prometheus):\n%s", d)
			}
		})
	}
}

func sorted(xs []string) []string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs
}

// startPrometheus runs Prometheus scraping target every second and
// returns its URL once the target is up.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: glassbox\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	startChild(t, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	promURL := "http://" + addr
	waitFor(t, "Prometheus ready", 20*time.Second, func() bool { return httpOK(promURL + "/-/ready") })
	waitFor(t, "Prometheus scraping glassbox", 20*time.Second, func() bool {
		s, err := promQuery(promURL, fmt.Sprintf(`up{instance=%q} == 1`, target))
		return err == nil && len(s) == 1
	})
	return promURL
}
