package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/bench"
	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/source"
)

// TestDoctorLiveKVAdmission is the corpus's KV-admission incident on a live
// serve (ten times faster than real time): 6000-token prompts into a cache
// of 10,000 tokens. Read directly in glassbox's and vLLM's clothes and
// through a real Prometheus scraping the server every second, the doctor
// names it KV-capacity bound at admission each way, and the direct and
// Prometheus readings of the same window agree.
func TestDoctorLiveKVAdmission(t *testing.T) {
	reftest.Long(t, "a live KV-bound load read directly and through a real Prometheus")
	if testing.Short() {
		t.Skip("serves load against Prometheus for several seconds; skipped with -short")
	}
	promBin := stackTool(t, "prometheus")
	base, _ := serveTest(t, "--sim-time-scale", "0.1", "--max-model-len", "8192", "--kv-cache-memory-bytes", kvBytes(625))
	target := strings.TrimPrefix(base, "http://")
	promURL := startPrometheus(t, promBin, target)
	const window = 8 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	wait := runLoad(ctx, base, bench.Config{Dataset: random(6000, 200), RequestRate: 10, NumPrompts: 100}, window)
	waitForLoad(t, base)
	// Let the queue form, and let Prometheus scrape the loaded server: its
	// value at the window's start is its last scrape before it.
	time.Sleep(2 * time.Second)
	loaded := time.Now()
	waitFor(t, "a Prometheus scrape of the loaded server", 10*time.Second, func() bool {
		s, err := promQuery(promURL, fmt.Sprintf(`timestamp(up{instance=%q})`, target))
		return err == nil && len(s) == 1 && s[0].Value > float64(loaded.UnixMilli())/1000
	})
	views := []struct{ clothes, url string }{{corpus.Glassbox, base + "/metrics"}, {corpus.VLLMAlone, stripGlassbox(t, base+"/metrics")}}
	reps := make([]*doctor.Report, len(views))
	errs := make([]error, len(views))
	var wg sync.WaitGroup
	for i, v := range views {
		wg.Go(func() {
			reps[i], errs[i] = doctorRun(context.Background(), source.Scrape{URL: v.url, Duration: window, Interval: time.Second})
		})
	}
	wg.Wait()
	cancel()
	wait()
	class, _ := corpus.ClassByName("kv-admission")
	var direct *doctor.Report
	for i, rep := range reps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		clothes := views[i].clothes
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Logf("read as %s:\n%s", clothes, b.String())
		e := class.ExpectIn(clothes)
		e.Answers = nil // the live window is short: the class's findings, not its every answer
		// Ten times real time makes every rate ten times the corpus's:
		// the partial admissions' preemptions pass the storm's line.
		e.MustNot = slices.DeleteFunc(slices.Clone(e.MustNot), func(n string) bool { return n == "preemption-storm" })
		if misses := corpus.Check(rep, e); len(misses) > 0 {
			t.Errorf("live serve read as %s: %v", clothes, misses)
		}
		if rep.Questions.KV.Answer != doctor.Yes {
			t.Errorf("live serve read as %s: KV answered %q (%s), want yes", clothes, rep.Questions.KV.Answer, rep.Questions.KV.Summary)
		}
		if clothes == corpus.Glassbox {
			direct = rep
		}
	}
	// Prometheus must have scraped past the window's end.
	waitFor(t, "a Prometheus scrape after the window", 10*time.Second, func() bool {
		s, err := promQuery(promURL, fmt.Sprintf(`timestamp(up{instance=%q})`, target))
		return err == nil && len(s) == 1 && s[0].Value > float64(direct.End.UnixMilli())/1000+1
	})
	viaProm, err := doctorRun(context.Background(), source.Prometheus{URL: promURL, Selector: fmt.Sprintf(`{instance=%q}`, target),
		Since: direct.End.Sub(direct.Start), End: direct.End, Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = viaProm.WriteText(&b)
	t.Logf("through Prometheus:\n%s", b.String())
	if d := cmp.Diff(sorted(direct.Names()), sorted(viaProm.Names())); d != "" {
		t.Errorf("direct scrapes and Prometheus disagree (-direct +prometheus):\n%s", d)
	}
	if a, b := direct.Questions.KV.Answer+direct.Questions.KV.Kind, viaProm.Questions.KV.Answer+viaProm.Questions.KV.Kind; a != b {
		t.Errorf("the KV answer directly %s, through Prometheus %s", a, b)
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
