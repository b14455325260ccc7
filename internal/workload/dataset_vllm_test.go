package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// TestSonnetDataset: the base line, the shared first lines, then random
// lines, every prompt within --sonnet-input-len tokens.
func TestSonnetDataset(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "line %d of a poem about the time and the water\n", i)
	}
	path := filepath.Join(t.TempDir(), "sonnet.txt")
	os.WriteFile(path, []byte(b.String()), 0o644)
	d := DatasetConfig{Name: "sonnet", Path: path, SonnetInputLen: 200, SonnetPrefixLen: 60, SonnetOutputLen: 7}
	s, err := LoadSamples(context.Background(), d, 20, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range s {
		if !strings.HasPrefix(x.Prompt, SonnetBase+"line 0 of") || x.PromptLen > 200 || x.PromptLen < 150 || x.OutputLen != 7 {
			t.Fatalf("sample %q (%d tokens, output %d)", x.Prompt[:60], x.PromptLen, x.OutputLen)
		}
	}
	if _, err := LoadSamples(context.Background(), DatasetConfig{Name: "sonnet", Path: path, SonnetInputLen: 5}, 1, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("an input length below the base prompt's was accepted")
	}
}

// TestBurstGPTDataset: GPT-4 rows that answered, their request and
// response tokens as the lengths.
func TestBurstGPTDataset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	os.WriteFile(path, []byte(burst), 0o644)
	s, err := LoadSamples(context.Background(), DatasetConfig{Name: "burstgpt", Path: path}, 3, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range s {
		if x.PromptLen != 417 || x.OutputLen != 24 || len(x.PromptIDs) != 417 {
			t.Errorf("sample of %d prompt tokens (%d ids), %d output; want the one GPT-4 row that answered: 417, 24", x.PromptLen, len(x.PromptIDs), x.OutputLen)
		}
	}
}

// TestHFDataset: a hub text dataset read through its rows (and a local
// copy named by --hf-name), each record a prompt as vLLM's class makes it.
func TestHFDataset(t *testing.T) {
	rows := func(_ context.Context, dataset, subset, split string, offset, length int) ([]map[string]any, int, error) {
		if dataset != "Aeala/ShareGPT_Vicuna_unfiltered" || subset != "default" || split != "train" {
			return nil, 0, fmt.Errorf("unexpected %s %s %s", dataset, subset, split)
		}
		var out []map[string]any
		for i := offset; i < min(offset+length, 250); i++ {
			out = append(out, map[string]any{"conversations": []any{
				map[string]any{"from": "human", "value": strings.Repeat("ask me ", 5+i%7)},
				map[string]any{"from": "gpt", "value": strings.Repeat("yes ", 6+i%5)}}})
		}
		return out, 250, nil
	}
	d := DatasetConfig{Name: "hf", Path: "Aeala/ShareGPT_Vicuna_unfiltered", Rows: rows}
	s, err := LoadSamples(context.Background(), d, 300, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 300 || !strings.HasPrefix(s[0].Prompt, "ask me") || s[0].OutputLen < 6 {
		t.Errorf("%d samples, the first %+v", len(s), s[0])
	}
	local := filepath.Join(t.TempDir(), "aime.jsonl")
	os.WriteFile(local, []byte(`{"problem":"What is one plus one, the sum of the two numbers?","solution":"It is two, the sum of one and one."}`+"\n"), 0o644)
	s, err = LoadSamples(context.Background(), DatasetConfig{Name: "hf", Path: local, HFName: "AI-MO/aimo-validation-aime", NoOversample: true}, 5,
		simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(s) != 1 || !strings.HasPrefix(s[0].Prompt, "What is one") {
		t.Errorf("local aimo: %v %+v", err, s)
	}
	for _, bad := range []DatasetConfig{{Name: "hf", Path: "lmarena-ai/VisionArena-Chat", Rows: rows}, {Name: "hf", Path: local},
		{Name: "hf", Path: "Aeala/ShareGPT_Vicuna_unfiltered"}} {
		if _, err := LoadSamples(context.Background(), bad, 1, simTok{sim.NewVocab()}, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
}

// TestTracePlan: a trace replayed at its times, or scaled to a rate.
func TestTracePlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(path, []byte(azure2024), 0o644)
	tr, err := ReadTrace(path, TraceAzure)
	if err != nil {
		t.Fatal(err)
	}
	p, err := TracePlan(context.Background(), tr, simTok{sim.NewVocab()}, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if offs := p.Stages[0].Offsets; len(offs) != 3 || offs[1] != tr[1].At || p.Prompts[0].PromptLen != 2162 || p.Prompts[1].OutputLen != 15 {
		t.Errorf("plan %v, prompt 0 of %d tokens", offs, p.Prompts[0].PromptLen)
	}
	fast, _ := TracePlan(context.Background(), tr, simTok{sim.NewVocab()}, 2, 20, 1)
	if offs := fast.Stages[0].Offsets; len(offs) != 2 || offs[1] != 100*1e6 {
		t.Errorf("two requests at 20/s: offsets %v, want 0 and 100ms", offs)
	}
}
