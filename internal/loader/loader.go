// Package loader reads a model from its files as every real executor runs
// it: the GGUF's weights (read into memory, or mapped), its tokenizer (or a
// tokenizer.json in its place), its chat template, and a draft model for
// speculative decoding, checked against the target. The CPU and the CUDA
// executors both load through it; what either does with the weights
// (compute on this CPU, upload to a GPU) is theirs.
//
// It is the model side: it must not import the engine, an executor, the
// server, metrics, tracing, net/http, Prometheus or OpenTelemetry.
package loader

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// Config says which model to load and how.
type Config struct {
	Path string // a local GGUF file
	// Tokenizer, when set, is a tokenizer.json (or a directory holding
	// one, with its tokenizer_config.json) used instead of the GGUF's, as
	// vLLM's --tokenizer.
	Tokenizer string
	// MMap maps the file instead of reading it into (huge-page) memory;
	// a file larger than three quarters of available memory is mapped
	// anyway, with a warning.
	MMap bool
	// Draft, when set, is speculative decoding's draft model: a GGUF file
	// with the target's tokenizer, loaded as the target is.
	Draft  string
	Logger *slog.Logger
}

// Model is a model ready to serve: its weights, what the server needs of
// its tokenizer and chat template, and its limits. Close releases it.
type Model struct {
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

	file, draftFile *gguf.File
}

// Close releases the model's memory or mapping (and its draft's); call it
// once nothing reads the weights any more.
func (m *Model) Close() {
	m.file.Close()
	if m.draftFile != nil {
		m.draftFile.Close()
	}
}

// Load reads a GGUF model with its tokenizer and chat template, and its
// draft model when cfg names one. On error nothing stays open.
func Load(cfg Config) (m *Model, err error) {
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
	m = &Model{Weights: w, Vocab: &Vocab{tok}, Chat: newChat(tok, log), EOG: tok.EOG(), ContextLen: w.ContextLen,
		Name: cmp.Or(name, filepath.Base(cfg.Path)), file: gf}
	if cfg.Draft != "" {
		if err := m.loadDraft(cfg, tok, log); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// loadDraft reads the draft model and checks that it can draft for the
// target: the same tokenizer and vocabulary.
func (m *Model) loadDraft(cfg Config, tok *tokenizer.Tokenizer, log *slog.Logger) (err error) {
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
	if err := w.CanDraftFor(m.Weights); err != nil {
		return fmt.Errorf("load the draft model %s: %w", cfg.Draft, err)
	}
	m.Draft, m.DraftContextLen, m.draftFile = w, w.ContextLen, gf
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

// openModel reads the file into memory, or maps it when asked or when a
// copy would crowd out everything else.
func openModel(path string, mmap bool, log *slog.Logger) (*gguf.File, error) {
	if mmap {
		return gguf.Open(path)
	}
	if st, err := os.Stat(path); err == nil {
		if avail := MemAvailable(); tooBigToCopy(st.Size(), avail) {
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

// tooBigToCopy says whether reading a model of size bytes into memory
// would crowd out everything else (avail 0: unknown, so no).
func tooBigToCopy(size, avail int64) bool { return avail > 0 && size > avail/4*3 }
