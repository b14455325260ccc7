package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// FromHFJSON loads a Hugging Face tokenizer.json holding a byte-level BPE
// model (Llama 3, Qwen 2/3, GPT-2), with its added tokens and, when a
// tokenizer_config.json sits beside it, the BOS/EOS tokens and chat template
// from there. It shares the BPE core with FromGGUF: a model's GGUF and its
// tokenizer.json give the same ids. Added tokens marked special behave as
// GGUF control tokens, the others as user-defined tokens; their
// single_word and normalized flags are not supported (no Llama 3 or Qwen
// token sets them), lstrip and rstrip are. The pre-tokenizer must be one of
// the Split regexes this package has scanners for, or GPT-2's ByteLevel.
func FromHFJSON(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	var cfg hfConfig
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "tokenizer_config.json")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("load tokenizer %s: tokenizer_config.json: %w", path, err)
		}
	}
	t, err := parseHFJSON(data, &cfg)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

type hfFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		LStrip  bool   `json:"lstrip"`
		RStrip  bool   `json:"rstrip"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	PostProcessor *hfComponent `json:"post_processor"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		IgnoreMerges bool            `json:"ignore_merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
	} `json:"model"`
}

// hfComponent is a normalizer, pre-tokenizer or post-processor: only the
// fields the supported ones use.
type hfComponent struct {
	Type           string         `json:"type"`
	Pretokenizers  []*hfComponent `json:"pretokenizers"`
	Processors     []*hfComponent `json:"processors"`
	Normalizers    []*hfComponent `json:"normalizers"`
	Pattern        struct{ Regex, String string }
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       bool   `json:"use_regex"`
	Single         []struct {
		SpecialToken *struct{ ID string } `json:"SpecialToken"`
	} `json:"single"`
}

// hfConfig is the part of tokenizer_config.json a tokenizer needs.
type hfConfig struct {
	BOS          hfTokenName     `json:"bos_token"`
	EOS          hfTokenName     `json:"eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// hfTokenName is a token given by its text, as a string or an object with
// "content" (or null).
type hfTokenName string

func (n *hfTokenName) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = hfTokenName(s)
		return nil
	}
	var o struct{ Content string }
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*n = hfTokenName(o.Content)
	return nil
}

// The Split regexes this package has scanners for.
const (
	hfLlama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	hfQwen2Regex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func parseHFJSON(data []byte, cfg *hfConfig) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (BPE is)", f.Model.Type)
	}
	if f.Model.ByteFallback {
		return nil, errors.New("byte_fallback BPE is not supported")
	}
	pre, err := hfPreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{kind: kindBPE, bos: -1, eos: -1, eot: -1, eom: -1, unk: -1}
	if err := t.hfVocab(&f); err != nil {
		return nil, err
	}
	pairs, err := hfMerges(f.Model.Merges)
	if err != nil {
		return nil, err
	}
	if err := t.initBPE(pre, pairs); err != nil {
		return nil, err
	}
	t.bpe.ignoreMerges = f.Model.IgnoreMerges
	t.addBOS = false
	if err := t.hfNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	t.hfPostProcessor(f.PostProcessor)
	if f.Model.UnkToken != nil {
		t.unk = t.idOr(*f.Model.UnkToken, -1)
	}
	t.bos = t.idOr(string(cfg.BOS), t.bos)
	t.eos = t.idOr(string(cfg.EOS), -1)
	t.chatTemplate = hfChatTemplate(cfg.ChatTemplate)
	t.detectEOG(false)
	t.finish()
	return t, nil
}

// hfVocab fills the token table from the model's vocab and the added
// tokens. Ids that neither names are unused slots.
func (t *Tokenizer) hfVocab(f *hfFile) error {
	n := 0
	for _, id := range f.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, a.ID+1)
	}
	if n == 0 || n > 1<<24 {
		return fmt.Errorf("vocabulary of %d tokens", n)
	}
	t.tokens = make([]string, n)
	t.attrs = make([]attr, n)
	for i := range t.attrs {
		t.attrs[i] = attrUnused
	}
	t.ids = make(map[string]int32, n)
	for s, id := range f.Model.Vocab {
		if id < 0 {
			return fmt.Errorf("token %q has id %d", s, id)
		}
		t.tokens[id], t.attrs[id] = s, attrNormal
		t.ids[s] = int32(id)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.Content == "" {
			return fmt.Errorf("added token %q has id %d", a.Content, a.ID)
		}
		at := attrUserDefined
		if a.Special {
			at = attrControl
		}
		if a.LStrip {
			at |= attrLStrip
		}
		if a.RStrip {
			at |= attrRStrip
		}
		t.tokens[a.ID], t.attrs[a.ID] = a.Content, at
		t.ids[a.Content] = int32(a.ID)
	}
	return nil
}

// hfMerges reads merges stored as "a b" strings or as ["a", "b"] pairs.
func hfMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("merge %d %q has no space", i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// hfPreTokenizer maps a supported pre_tokenizer to a GGUF pre name.
func hfPreTokenizer(c *hfComponent) (string, error) {
	switch {
	case c == nil:
		return "", errors.New("no pre_tokenizer")
	case c.Type == "ByteLevel" && c.UseRegex && !c.AddPrefixSpace:
		return "gpt2", nil
	case c.Type == "Sequence" && len(c.Pretokenizers) == 2:
		s, bl := c.Pretokenizers[0], c.Pretokenizers[1]
		if s == nil || bl == nil || s.Type != "Split" || s.Behavior != "Isolated" || s.Invert || bl.Type != "ByteLevel" || bl.UseRegex || bl.AddPrefixSpace {
			break
		}
		switch s.Pattern.Regex {
		case hfLlama3Regex:
			return "llama3", nil
		case hfQwen2Regex:
			return "qwen2", nil
		}
		return "", fmt.Errorf("pre_tokenizer regex %q is not supported", s.Pattern.Regex)
	}
	return "", fmt.Errorf("pre_tokenizer %q is not supported", c.Type)
}

func (t *Tokenizer) hfNormalizer(c *hfComponent) error {
	switch {
	case c == nil:
	case c.Type == "NFC":
		t.normalize = norm.NFC.String
	case c.Type == "Sequence" && len(c.Normalizers) == 0:
	default:
		return fmt.Errorf("normalizer %q is not supported", c.Type)
	}
	return nil
}

// hfPostProcessor takes BOS from a TemplateProcessing that starts with a
// special token (Llama 3.1's <|begin_of_text|>); ByteLevel adds nothing.
func (t *Tokenizer) hfPostProcessor(c *hfComponent) {
	if c == nil {
		return
	}
	for _, p := range c.Processors {
		t.hfPostProcessor(p)
	}
	if c.Type == "TemplateProcessing" && len(c.Single) > 0 && c.Single[0].SpecialToken != nil {
		if id, ok := t.ids[c.Single[0].SpecialToken.ID]; ok {
			t.bos, t.addBOS = int(id), true
		}
	}
}

func (t *Tokenizer) idOr(text string, def int) int {
	if id, ok := t.ids[text]; ok && text != "" {
		return int(id)
	}
	return def
}

// hfChatTemplate reads chat_template: a string, or a list of named
// templates of which "default" (else the first) is taken.
func hfChatTemplate(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var named []struct{ Name, Template string }
	if json.Unmarshal(raw, &named) != nil || len(named) == 0 {
		return ""
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template
		}
	}
	return named[0].Template
}
