package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
)

// HFRows reads rows offset to offset+length of a hub dataset's subset and
// split (the hub's dataset viewer serves them), and how many it has.
type HFRows func(ctx context.Context, dataset, subset, split string, offset, length int) (rows []map[string]any, total int, err error)

// hfDataset is one of the text datasets vLLM's --dataset-name hf reads:
// how a record becomes a prompt and its expected output.
type hfDataset struct {
	// sample makes a record a prompt; ok false skips it. Lengths are
	// counted by the caller.
	prompt func(rec map[string]any) (prompt, completion string, ok bool)
	// template: vLLM applies the chat template on the client (unless
	// --skip-chat-template); outputLen: the fixed default, 0 to count the
	// completion; maxPrompt and maxTotal bound a counted one.
	template            bool
	outputLen           int
	maxPrompt, maxTotal int
}

func str(rec map[string]any, key string) string {
	s, _ := rec[key].(string)
	return s
}

// hfDatasets are vLLM's text datasets of --dataset-name hf, by hub name.
var hfDatasets = map[string]hfDataset{
	"Aeala/ShareGPT_Vicuna_unfiltered": {prompt: func(r map[string]any) (string, string, bool) {
		conv, _ := r["conversations"].([]any)
		if len(conv) < 2 {
			return "", "", false
		}
		a, _ := conv[0].(map[string]any)
		b, _ := conv[1].(map[string]any)
		return str(a, "value"), str(b, "value"), true
	}, maxPrompt: 1024, maxTotal: 2048},
	"likaixin/InstructCoder": {prompt: func(r map[string]any) (string, string, bool) {
		return str(r, "input") + "\n\n" + str(r, "instruction") + " Just output the code, do not include any explanation.", "", true
	}, template: true, outputLen: 200},
	"philschmid/mt-bench": {prompt: func(r map[string]any) (string, string, bool) {
		turns, _ := r["turns"].([]any)
		if len(turns) == 0 {
			return "", "", false
		}
		s, _ := turns[0].(string)
		return s, "", true
	}, template: true, outputLen: 256},
	"AI-MO/aimo-validation-aime": aimo, "AI-MO/NuminaMath-1.5": aimo, "AI-MO/NuminaMath-CoT": aimo,
	"zed-industries/zeta": {prompt: func(r map[string]any) (string, string, bool) {
		out := str(r, "output")
		if i := strings.Index(out, "<|editable_region_start|>"); i >= 0 {
			out = out[i:]
		}
		return "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n### User Edits:\n\n" +
			str(r, "events") + "\n\n### User Excerpt:\n\n" + str(r, "input") + "\n\n### Response:\n\n", out, true
	}, maxPrompt: 1 << 30, maxTotal: 1 << 30},
}

var aimo = hfDataset{prompt: func(r map[string]any) (string, string, bool) {
	return str(r, "problem"), str(r, "solution"), true
}, maxPrompt: 2048, maxTotal: 32000}

// hfSamples is vLLM's --dataset-name hf for its text datasets: the records
// of --dataset-path (a hub dataset, read through rows, or a local JSON or
// JSONL file named by --hf-name), shuffled by the seed unless
// --disable-shuffle (from the first records, as vLLM's streaming shuffle
// draws from a buffer of them), each made a prompt as vLLM's dataset class
// makes it, oversampled to n unless --no-oversample.
func hfSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	name := d.HFName
	if name == "" {
		name = d.Path
	}
	ds, ok := hfDatasets[name]
	if !ok {
		known := make([]string, 0, len(hfDatasets))
		for k := range hfDatasets {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("hf dataset %q: glassbox reads vLLM's text datasets %s (multimodal, audio and MLPerf's are not built)", name, strings.Join(known, ", "))
	}
	recs, err := hfRecords(ctx, d, n+1000)
	if err != nil {
		return nil, err
	}
	if !d.DisableShuffle {
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	}
	specials := 0
	if it, ok := tc.(IDTokenizer); ok {
		specials = it.SpecialTokens()
	}
	var out []Sample
	for _, rec := range recs {
		if len(out) >= n {
			break
		}
		p, completion, ok := ds.prompt(rec)
		if !ok || p == "" {
			continue
		}
		if ds.template && !d.SkipChatTemplate {
			if p, err = formatChat(ctx, tc, p); err != nil {
				return nil, err
			}
		}
		pl, err := tc.Count(ctx, p)
		if err != nil {
			return nil, err
		}
		pl += specials
		ol := d.HFOutputLen
		if ol == 0 {
			ol = ds.outputLen
		}
		if ol == 0 {
			c, err := tc.Count(ctx, completion)
			if err != nil {
				return nil, err
			}
			ol = c + specials
			if pl < 4 || ol < 4 || pl > ds.maxPrompt || pl+ol > ds.maxTotal {
				continue // vLLM's is_valid_sequence
			}
		}
		out = append(out, Sample{Prompt: p, PromptLen: pl, OutputLen: ol})
	}
	if d.NoOversample {
		if len(out) == 0 {
			return nil, fmt.Errorf("hf dataset %s: no usable record", name)
		}
		return out, nil
	}
	return oversample(out, n, rng, "hf "+name)
}

// hfRecords reads up to limit records: from a local file when
// --dataset-path is one, else from the hub.
func hfRecords(ctx context.Context, d DatasetConfig, limit int) ([]map[string]any, error) {
	if st, err := os.Stat(d.Path); err == nil && st.Mode().IsRegular() {
		if d.HFName == "" {
			return nil, errors.New("hf dataset: a local --dataset-path needs --hf-name, the hub dataset it copies (as vLLM)")
		}
		return readRecords(d.Path, limit)
	}
	if d.Rows == nil {
		return nil, fmt.Errorf("hf dataset %s: this run cannot read the hub; give --dataset-path a local JSON or JSONL copy and --hf-name %s", d.Path, d.Path)
	}
	subset, split := d.HFSubset, d.HFSplit
	if subset == "" {
		subset = "default"
	}
	if split == "" {
		split = "train"
	}
	var out []map[string]any
	for len(out) < limit {
		rows, total, err := d.Rows(ctx, d.Path, subset, split, len(out), min(100, limit-len(out)))
		if err != nil {
			return nil, fmt.Errorf("hf dataset %s: %w\n(to run offline, give --dataset-path a local JSON or JSONL copy and --hf-name %s)", d.Path, err, d.Path)
		}
		out = append(out, rows...)
		if len(rows) == 0 || len(out) >= total {
			break
		}
	}
	return out, nil
}

// readRecords reads a JSON array of objects, or one object per line.
func readRecords(path string, limit int) ([]map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read hf dataset: %w", err)
	}
	var out []map[string]any
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &out); err != nil {
			return nil, fmt.Errorf("read hf dataset %s: %w", path, err)
		}
		return out[:min(limit, len(out))], nil
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan() && len(out) < limit; line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("read hf dataset %s line %d: %w", path, line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}
