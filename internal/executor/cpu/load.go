package cpu

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// Scheduling defaults on a CPU, where a step is slow and memory is shared
// with everything else: fewer sequences and a smaller step than on a GPU.
const (
	DefaultMaxNumSeqs          = 64
	DefaultMaxNumBatchedTokens = 2048
)

// LoadConfig says which model to load and how.
type LoadConfig struct {
	Path string // a local GGUF file
	// Tokenizer, when set, is a tokenizer.json (or a directory holding
	// one, with its tokenizer_config.json) used instead of the GGUF's, as
	// vLLM's --tokenizer.
	Tokenizer string
	// MMap maps the file instead of reading it into (huge-page) memory;
	// a file larger than three quarters of available memory is mapped
	// anyway, with a warning.
	MMap bool
	// KVDtype is the KV cache's element type (zero: fp16).
	KVDtype model.KVDtype
	// Draft, when set, is speculative decoding's draft model: a GGUF file
	// with the target's tokenizer, loaded as the target is, its K/V of
	// type DraftKVDtype.
	Draft        string
	DraftKVDtype model.KVDtype
	Logger       *slog.Logger
}

// Loaded is a model ready to serve: its weights, what the server needs of
// its tokenizer and chat template, and its limits. Start makes the
// executor once the engine's KV cache is sized.
type Loaded struct {
	Weights *model.Weights
	Vocab   *Vocab
	Chat    *Chat
	EOG     []int // tokens that end generation
	// ContextLen is the model's own context (max_position_embeddings).
	ContextLen int
	Name       string // general.name, or the file's base name

	// Draft is the draft model (nil for none) and DraftContextLen its
	// own context.
	Draft           *model.Weights
	DraftContextLen int

	kvDtype, draftKVDtype model.KVDtype
	file, draftFile       *gguf.File
	exec                  *Executor
}

// Close releases the compute threads and the model's memory or mapping;
// call it after the engine has stopped.
func (l *Loaded) Close() {
	if l.exec != nil {
		l.exec.Close()
	}
	l.file.Close()
	if l.draftFile != nil {
		l.draftFile.Close()
	}
}

// Load reads a GGUF model with its tokenizer and chat template.
func Load(cfg LoadConfig) (l *Loaded, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	gf, err := openModel(cfg.Path, cfg.MMap, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			gf.Close() // a model that failed to load releases its memory
		}
	}()
	w, err := model.Load(gf)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", cfg.Path, err)
	}
	tok, err := loadTokenizer(gf, cfg.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", cfg.Path, err)
	}
	if tok.VocabSize() > w.Vocab {
		return nil, fmt.Errorf("load %s: the tokenizer has %d tokens but the model only %d embeddings", cfg.Path, tok.VocabSize(), w.Vocab)
	}
	name, _ := gf.String("general.name")
	l = &Loaded{Weights: w, kvDtype: cfg.KVDtype, Vocab: &Vocab{tok}, Chat: newChat(tok, log), EOG: tok.EOG(), ContextLen: w.ContextLen,
		Name: cmpOr(name, filepath.Base(cfg.Path)), file: gf}
	if cfg.Draft != "" {
		if err := l.loadDraft(cfg, tok, log); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// loadDraft reads the draft model and checks that it can draft for the
// target: the same tokenizer and vocabulary.
func (l *Loaded) loadDraft(cfg LoadConfig, tok *tokenizer.Tokenizer, log *slog.Logger) (err error) {
	gf, err := openModel(cfg.Draft, cfg.MMap, log)
	if err != nil {
		return fmt.Errorf("load the draft model: %w", err)
	}
	defer func() {
		if err != nil {
			gf.Close()
		}
	}()
	w, err := model.Load(gf)
	if err != nil {
		return fmt.Errorf("load the draft model %s: %w", cfg.Draft, err)
	}
	dt, err := loadTokenizer(gf, "")
	if err != nil {
		return fmt.Errorf("load the draft model %s: %w", cfg.Draft, err)
	}
	if err := sameTokens(dt, tok); err != nil {
		return fmt.Errorf("load the draft model %s: %w", cfg.Draft, err)
	}
	if err := checkDraft(w, l.Weights); err != nil {
		return fmt.Errorf("load the draft model %s: %w", cfg.Draft, err)
	}
	l.Draft, l.DraftContextLen, l.draftKVDtype, l.draftFile = w, w.ContextLen, cfg.DraftKVDtype, gf
	return nil
}

// sameTokens reports how the draft's tokenizer differs from the target's:
// its drafts are token ids, which must mean the same text.
func sameTokens(draft, target *tokenizer.Tokenizer) error {
	if draft.VocabSize() != target.VocabSize() {
		return fmt.Errorf("its tokenizer has %d tokens, the target's %d: a draft must share the target's tokenizer", draft.VocabSize(), target.VocabSize())
	}
	for id := range target.VocabSize() {
		if a, b := draft.TokenString(id), target.TokenString(id); a != b {
			return fmt.Errorf("its token %d is %q, the target's %q: a draft must share the target's tokenizer", id, a, b)
		}
	}
	return nil
}

// KVBlocks is how many blocks of blockSize tokens the KV cache holds:
// kvBytes of them, or when kvBytes is 0 the default sizing (DefaultKVBytes
// for maxNumSeqs sequences of maxModelLen tokens).
func (l *Loaded) KVBlocks(kvBytes int64, blockSize, maxModelLen, maxNumSeqs int) int {
	perToken := l.Weights.KVBytesPerTokenOf(l.kvDtype)
	if l.Draft != nil {
		perToken += l.Draft.KVBytesPerTokenOf(l.draftKVDtype) // the draft's K/V share the blocks
	}
	if kvBytes == 0 {
		kvBytes = DefaultKVBytes(perToken, maxModelLen, maxNumSeqs, memAvailable())
	}
	return int(kvBytes / (int64(max(blockSize, 1)) * perToken))
}

// Start makes the executor, with its KV cache of numBlocks blocks; the
// engine's configuration must have been validated. Close stops it.
func (l *Loaded) Start(numBlocks, blockSize, threads int) (*Executor, error) {
	exec, err := New(l.Weights, Config{NumBlocks: numBlocks, BlockSize: blockSize, Threads: threads, KVDtype: l.kvDtype,
		Draft: l.Draft, DraftKVDtype: l.draftKVDtype})
	if err != nil {
		return nil, err
	}
	l.exec = exec
	return exec, nil
}

// Describe is one line for the start-up banner.
func (l *Loaded) Describe(threads int) string {
	w := l.Weights
	s := fmt.Sprintf("this CPU (%d threads, %s kernels): %s (%s, %d layers, %s weights, %s tokenizer, %s KV cache)",
		threads, w.Kernels(), l.Name, w.Arch, w.Config.Layers, w.Layers[0].Q.Type, l.Vocab.t.Kind(), l.kvDtype)
	if d := l.Draft; d != nil {
		s += fmt.Sprintf(", drafting with a %s of %d layers (%s weights, %s KV cache)", d.Arch, d.Config.Layers, d.Layers[0].Q.Type, l.draftKVDtype)
	}
	return s
}

// openModel reads the file into memory, or maps it when asked or when a
// copy would crowd out everything else.
func openModel(path string, mmap bool, log *slog.Logger) (*gguf.File, error) {
	if mmap {
		return gguf.Open(path)
	}
	if st, err := os.Stat(path); err == nil {
		if avail := memAvailable(); tooBigToCopy(st.Size(), avail) {
			log.Warn("the model is larger than three quarters of available memory: mapping it instead of reading it in (as --mmap; decode is slower)",
				"bytes", st.Size(), "available", avail)
			return gguf.Open(path)
		}
	}
	return gguf.ReadInMemory(path)
}

// loadTokenizer is the GGUF's tokenizer, or the tokenizer.json at path.
func loadTokenizer(gf *gguf.File, path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return tokenizer.FromGGUF(gf)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	return tokenizer.FromHFJSON(path)
}

// DefaultKVBytes sizes the KV cache when none is asked for: room for
// maxSeqs full-length sequences, but at most a quarter of the available
// memory (0: unknown) and 4 GiB, and never less than one full-length
// sequence.
func DefaultKVBytes(perToken int64, maxModelLen, maxSeqs int, available int64) int64 {
	want := perToken * int64(maxModelLen) * int64(maxSeqs)
	limit := int64(4 << 30)
	if available > 0 {
		limit = min(limit, available/4)
	}
	return max(min(want, limit), perToken*int64(maxModelLen))
}

// tooBigToCopy says whether reading a model of size bytes into memory
// would crowd out everything else (avail 0: unknown, so no).
func tooBigToCopy(size, avail int64) bool { return avail > 0 && size > avail/4*3 }

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Chat renders conversations with the model's chat template (ChatML when
// it has none, or one that does not parse), with the tokenizer's BOS and
// EOS strings as bos_token and eos_token.
type Chat struct {
	chat     *jinja.Chat
	bos, eos string
}

func newChat(tok *tokenizer.Tokenizer, log *slog.Logger) *Chat {
	c := &Chat{chat: jinja.NewChat(tok.ChatTemplate(), log)}
	if tok.BOS() >= 0 {
		c.bos = tok.TokenString(tok.BOS())
	}
	if tok.EOS() >= 0 {
		c.eos = tok.TokenString(tok.EOS())
	}
	return c
}

// Render renders msgs, with the request's tools (nil: none), and opens the
// assistant's turn.
func (c *Chat) Render(msgs []jinja.Message, tools []any) (string, error) {
	return c.chat.Render(msgs, jinja.ChatOptions{AddGenerationPrompt: true, BOS: c.bos, EOS: c.eos, Tools: tools})
}

// Template is the model's chat template, "" when it has none usable
// (requests then get ChatML).
func (c *Chat) Template() string { return c.chat.Source() }
