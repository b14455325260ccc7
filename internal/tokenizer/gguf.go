package tokenizer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// FromGGUF builds the tokenizer a model file describes in its tokenizer.ggml.*
// metadata, with llama.cpp's defaults and rules: tokenizer.ggml.model
// "llama" is SentencePiece BPE, "gpt2" byte-level BPE with the
// pre-tokenizer named by tokenizer.ggml.pre. Metadata of the wrong type or
// length is an error, never a panic.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	t, err := fromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	return t, nil
}

func fromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return nil, errors.New("tokenizer.ggml.model is missing or not a string")
	}
	tokens, err := array[string](f, "tokenizer.ggml.tokens", -1)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errors.New("tokenizer.ggml.tokens is missing or empty")
	}
	if len(tokens) > 1<<30 {
		return nil, fmt.Errorf("tokenizer.ggml.tokens has %d entries, too many", len(tokens))
	}
	n := len(tokens)
	t := &Tokenizer{tokens: tokens, bos: -1, eos: -1, eot: -1, eom: -1, unk: -1}
	if t.scores, err = array[float32](f, "tokenizer.ggml.scores", n); err != nil {
		return nil, err
	}
	types, err := array[int32](f, "tokenizer.ggml.token_type", n)
	if err != nil {
		return nil, err
	}
	t.attrs = make([]attr, n)
	t.ids = make(map[string]int32, n)
	for id, tok := range tokens {
		t.attrs[id] = attrNormal
		if types != nil {
			t.attrs[id] = attrOfType(types[id])
		}
		t.ids[tok] = int32(id)
	}

	switch model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addBOS, t.addSpacePrefix = true, true
	case "gpt2":
		t.kind = kindBPE
		t.bos, t.eos = 11, 11
		if err := t.loadGGUFMerges(f); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("tokenizer model %q is not supported (llama and gpt2 are)", model)
	}
	t.readSpecialIDs(f)
	t.byteTokens = spmByteTokens(t.ids, t.unk)
	if b, ok := boolKV(f, "tokenizer.ggml.add_space_prefix"); ok {
		t.addSpacePrefix = b
	}
	if b, ok := boolKV(f, "tokenizer.ggml.add_bos_token"); ok {
		t.addBOS = b
	}
	if b, ok := boolKV(f, "tokenizer.ggml.add_eos_token"); ok {
		t.addEOS = b
	}
	t.chatTemplate, _ = f.String("tokenizer.chat_template")
	t.detectEOG(true)
	if name, _ := f.String("general.name"); strings.Contains(strings.ToLower(name), "phi-3") || strings.Contains(strings.ToLower(name), "phi3") {
		t.phi3Strip()
	}
	t.finish()
	return t, nil
}

// loadGGUFMerges reads tokenizer.ggml.merges ("a b" strings, rank = index)
// and the pre-tokenizer.
func (t *Tokenizer) loadGGUFMerges(f *gguf.File) error {
	merges, err := array[string](f, "tokenizer.ggml.merges", -1)
	if err != nil {
		return err
	}
	if merges == nil {
		return errors.New("tokenizer.ggml.merges is missing")
	}
	pre, _ := f.String("tokenizer.ggml.pre")
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		// The first character may itself be a space (llama.cpp searches
		// from index 1).
		if j := strings.IndexByte(m[min(1, len(m)):], ' '); j >= 0 {
			j += min(1, len(m))
			pairs[i] = [2]string{m[:j], m[j+1:]}
		}
	}
	return t.initBPE(pre, pairs)
}

// initBPE sets up byte-level BPE from merge pairs in rank order. A merge
// whose parts or result are not in the vocabulary can never apply and is
// dropped.
func (t *Tokenizer) initBPE(pre string, pairs [][2]string) error {
	p, ignoreMerges, err := preTokenizerFor(pre)
	if err != nil {
		return err
	}
	m := &bpeModel{pre: p, ignoreMerges: ignoreMerges, bl: newByteLevel(), merges: make(map[uint64]merge, len(pairs))}
	if p.name == "llama3" {
		t.addBOS = true
	}
	for rank, pr := range pairs {
		a, okA := t.ids[pr[0]]
		b, okB := t.ids[pr[1]]
		c, okC := t.ids[pr[0]+pr[1]]
		if !okA || !okB || !okC {
			continue
		}
		k := pairKey(a, b)
		if _, dup := m.merges[k]; !dup {
			m.merges[k] = merge{rank: int32(rank), id: c}
		}
	}
	for b := range 256 {
		m.byteToken[b] = bpeNoToken
		if id, ok := t.ids[string(m.bl.char[b])]; ok {
			m.byteToken[b] = id
		}
	}
	t.bpe = m
	return nil
}

// readSpecialIDs applies the tokenizer.ggml.*_token_id keys; an id out of
// range keeps the default, as llama.cpp does (with a warning there).
func (t *Tokenizer) readSpecialIDs(f *gguf.File) {
	for _, k := range []struct {
		key string
		dst *int
	}{
		{"tokenizer.ggml.bos_token_id", &t.bos},
		{"tokenizer.ggml.eos_token_id", &t.eos},
		{"tokenizer.ggml.eot_token_id", &t.eot},
		{"tokenizer.ggml.eom_token_id", &t.eom},
		{"tokenizer.ggml.unknown_token_id", &t.unk},
	} {
		if v, ok := f.Uint(k.key); ok && v < uint64(len(t.tokens)) {
			*k.dst = int(v)
		}
	}
	for _, p := range []*int{&t.bos, &t.eos, &t.unk} {
		if !t.valid(*p) {
			*p = -1
		}
	}
}

// Texts by which llama.cpp recognises end-of-turn and end-of-generation
// tokens that the metadata does not name.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
		// FIM pad, repo and file-separator tokens end generation too.
		"<|fim_pad|>", "<fim-pad>", "<PAD>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<|file_sep|>"}
	fimTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>", "<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>",
		"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"}
)

// detectEOG finds EOT and EOM by text when the metadata does not name them
// and builds the end-of-generation set. With force, the tokens found become
// control tokens, as llama.cpp forces them for GGUF files whose converter
// left them normal; a tokenizer.json is taken as it says.
func (t *Tokenizer) detectEOG(force bool) {
	control := func(id int32) {
		if force {
			t.attrs[id] = t.attrs[id]&(attrLStrip|attrRStrip) | attrControl
		}
	}
	if t.eot < 0 {
		for _, s := range eotTexts {
			if id, ok := t.ids[s]; ok {
				t.eot = int(id)
				control(id)
				break
			}
		}
	}
	if id, ok := t.ids["<|eom_id|>"]; ok && t.eom < 0 {
		t.eom = int(id)
	}
	for _, s := range fimTexts {
		if id, ok := t.ids[s]; ok {
			control(id)
		}
	}
	t.eog = t.eog[:0]
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok {
			t.eog = append(t.eog, int(id))
			control(id)
		}
	}
	for _, id := range []int{t.eos, t.eot, t.eom} {
		if id >= 0 {
			t.eog = append(t.eog, id)
		}
	}
}

// phi3Strip sets the strip flags llama.cpp gives Phi-3's special tokens:
// whitespace after them is eaten, except after <unk>, <s> and <|endoftext|>.
func (t *Tokenizer) phi3Strip() {
	for id, a := range t.attrs {
		if a.has(attrControl | attrUserDefined | attrUnknown) {
			t.attrs[id] |= attrRStrip
		}
	}
	if id, ok := t.ids["</s>"]; ok {
		t.attrs[id] |= attrRStrip
	}
	for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
		if id, ok := t.ids[s]; ok {
			t.attrs[id] &^= attrRStrip
		}
	}
}

// array returns the metadata array key as []T, nil when absent; with n >= 0
// its length must be n.
func array[T any](f *gguf.File, key string, n int) ([]T, error) {
	kv, ok := f.Get(key)
	if !ok {
		return nil, nil
	}
	v, ok := kv.Value.([]T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("%s is %s, not an array of %T", key, describe(kv), zero)
	}
	if n >= 0 && len(v) != n {
		return nil, fmt.Errorf("%s has %d entries for %d tokens", key, len(v), n)
	}
	return v, nil
}

func describe(kv gguf.KV) string {
	if kv.Type == gguf.TypeArray {
		return "an array of " + kv.Elem.String()
	}
	return "a " + kv.Type.String()
}

func boolKV(f *gguf.File, key string) (bool, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return false, false
	}
	b, ok := kv.Value.(bool)
	return b, ok
}
