package workload

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseShareGPT(t *testing.T) {
	data := `[{"id":"a","conversations":[{"from":"human","value":"hi there"},{"from":"gpt","value":"hello you"}]},
	{"id":"b","conversations":[{"from":"human","value":"alone"}]}]`
	got, err := parseShareGPT([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]promptPair{{"hi there", "hello you"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseShareGPT([]byte(`{"not":"a list"}`)); err == nil {
		t.Error("a JSON object was accepted as a ShareGPT file")
	}
}

func FuzzParseShareGPT(f *testing.F) {
	f.Add([]byte(`[{"conversations":[{"from":"human","value":"a"},{"from":"gpt","value":"b"}]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"conversations":null}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pairs, err := parseShareGPT(data)
		if err != nil {
			return
		}
		for _, p := range pairs {
			// every prompt must come from the input (JSON may escape it)
			if p.Prompt != "" && !bytes.Contains(data, []byte(p.Prompt)) && !bytes.Contains(data, []byte(`\`)) {
				t.Fatalf("prompt %q is not in the input", p.Prompt)
			}
		}
	})
}

func TestParseCustomJSONL(t *testing.T) {
	got, err := parseCustomJSONL(strings.NewReader("{\"prompt\":\"one\"}\n\n{\"prompt\":\"two\",\"other\":1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]promptPair{{Prompt: "one"}, {Prompt: "two"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"{\"text\":\"x\"}\n", "not json\n", "{\"prompt\":3}\n"} {
		if _, err := parseCustomJSONL(strings.NewReader(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func FuzzParseCustomJSONL(f *testing.F) {
	f.Add([]byte("{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pairs, err := parseCustomJSONL(bytes.NewReader(data))
		if err == nil && len(pairs) > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d prompts from %d lines", len(pairs), bytes.Count(data, []byte("\n"))+1)
		}
	})
}

// wordCounter counts one token per word, like the fake server's /tokenize.
type wordCounter struct{}

func (wordCounter) ID() string { return "words" }
func (wordCounter) Count(_ context.Context, s string) (int, error) {
	return len(strings.Fields(s)), nil
}

func TestRandomDatasetLengths(t *testing.T) {
	d := DatasetConfig{RandomInputLen: 100, RandomOutputLen: 20, RandomRangeRatio: 0.5, RandomPrefixLen: 30}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSamples(context.Background(), d, 200, wordCounter{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.Join(strings.Fields(s[0].Prompt)[:30], " ")
	for _, x := range s {
		if x.PromptLen < 30+50 || x.PromptLen > 30+150 || x.OutputLen < 10 || x.OutputLen > 30 {
			t.Fatalf("sample lengths %d/%d outside [80,180]/[10,30]", x.PromptLen, x.OutputLen)
		}
		if n, _ := (wordCounter{}).Count(nil, x.Prompt); n != x.PromptLen {
			t.Fatalf("recorded length %d, the prompt has %d tokens", x.PromptLen, n)
		}
		if !strings.HasPrefix(x.Prompt, prefix) {
			t.Fatal("a random prompt lacks the shared prefix")
		}
	}
}

func TestPrefixRepetitionShares(t *testing.T) {
	d := DatasetConfig{Name: "prefix-repetition", PrefixLen: 12, SuffixLen: 4, NumPrefixes: 3, PrefixOutputLen: 7}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSamples(context.Background(), d, 30, wordCounter{}, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]int{}
	for _, x := range s {
		w := strings.Fields(x.Prompt)
		if x.PromptLen != 16 || len(w) != 16 || x.OutputLen != 7 {
			t.Fatalf("sample %d tokens (%d words), output %d; want 16, 7", x.PromptLen, len(w), x.OutputLen)
		}
		prefixes[strings.Join(w[:12], " ")]++
	}
	if len(prefixes) != 3 {
		t.Errorf("%d distinct prefixes, want 3", len(prefixes))
	}
}
