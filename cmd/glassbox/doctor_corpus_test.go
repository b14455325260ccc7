package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

var (
	corpusRun    = flag.String("corpus.run", "", "regenerate the corpus scenarios whose names match this regexp and print their reports (with -corpus.update, record them)")
	corpusUpdate = flag.Bool("corpus.update", false, "with -corpus.run: write the regenerated windows to internal/corpus/testdata")
)

// corpusDir is where recorded windows live.
const corpusDir = "../../internal/corpus/testdata"

// generated is one scenario run in virtual time: its window in full
// clothes and, from the real stripped expositions, in each clothes.
type generated struct {
	full    *doctor.Window
	clothes map[string]*doctor.Window
	series  *simulate.Series
	res     *simulate.Result
}

// generate runs a scenario's command line through simulate, reading the
// replica every interval of the window as a direct scrape would, in full
// clothes and through the same stripping serve --disable-glassbox-metrics
// applies.
func generate(t *testing.T, sc corpus.Scenario, withSeries bool) *generated {
	t.Helper()
	f, err := parseSimulateFlags(sc.Args(), io.Discard)
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	rc, err := f.replicaConfig()
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	rc.DCGM = true
	plan, err := f.plan(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	g := &generated{full: doctor.NewWindow("simulate", sc.Name), clothes: map[string]*doctor.Window{}}
	for _, c := range corpus.Clothes {
		g.clothes[c] = doctor.NewWindow("simulate", sc.Name+" ("+c+")")
	}
	var errs []error
	add := func(w *doctor.Window, at time.Time, body string) {
		s, err := promtext.Parse(strings.NewReader(body))
		if err != nil {
			errs = append(errs, err)
			return
		}
		w.Add(at, s)
	}
	start := simulate.Epoch
	cfg := simulate.Config{Replica: rc, Plan: plan, RequestTimeout: f.requestTimeout, ObserveInterval: sc.Interval,
		Observe: func(at time.Time, gt prometheus.Gatherer, dcgm http.Handler) {
			if at.Before(start.Add(sc.Skip)) || at.After(start.Add(sc.Skip+sc.Window)) {
				return
			}
			own, err1 := text(gt)
			vllm, err2 := text(metrics.VLLMOnly(gt))
			errs = append(errs, err1, err2)
			rec := httptest.NewRecorder()
			dcgm.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			gpu := rec.Body.String()
			add(g.full, at, own+gpu)
			add(g.clothes[corpus.Glassbox], at, own)
			add(g.clothes[corpus.VLLMDCGM], at, vllm+gpu)
			add(g.clothes[corpus.VLLMAlone], at, vllm)
		}}
	if withSeries {
		g.series = simulate.NewSeries(sc.Interval)
		cfg.Series = g.series
	}
	if g.res, err = simulate.Run(context.Background(), cfg); err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
	}
	return g
}

// TestDoctorCorpusRegenerate regenerates the scenarios -corpus.run names,
// prints each report and how it falls short, and with -corpus.update
// records their windows: how the corpus is grown and kept fresh.
func TestDoctorCorpusRegenerate(t *testing.T) {
	if *corpusRun == "" {
		t.Skip("regenerates the doctor's corpus: run with -corpus.run REGEXP [-corpus.update]")
	}
	re := regexp.MustCompile(*corpusRun)
	for _, sc := range corpus.Scenarios() {
		if !re.MatchString(sc.Name) {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			g := generate(t, sc, false)
			hits := g.full.Increase("vllm:prefix_cache_hits_total") / g.full.Increase("vllm:prefix_cache_queries_total")
			t.Logf("%s: %d readings, simulated %v in %v, prefix-cache hit rate %.3f", sc.Name, len(g.full.Snapshots), g.res.Duration.Round(time.Second), g.res.Wall.Round(time.Millisecond), hits)
			for _, c := range corpus.Clothes {
				rep := doctor.Diagnose(corpus.In(g.full, c), nil)
				var b strings.Builder
				_ = rep.WriteText(&b)
				misses := corpus.Check(rep, sc.Expect(c))
				t.Logf("read as %s: findings %v, misses %v\n%s", c, rep.Names(), misses, b.String())
			}
			if *corpusUpdate {
				path := filepath.Join(corpusDir, sc.File()+".window.json.gz")
				fh, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := corpus.Write(fh, g.full); err != nil {
					t.Fatal(err)
				}
				if err := fh.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
