package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// promptPair is a prompt and, where the dataset has one, the reference
// completion whose length becomes max_tokens.
type promptPair struct {
	Prompt, Completion string
}

// parseShareGPT reads a ShareGPT JSON array and keeps, as vLLM does, the
// first two turns of every conversation that has at least two.
func parseShareGPT(data []byte) ([]promptPair, error) {
	var entries []ShareGPTRecord
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("parse sharegpt: %w", err)
	}
	var out []promptPair
	for _, e := range entries {
		if len(e.Conversations) >= 2 {
			out = append(out, promptPair{e.Conversations[0].Value, e.Conversations[1].Value})
		}
	}
	return out, nil
}

// parseCustomJSONL reads vLLM's custom dataset: one JSON object per line
// with a "prompt" string. Blank lines are skipped.
func parseCustomJSONL(r io.Reader) ([]promptPair, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var out []promptPair
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Prompt *string `json:"prompt"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("parse custom dataset line %d: %w", line, err)
		}
		if rec.Prompt == nil {
			return nil, fmt.Errorf("parse custom dataset line %d: no \"prompt\" string", line)
		}
		out = append(out, promptPair{Prompt: *rec.Prompt})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read custom dataset: %w", err)
	}
	return out, nil
}

// shareGPTSamples shuffles the conversations and keeps those vLLM keeps:
// prompts of at least 4 and at most 1024 tokens, outputs of at least 4
// (unless the output length is fixed), and at most 2048 tokens in all.
func shareGPTSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	data, err := os.ReadFile(d.Path)
	if err != nil {
		return nil, fmt.Errorf("read sharegpt dataset: %w", err)
	}
	pairs, err := parseShareGPT(data)
	if err != nil {
		return nil, err
	}
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	var out []Sample
	for _, p := range pairs {
		if len(out) >= n {
			break
		}
		pl, err := tc.Count(ctx, p.Prompt)
		if err != nil {
			return nil, err
		}
		ol := d.SharegptOutputLen
		if ol == 0 {
			if ol, err = tc.Count(ctx, p.Completion); err != nil {
				return nil, err
			}
		}
		if pl < 4 || (d.SharegptOutputLen == 0 && ol < 4) || pl > 1024 || pl+ol > 2048 {
			continue
		}
		out = append(out, Sample{Prompt: p.Prompt, PromptLen: pl, OutputLen: ol})
	}
	return oversample(out, n, rng, "sharegpt")
}

// customSamples shuffles the JSONL prompts, as vLLM's custom dataset does,
// with the fixed output length.
func customSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	f, err := os.Open(d.Path)
	if err != nil {
		return nil, fmt.Errorf("open custom dataset: %w", err)
	}
	defer f.Close()
	pairs, err := parseCustomJSONL(f)
	if err != nil {
		return nil, err
	}
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	var out []Sample
	for _, p := range pairs[:min(n, len(pairs))] {
		pl, err := tc.Count(ctx, p.Prompt)
		if err != nil {
			return nil, err
		}
		out = append(out, Sample{Prompt: p.Prompt, PromptLen: pl, OutputLen: d.CustomOutputLen})
	}
	return oversample(out, n, rng, "custom")
}

// oversample repeats random samples until there are n, as vLLM's
// maybe_oversample_requests does when a file is smaller than --num-prompts.
func oversample(s []Sample, n int, rng *rand.Rand, name string) ([]Sample, error) {
	if len(s) == 0 {
		return nil, errors.New("load " + name + " dataset: no usable prompt in the file")
	}
	for len(s) < n {
		s = append(s, s[rng.IntN(len(s))])
	}
	return s, nil
}

// ShareGPTTurn is one turn of a ShareGPT conversation. A turn may also be a
// JSON string holding the object, which the hub's file has
// (inference-perf's issue 429).
type ShareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// UnmarshalJSON reads the turn's object, or a string holding it.
func (t *ShareGPTTurn) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
	}
	type plain ShareGPTTurn
	return json.Unmarshal(b, (*plain)(t))
}

// ShareGPTRecord is one conversation of a ShareGPT file.
type ShareGPTRecord struct {
	Conversations []ShareGPTTurn `json:"conversations"`
}

// EachShareGPT calls f for every record of a ShareGPT JSON array, read as
// a stream (the hub's file is 650 MB); f returns false to stop.
func EachShareGPT(r io.Reader, f func(i int, rec *ShareGPTRecord) bool) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return errors.New("parse sharegpt: want a JSON array of conversations")
	}
	for i := 0; dec.More(); i++ {
		var rec ShareGPTRecord
		if err := dec.Decode(&rec); err != nil {
			return fmt.Errorf("parse sharegpt: conversation %d: %w", i, err)
		}
		if !f(i, &rec) {
			return nil
		}
	}
	return nil
}
