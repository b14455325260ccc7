package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/glassbox-llm/glassbox/internal/corpus"
	"github.com/glassbox-llm/glassbox/internal/doctor"
	"github.com/glassbox-llm/glassbox/internal/metrics"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/reftest"
	"github.com/glassbox-llm/glassbox/internal/simulate"
	"github.com/glassbox-llm/glassbox/internal/source"
)

var (
	corpusRun    = flag.String("corpus.run", "", "regenerate the corpus scenarios whose names match this regexp and print their reports (with -corpus.update, record them)")
	corpusUpdate = flag.Bool("corpus.update", false, "with -corpus.run: write the regenerated windows to internal/corpus/testdata")
	corpusFull   = flag.Bool("corpus.full", false, "run every corpus scenario through a real Prometheus and --verify, and write docs/doctor-corpus.md's full section (with -corpus.run, those it names only, the table logged instead)")
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
// generate runs sc; with series, its --metrics-out is recorded too, its
// series labelled instance (one TSDB holds many runs).
func generate(t *testing.T, sc corpus.Scenario, series string, extra ...string) *generated {
	t.Helper()
	f, err := parseSimulateFlags(append(sc.Args(), extra...), io.Discard)
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
		source.Append(w, at.Truncate(time.Millisecond), s) // as recorded, and as Prometheus stores it
	}
	start := simulate.Epoch
	cfg := simulate.Config{Replica: rc, Plan: plan, RequestTimeout: f.requestTimeout, ObserveInterval: sc.Interval,
		Observe: func(at time.Time, in simulate.Instance) {
			gt, dcgm := in.Gatherer, in.DCGM
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
	if series != "" {
		g.series = simulate.NewSeries(sc.Interval)
		g.series.Instance = series
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
			g := generate(t, sc, "")
			hits := g.full.Increase("vllm:prefix_cache_hits_total") / g.full.Increase("vllm:prefix_cache_queries_total")
			t.Logf("%s: %d readings, simulated %v in %v, prefix-cache hit rate %.3f", sc.Name, len(g.full.Snapshots), g.res.Duration.Round(time.Second), g.res.Wall.Round(time.Millisecond), hits)
			for _, c := range corpus.Clothes {
				rep := defaults.Diagnose(corpus.In(g.full, c), nil)
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

// fastScenarios are those the tests every change runs regenerate (each
// in a second or two); under -race, which slows the simulator about 16×,
// the three quickest, and .ci/run runs them all without it.
func fastScenarios(t *testing.T) []corpus.Scenario {
	var out []corpus.Scenario
	for _, sc := range corpus.Scenarios() {
		if sc.Fast {
			out = append(out, sc)
		}
	}
	if raceEnabled {
		t.Logf("under -race: %d of the %d fast scenarios (.ci/run runs them all without -race)", 3, len(out))
		quick := map[string]bool{"healthy": true, "kv-admission": true, "concurrency-cap": true}
		out = slices.DeleteFunc(out, func(sc corpus.Scenario) bool { return !quick[sc.Class] })
	}
	return out
}

func recorded(t *testing.T, sc corpus.Scenario) *doctor.Window {
	t.Helper()
	w, err := corpus.ReadFile(filepath.Join(corpusDir, sc.File()+".window.json.gz"))
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	return w
}

// verdict is what a report says: its findings and its three answers.
func verdict(rep *doctor.Report) string {
	q := rep.Questions
	return fmt.Sprintf("findings %v; compute %s %s, kv %s %s, scheduler %s %s", rep.Names(), q.Compute.Answer, q.Compute.Kind, q.KV.Answer, q.KV.Kind, q.Scheduler.Answer, q.Scheduler.Kind)
}

// TestDoctorCorpusFresh: the fast scenarios regenerate, run as their
// command lines say, to the windows recorded in testdata (so the recorded
// corpus is the simulator's, not a stale copy); and the clothes the
// corpus derives from a full window give the doctor the same answers as
// the expositions stripped the way serve --disable-glassbox-metrics
// strips them.
func TestDoctorCorpusFresh(t *testing.T) {
	reftest.Long(t, "the doctor's corpus regenerated")
	if testing.Short() {
		t.Skip("regenerates corpus scenarios in virtual time; skipped with -short")
	}
	for _, sc := range fastScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			g := generate(t, sc, "")
			want := recorded(t, sc)
			if d := cmp.Diff(want.Snapshots, g.full.Snapshots, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("the regenerated window differs from the recorded one (a change to the engine or the simulator? rerun TestDoctorCorpusRegenerate -corpus.run=. -corpus.update and review the golden reports):\n%.3000s", d)
			}
			for _, c := range corpus.Clothes {
				derived := verdict(defaults.Diagnose(corpus.In(g.full, c), nil))
				stripped := verdict(defaults.Diagnose(g.clothes[c], nil))
				if derived != stripped {
					t.Errorf("%s: the derived clothes say %s; the stripped expositions %s", c, derived, stripped)
				}
			}
		})
	}
}

// promCorpus is a real Prometheus holding scenarios' metrics over virtual
// time, loaded with promtool as an operator loads a past incident.
type promCorpus struct {
	url string
}

// importRun writes a run's --metrics-out into dir and turns it into TSDB
// blocks under dir/data with promtool, as an operator imports a past
// incident; it drops the run's recorded series.
func importRun(t *testing.T, dir string, g *generated) {
	t.Helper()
	file := filepath.Join(dir, g.series.Instance+".om")
	fh, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.series.WriteOpenMetrics(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	g.series = nil
	importOpenMetrics(t, file, dir)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
}

// importOpenMetrics turns an OpenMetrics file into TSDB blocks under
// dir/data, as promtool does for an operator loading a past incident.
func importOpenMetrics(t *testing.T, file, dir string) {
	t.Helper()
	if out, err := exec.Command(stackTool(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		t.Fatalf("promtool create-blocks-from openmetrics: %v\n%s", err, out)
	}
}

// loadIntoPrometheus imports each run and starts Prometheus on the blocks.
func loadIntoPrometheus(t *testing.T, runs []*generated) *promCorpus {
	t.Helper()
	dir := t.TempDir()
	for _, g := range runs {
		importRun(t, dir, g)
	}
	return startPromOn(t, dir)
}

// startPromOn starts Prometheus on dir/data.
func startPromOn(t *testing.T, dir string) *promCorpus {
	t.Helper()
	prom := stackTool(t, "prometheus")
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	// The incidents happened months ago (virtual time starts at
	// simulate.Epoch): keep them.
	startChild(t, prom, "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=100y", "--web.listen-address="+addr)
	u := "http://" + addr
	waitFor(t, "Prometheus ready", 30*time.Second, func() bool { return httpOK(u + "/-/ready") })
	return &promCorpus{url: u}
}

// read diagnoses a scenario's window through Prometheus's range API, as
// glassbox doctor --prometheus-url reads a past incident.
func (p *promCorpus) read(t *testing.T, sc corpus.Scenario, instance string) *doctor.Report {
	t.Helper()
	end := simulate.Epoch.Add(sc.Skip + sc.Window)
	rep, err := doctorRun(context.Background(), source.Prometheus{URL: p.url, Selector: fmt.Sprintf(`{instance=%q}`, instance),
		Since: sc.Window, End: end, Step: sc.Interval})
	if err != nil {
		t.Fatalf("%s through Prometheus: %v", sc.Name, err)
	}
	return rep
}

// TestDoctorCorpusThroughPrometheus: the fast scenarios' metrics, loaded
// into a real Prometheus with promtool, read through its range API give
// the same findings and answers as the direct readings, and meet the
// scenario's expectations; in glassbox's clothes and in vLLM's with DCGM
// (the same run served with --disable-glassbox-metrics).
func TestDoctorCorpusThroughPrometheus(t *testing.T) {
	reftest.Long(t, "the doctor's corpus through a real Prometheus")
	if testing.Short() {
		t.Skip("regenerates corpus scenarios and starts Prometheus; skipped with -short")
	}
	scs := fastScenarios(t)[:3]
	if raceEnabled {
		scs = scs[:2] // recording every reading's every series is the slowest part under -race
	}
	var runs []*generated
	for _, sc := range scs {
		runs = append(runs, generate(t, sc, sc.File()), generate(t, sc, sc.File()+"-vllm", "--disable-glassbox-metrics"))
	}
	prom := loadIntoPrometheus(t, runs)
	for i, sc := range scs {
		for _, c := range []struct{ clothes, instance string }{{corpus.Glassbox, sc.File()}, {corpus.VLLMDCGM, sc.File() + "-vllm"}} {
			rep := prom.read(t, sc, c.instance)
			if misses := corpus.Check(rep, sc.Expect(c.clothes)); len(misses) > 0 {
				t.Errorf("%s through Prometheus, read as %s: %v", sc.Name, c.clothes, misses)
			}
			direct := defaults.Diagnose(corpus.In(runs[2*i].full, c.clothes), nil)
			if a, b := verdict(direct), verdict(rep); a != b {
				t.Errorf("%s read as %s: directly %s; through Prometheus %s", sc.Name, c.clothes, a, b)
			}
		}
	}
}

// TestDoctorCorpusRemedies: on the fast scenarios whose report recommends
// a flag, the recommendation replayed in virtual time (--verify) improves
// throughput or latency.
func TestDoctorCorpusRemedies(t *testing.T) {
	reftest.Long(t, "the doctor's corpus remedies replayed")
	if testing.Short() {
		t.Skip("replays corpus scenarios twice each; skipped with -short")
	}
	for _, sc := range fastScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			w := corpus.In(recorded(t, sc), corpus.Glassbox)
			rep := defaults.Diagnose(w, nil)
			v := doctor.Verify(context.Background(), doctor.VerifyConfig{Replay: replayVirtual, Send: time.Minute, Seed: 1}, rep)
			if v.Skipped != "" {
				t.Logf("%s: no replay (%s)", sc.Name, v.Skipped)
				return
			}
			if !v.Improved {
				t.Errorf("%s: %s recommended, and %s", sc.Name, strings.Join(v.Findings, ", "), v.Verdict)
			}
		})
	}
}

// TestDoctorCorpusFull is the corpus's full run: every scenario
// regenerated (and checked against its recorded window), read directly in
// the three clothes and through a real Prometheus in glassbox's and vLLM +
// DCGM's, and its recommendation replayed with --verify; the tables go to
// docs/doctor-corpus.md. It takes some minutes:
//
//	go test ./cmd/glassbox -run TestDoctorCorpusFull -timeout 60m -args -corpus.full
//
// With -corpus.run REGEXP it runs the scenarios it names only, and logs
// their table rather than writing the docs.
func TestDoctorCorpusFull(t *testing.T) {
	if !*corpusFull {
		t.Skip("the corpus's full run: go test ./cmd/glassbox -run TestDoctorCorpusFull -timeout 60m -args -corpus.full")
	}
	dir := t.TempDir()
	var results []corpus.Result
	type fullRow struct {
		sc            corpus.Scenario
		fresh         string
		prom          [2]string // glassbox, vllm+dcgm: agreement with the direct reading
		verdict, note string
	}
	var rows []fullRow
	var only *regexp.Regexp
	if *corpusRun != "" {
		only = regexp.MustCompile(*corpusRun)
	}
	for _, sc := range corpus.Scenarios() {
		if only != nil && !only.MatchString(sc.Name) {
			continue
		}
		g := generate(t, sc, sc.File())
		v := generate(t, sc, sc.File()+"-vllm", "--disable-glassbox-metrics")
		importRun(t, dir, g)
		importRun(t, dir, v)
		row := fullRow{sc: sc, fresh: "same"}
		if d := cmp.Diff(recorded(t, sc).Snapshots, g.full.Snapshots, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			row.fresh = "differs: re-record"
			t.Errorf("%s: the regenerated window differs from the recorded one", sc.Name)
		}
		for _, c := range corpus.Clothes {
			results = append(results, corpus.Judge(defaults, sc, corpus.In(g.full, c), c, "direct"))
		}
		w := corpus.In(g.full, corpus.Glassbox)
		rep := defaults.Diagnose(w, nil)
		ver := doctor.Verify(context.Background(), doctor.VerifyConfig{Replay: replayVirtual, Send: 2 * time.Minute, Seed: 1}, rep)
		switch {
		case ver.Skipped != "":
			row.verdict = "not replayed"
			row.note = ver.Skipped
		case ver.Improved:
			row.verdict = "improved"
			row.note = strings.Join(ver.Findings, ", ") + ": " + ver.Verdict
		default:
			row.verdict = "**did not improve**"
			row.note = strings.Join(ver.Findings, ", ") + ": " + ver.Verdict
		}
		rows = append(rows, row)
	}
	prom := startPromOn(t, dir)
	for i := range rows {
		sc := rows[i].sc
		full := recorded(t, sc)
		for j, c := range []struct{ clothes, instance string }{{corpus.Glassbox, sc.File()}, {corpus.VLLMDCGM, sc.File() + "-vllm"}} {
			rep := prom.read(t, sc, c.instance)
			r := corpus.Result{Scenario: sc, Clothes: c.clothes, Source: "prometheus", Report: rep, Misses: corpus.Check(rep, sc.Expect(c.clothes))}
			results = append(results, r)
			direct := verdict(defaults.Diagnose(corpus.In(full, c.clothes), nil))
			rows[i].prom[j] = "same"
			if got := verdict(rep); got != direct {
				rows[i].prom[j] = "differs: " + got
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d scenarios, %d reports (three clothes read directly, two through Prometheus).\n\n", len(rows), len(results))
	b.WriteString(corpus.Confusion(results))
	b.WriteString("\nPer scenario: the regenerated window against the recorded one, the Prometheus readings against the direct ones (findings and answers), and the recommendation replayed (`--verify`, two minutes of virtual time each way, glassbox's clothes):\n\n")
	b.WriteString("| scenario | window | Prometheus: glassbox | Prometheus: vLLM + DCGM | --verify | what was replayed |\n|---|---|---|---|---|---|\n")
	improved, replayed := 0, 0
	for _, r := range rows {
		if r.verdict != "not replayed" {
			replayed++
			if r.verdict == "improved" {
				improved++
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.sc.Name, r.fresh, r.prom[0], r.prom[1], r.verdict, strings.ReplaceAll(r.note, "|", "/"))
	}
	fmt.Fprintf(&b, "\nRecommendations replayed: %d; improved: %d.\n", replayed, improved)
	for _, r := range results {
		if len(r.Misses) > 0 {
			t.Errorf("%s read as %s (%s): %v", r.Scenario.Name, r.Clothes, r.Source, r.Misses)
		}
	}
	if only != nil {
		t.Logf("the scenarios -corpus.run names (docs/doctor-corpus.md unchanged):\n%s", b.String())
		return
	}
	docPath := "../../docs/doctor-corpus.md"
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(<!-- corpus:full -->\n).*?(<!-- /corpus:full -->)`)
	if !re.Match(doc) {
		t.Fatalf("%s has no corpus:full section", docPath)
	}
	out := re.ReplaceAllLiteral(doc, []byte("<!-- corpus:full -->\n"+b.String()+"<!-- /corpus:full -->"))
	if err := os.WriteFile(docPath, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d replayed, %d improved", docPath, replayed, improved)
}
