package calibrate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/profiles"
)

// preset is one of the BLIS campaign's inference-perf workloads
// (inference-sim/tektonc-data-collection workloads.yaml): stages, groups ×
// prompts per group, system prompt, question and output lengths.
type preset struct {
	stages                [][2]float64
	groups, perGroup      int
	system, question, out int
}

var presets = map[string]preset{
	"general":        {[][2]float64{{8, 600}, {20, 600}}, 9, 5, 100, 447, 248},
	"codegen":        {[][2]float64{{5, 600}, {10, 600}}, 11, 4, 100, 466, 247},
	"roleplay":       {[][2]float64{{6, 1200}}, 10, 5, 150, 600, 251},
	"reasoning":      {[][2]float64{{4, 1200}}, 23, 1, 100, 934, 1448},
	"general-lite":   {[][2]float64{{2.5, 600}, {6, 600}}, 9, 5, 100, 447, 248},
	"reasoning-lite": {[][2]float64{{1, 1200}}, 23, 1, 100, 934, 1448},
}

// Config is the preset's inference-perf file as the campaign wrote it.
func (p preset) config() string {
	var b strings.Builder
	b.WriteString("load:\n  type: constant\n  stages:\n")
	for _, s := range p.stages {
		fmt.Fprintf(&b, "  - {rate: %g, duration: %g}\n", s[0], s[1])
	}
	fmt.Fprintf(&b, "api: {type: completion, streaming: true}\nserver: {type: vllm, ignore_eos: true}\n"+
		"data:\n  type: shared_prefix\n  shared_prefix:\n    num_unique_system_prompts: %d\n    num_users_per_system_prompt: %d\n"+
		"    system_prompt_len: %d\n    question_len: %d\n    output_len: %d\n    enable_multi_turn_chat: true\n",
		p.groups, p.perGroup, p.system, p.question, p.out)
	return b.String()
}

// tableModels maps the reference tables' model names to what LookupModel
// takes: a sim profile's name, or the Hugging Face repository the campaign
// served (which resolves once a profile of that shape exists).
var tableModels = map[string]string{
	"Llama-3.1-8B": "llama-3.1-8b", "Llama-3.1-70B": "llama-3.1-70b", "Qwen2.5-7B": "qwen2.5-7b",
	"Qwen3-14B": "qwen3-14b", "Llama-2-70B": "llama-2-70b", "Llama-2-7B": "llama-2-7b", "CodeLlama-34B": "codellama-34b",
	"Mixtral-8x7B":                     "mistralai/Mixtral-8x7B-Instruct-v0.1",
	"Mixtral-8x22B-Instruct":           "mistralai/Mixtral-8x22B-Instruct-v0.1",
	"Llama-4-Scout-17B-16E FP8":        "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic",
	"Mistral-Nemo-Instruct-2407 (12B)": "mistralai/Mistral-Nemo-Instruct-2407",
}

// tableGPUs maps table A′'s GPU names to hardware profiles; table A is
// all H100.
var tableGPUs = map[string]string{"H100": "h100", "A100-80GB SXM": "a100-80g", "L40S": "l40s"}

// offloadGiB is the host memory the campaign gave vLLM's CPU KV offload
// where a row says it was on (its design doc: about 8 GiB).
const offloadGiB = 8

var (
	stageRow = regexp.MustCompile(`^\|\s*(\S+) TP(\d+) (\S+)\s*\|\s*([\d.]+)\s*\|\s*(\d+)\s*\|\s*([\d.]+)\s*/\s*([\d.]+)\s*\|\s*([\d.]+)\s*/\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|`)
	// Table A: exp | model | TP | workload | TTFT | E2E | TPOT.
	tableRow = regexp.MustCompile(`^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([\d.]+)\s*\|$`)
	// Table A′: exp | model | GPU | TP | workload | TTFT | E2E | TPOT.
	primeRow   = regexp.MustCompile(`^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([\d.]+)\s*\|$`)
	flagInRow  = regexp.MustCompile("`--([a-z-]+)[ =]([0-9.]+)`")
	triple     = regexp.MustCompile(`^([\d.]+)\s*/\s*([\d.]+)\s*/\s*([\d.]+)`)
	stageMeans = regexp.MustCompile(`\(stages ([\d.]+), ([\d.]+)\)`)
)

// sectionARows are the submatches of row in the lines of section A.
func sectionARows(r io.Reader, row *regexp.Regexp) ([][]string, error) {
	sc := bufio.NewScanner(r)
	inA := false
	var out [][]string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			inA = strings.HasPrefix(line, "## A.")
			continue
		}
		if m := row.FindStringSubmatch(line); inA && m != nil {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// Experiment is one row of reference tables A and A′: a run of the BLIS
// campaign as the simulator replays it, and what its client measured.
type Experiment struct {
	Table      string // "A" or "A′"
	ID         int    // the campaign's experiment number
	Model, GPU string // as the table names them
	Workload   string // the campaign's preset
	Run        Run
	// NotSimulated says why the simulator cannot replay the run with the
	// flags it ran with ("" when it can): a model it has no shape for, a
	// feature it does not model.
	NotSimulated string
}

// ReadExperiments reads tables A and A′ of the reference calibration data
// (reference/calibration/README.md §A: vLLM 0.15.1 on H100, A100 and L40S,
// measured by the BLIS campaign): one experiment per row, its workload the
// campaign preset it names, run as inference-perf e8e0aa99 ran it (see
// inferenceperf.Legacy), with the 26–48 tokens re-tokenisation added to
// each question. Table A's rows, then A′'s, each by experiment.
func ReadExperiments(r io.Reader) ([]Experiment, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var exps []Experiment
	for _, t := range []struct {
		name string
		row  *regexp.Regexp
	}{{"A", tableRow}, {"A′", primeRow}} {
		rows, err := sectionARows(strings.NewReader(string(b)), t.row)
		if err != nil {
			return nil, err
		}
		var these []Experiment
		for _, m := range rows {
			c := m[1:]
			gpu := "H100"
			if t.name == "A′" {
				gpu, c = c[2], append([]string{c[0], c[1]}, c[3:]...)
			}
			e, err := readExperiment(t.name, gpu, c)
			if err != nil {
				return nil, fmt.Errorf("read table %s: exp %s: %w", t.name, m[1], err)
			}
			these = append(these, e)
		}
		sort.SliceStable(these, func(i, j int) bool { return these[i].ID < these[j].ID })
		exps = append(exps, these...)
	}
	if len(exps) == 0 {
		return nil, errors.New("read tables: no rows of table A or A′")
	}
	return exps, nil
}

// readExperiment reads one row's cells: exp, model, TP, workload, TTFT,
// E2E and TPOT.
func readExperiment(table, gpu string, c []string) (Experiment, error) {
	e := Experiment{Table: table, Model: c[1], GPU: gpu}
	e.ID, _ = strconv.Atoi(c[0])
	hw, ok := tableGPUs[gpu]
	if !ok {
		return e, fmt.Errorf("no hardware profile for GPU %q", gpu)
	}
	srv := vllmDefaults(hw)
	srv.TensorParallel, _ = strconv.Atoi(c[2])
	words := strings.Fields(strings.Trim(strings.SplitN(c[3], ":", 2)[0], "`, "))
	if len(words) == 0 {
		return e, fmt.Errorf("no workload named in %q", c[3])
	}
	name := strings.TrimRight(words[0], ",;")
	p, ok := presets[name]
	if !ok {
		return e, fmt.Errorf("unknown workload %q", name)
	}
	e.Workload = name
	for _, f := range flagInRow.FindAllStringSubmatch(c[3], -1) {
		switch f[1] {
		case "max-num-batched-tokens":
			srv.MaxNumBatchedTokens, _ = strconv.Atoi(f[2])
		case "gpu-memory-utilization":
			srv.GPUMemoryUtilization, _ = strconv.ParseFloat(f[2], 64)
		default:
			return e, fmt.Errorf("flag --%s is not simulated", f[1])
		}
	}
	if strings.Contains(c[3], "CPU KV offload on") {
		srv.KVOffloadGiB = offloadGiB
	}
	ttft, e2e := triple.FindStringSubmatch(c[4]), triple.FindStringSubmatch(c[5])
	if ttft == nil || e2e == nil {
		return e, fmt.Errorf("latencies %q, %q", c[4], c[5])
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	meas := Metrics{TTFT: num(ttft[1]), TTFTP90: num(ttft[2]), TTFTP99: num(ttft[3]), E2E: num(e2e[1]), E2EP90: num(e2e[2]), E2EP99: num(e2e[3]), TPOT: num(c[6])}
	st, se := stageMeans.FindStringSubmatch(c[4]), stageMeans.FindStringSubmatch(c[5])
	if (st == nil) != (se == nil) {
		return e, fmt.Errorf("stage means for one of TTFT and E2E only: %q, %q", c[4], c[5])
	}
	if st != nil {
		if len(p.stages) != 2 {
			return e, fmt.Errorf("two stage means for workload %s of %d stages", name, len(p.stages))
		}
		meas.Stages = []StageMetrics{{TTFT: num(st[1]), E2E: num(se[1])}, {TTFT: num(st[2]), E2E: num(se[2])}}
	}
	load, err := inferenceperf.Parse(strings.NewReader(p.config()))
	if err != nil {
		return e, err
	}
	slug := strings.ToLower(strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(e.Model))
	var why []string
	if ref, ok := tableModels[e.Model]; !ok {
		why = append(why, fmt.Sprintf("no model is named for %q", e.Model))
	} else if m, err := profiles.LookupModel(ref); err != nil {
		srv.Model = ref
		why = append(why, "the simulator has no profile of "+ref)
	} else {
		srv.Model, slug = m.Name, m.Name
		if err := m.CheckTP(srv.TensorParallel); err != nil {
			why = append(why, err.Error())
		}
	}
	e.NotSimulated = strings.Join(why, "; ")
	gpuPart := ""
	if table == "A′" {
		gpuPart = "-" + hw
	}
	e.Run = Run{Name: fmt.Sprintf("exp%d-%s%s-tp%d-%s", e.ID, slug, gpuPart, srv.TensorParallel, name), Server: srv, Load: load,
		Plan: inferenceperf.PlanOptions{Compat: inferenceperf.Legacy, Drift: [2]int{26, 48}}, Measured: meas}
	return e, nil
}

// ReadTable reads table A of the reference calibration data: its runs
// (every one simulated), by name.
func ReadTable(r io.Reader) ([]Run, error) {
	exps, err := ReadExperiments(r)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, e := range exps {
		if e.Table != "A" {
			continue
		}
		if e.NotSimulated != "" {
			return nil, fmt.Errorf("read table A: exp %d: %s", e.ID, e.NotSimulated)
		}
		runs = append(runs, e.Run)
	}
	if len(runs) == 0 {
		return nil, errors.New("read table: no rows of table A")
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Name < runs[j].Name })
	return runs, nil
}

// ReadTablePrime reads table A′: the runs the simulator replays, and the
// experiments it cannot yet (with why).
func ReadTablePrime(r io.Reader) ([]Run, []Experiment, error) {
	exps, err := ReadExperiments(r)
	if err != nil {
		return nil, nil, err
	}
	var runs []Run
	var not []Experiment
	for _, e := range exps {
		switch {
		case e.Table != "A′":
		case e.NotSimulated != "":
			not = append(not, e)
		default:
			runs = append(runs, e.Run)
		}
	}
	if len(runs)+len(not) == 0 {
		return nil, nil, errors.New("read table: no rows of table A′")
	}
	return runs, not, nil
}

// ReadStageTable reads the stage-level table after table A (the same
// campaign's first round: one row per stage of a run), as runs of that
// stage alone: the check on runs a fit of table A never saw. That round
// had CPU KV offload on, of a size the table does not say: the runs take
// table A′'s 8 GiB.
func ReadStageTable(r io.Reader) ([]Run, error) {
	rows, err := sectionARows(r, stageRow)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, m := range rows {
		model, ok := tableModels[m[1]]
		if !ok {
			return nil, fmt.Errorf("read stage table: no sim profile for model %q", m[1])
		}
		p, ok := presets[m[3]]
		if !ok {
			return nil, fmt.Errorf("read stage table: unknown workload %q", m[3])
		}
		num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		rate, n := num(m[4]), num(m[5])
		p.stages = [][2]float64{{rate, n / rate}}
		load, err := inferenceperf.Parse(strings.NewReader(p.config()))
		if err != nil {
			return nil, err
		}
		srv := vllmDefaults("h100")
		srv.Model, srv.KVOffloadGiB = model, offloadGiB
		srv.TensorParallel, _ = strconv.Atoi(m[2])
		runs = append(runs, Run{Name: fmt.Sprintf("%s-tp%s-%s-%g", model, m[2], m[3], rate), Server: srv, Load: load,
			Plan:     inferenceperf.PlanOptions{Compat: inferenceperf.Legacy, Drift: [2]int{26, 48}},
			Measured: Metrics{TTFT: num(m[6]), TTFTP99: num(m[7]), E2E: num(m[8]), E2EP99: num(m[9]), TPOT: num(m[10])}})
	}
	if len(runs) == 0 {
		return nil, errors.New("read stage table: no stage rows")
	}
	return runs, nil
}
