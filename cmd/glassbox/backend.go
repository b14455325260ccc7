package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/cpu"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/gguf"
	"github.com/glassbox-llm/glassbox/internal/hub"
	"github.com/glassbox-llm/glassbox/internal/jinja"
	"github.com/glassbox-llm/glassbox/internal/model"
	"github.com/glassbox-llm/glassbox/internal/openai"
	"github.com/glassbox-llm/glassbox/internal/server"
	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// backend is what differs between the simulated GPU and a real model: the
// executor, its tokenizer, and the defaults and facts it brings.
type backend struct {
	exec         engine.Executor
	model        server.Model
	chatTemplate func([]openai.ChatMessage) (string, error) // nil: ChatML
	eos          []int
	name         string // default served model name
	describe     string // for the banner

	maxNumSeqs          int // default when --max-num-seqs is unset
	maxNumBatchedTokens int
	maxModelLen         int
	numBlocks           int
	kvBytesFlag         int // --kv-cache-memory-bytes as given, 0 if unset
	cacheDtype          string

	executorInfo             map[string]string
	peakFLOPs, peakBandwidth float64

	close func() // after the engine stops; nil when there is nothing to release
}

func simBackend(f *serveFlags, _ *slog.Logger) (*backend, error) {
	exec, err := sim.New(sim.Config{Hardware: f.simHardware, Model: f.simModel, TensorParallel: f.tensorParallel, TimeScale: f.simTimeScale})
	if err != nil {
		return nil, err
	}
	info := exec.Info()
	hw, _ := sim.LookupHardware(f.simHardware)
	bigGPU := hw.MemoryBytes >= 70*(1<<30) && !strings.HasPrefix(hw.Name, "a100")
	b := &backend{
		exec: exec, model: exec.Vocab(), eos: []int{exec.Vocab().EOS()}, name: f.simModel,
		describe:   fmt.Sprintf("the simulated executor: %s on %d× %s (bf16)", info.Model, info.TensorParallel, info.Hardware),
		maxNumSeqs: map[bool]int{true: 1024, false: 256}[bigGPU], cacheDtype: "auto",
		executorInfo: map[string]string{
			"executor": info.Executor, "hardware": info.Hardware, "model": info.Model,
			"tensor_parallel_size": strconv.Itoa(info.TensorParallel),
		},
		peakFLOPs: info.PeakFLOPs, peakBandwidth: info.MemBandwidth,
	}
	if err := b.parseLimits(f, map[bool]int{true: 8192, false: 2048}[bigGPU], info.MaxModelLen); err != nil {
		return nil, err
	}
	if f.gpuMemoryUtil <= 0 || f.gpuMemoryUtil > 1 {
		return nil, fmt.Errorf("--gpu-memory-utilization must be in (0, 1], got %v", f.gpuMemoryUtil)
	}
	if b.numBlocks, err = exec.KVCacheBlocks(f.gpuMemoryUtil, int64(b.kvBytesFlag), f.blockSize); err != nil {
		return nil, err
	}
	return b, nil
}

// parseLimits reads the flags both backends size themselves by, with the
// backend's defaults for the token budget and the context.
func (b *backend) parseLimits(f *serveFlags, defBatched, defModelLen int) error {
	var err error
	if b.maxNumBatchedTokens, err = parseCount(f.maxNumBatchedTokens, defBatched); err != nil {
		return fmt.Errorf("--max-num-batched-tokens: %w", err)
	}
	if b.maxModelLen, err = parseCount(f.maxModelLen, defModelLen); err != nil {
		return fmt.Errorf("--max-model-len: %w", err)
	}
	if b.kvBytesFlag, err = parseCount(f.kvCacheMemoryBytes, 0); err != nil {
		return fmt.Errorf("--kv-cache-memory-bytes: %w", err)
	}
	if f.blockSize < 1 {
		return fmt.Errorf("--block-size must be at least 1, got %d", f.blockSize)
	}
	return nil
}

// cpuBackend loads a GGUF model for the CPU executor: read into memory, or
// with --mmap mapped, for the life of the process.
func cpuBackend(f *serveFlags, log *slog.Logger) (b *backend, err error) {
	path, err := resolveModel(f.model, os.Stderr)
	if err != nil {
		return nil, err
	}
	open := gguf.ReadInMemory
	if f.mmap {
		open = gguf.Open
	} else if st, err := os.Stat(path); err == nil {
		if avail := memAvailable(); tooBigToCopy(st.Size(), avail) {
			log.Warn("the model is larger than three quarters of available memory: mapping it instead of reading it in (as --mmap; decode is slower)",
				"bytes", st.Size(), "available", avail)
			open = gguf.Open
		}
	}
	gf, err := open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			gf.Close() // a model that failed to load releases its mapping
		}
	}()
	w, err := model.Load(gf)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	tok, err := tokenizer.FromGGUF(gf)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if tok.VocabSize() > w.Vocab {
		return nil, fmt.Errorf("load %s: the tokenizer has %d tokens but the model only %d embeddings", path, tok.VocabSize(), w.Vocab)
	}
	b = &backend{
		model: cpuModel{tok}, eos: tok.EOG(), name: f.model, cacheDtype: "float32", maxNumSeqs: 64,
		executorInfo: map[string]string{"executor": "cpu", "hardware": "cpu", "model": w.Arch, "tensor_parallel_size": "1"},
	}
	if err := b.parseLimits(f, 2048, w.ContextLen); err != nil {
		return nil, err
	}
	maxSeqs := f.maxNumSeqs
	if maxSeqs == 0 {
		maxSeqs = b.maxNumSeqs
	}
	perToken := w.KVBytesPerToken()
	kvBytes := int64(b.kvBytesFlag)
	if kvBytes == 0 {
		kvBytes = defaultCPUKVBytes(perToken, b.maxModelLen, maxSeqs)
	}
	b.numBlocks = int(kvBytes / (int64(f.blockSize) * perToken))
	if b.numBlocks*f.blockSize < b.maxModelLen {
		return nil, fmt.Errorf("the KV cache (%d bytes, %d tokens) cannot hold one sequence of --max-model-len %d: raise --kv-cache-memory-bytes or lower --max-model-len",
			kvBytes, b.numBlocks*f.blockSize, b.maxModelLen)
	}
	threads := f.threads
	exec, err := cpu.New(w, cpu.Config{NumBlocks: b.numBlocks, BlockSize: f.blockSize, Threads: threads, EOG: tok.EOG()})
	if err != nil {
		return nil, err
	}
	b.exec = exec
	b.close = func() { exec.Close(); gf.Close() }
	chat := jinja.NewChat(tok.ChatTemplate(), log)
	b.chatTemplate = chatRenderer(chat, tok)
	name, _ := gf.String("general.name")
	b.describe = fmt.Sprintf("this CPU (%d threads): %s (%s, %d layers, %s weights, %s tokenizer)",
		threads, orDefault(name, filepath.Base(path)), w.Arch, w.Config.Layers, w.Layers[0].Q.Type, tok.Kind())
	return b, nil
}

// defaultCPUKVBytes sizes the KV cache when --kv-cache-memory-bytes is
// unset: room for max-num-seqs full-length sequences, but at most a quarter
// of the memory available now and at most 4 GiB.
func defaultCPUKVBytes(perToken int64, maxModelLen, maxSeqs int) int64 {
	want := perToken * int64(maxModelLen) * int64(maxSeqs)
	limit := int64(4 << 30)
	if avail := memAvailable(); avail > 0 {
		limit = min(limit, avail/4)
	}
	return max(min(want, limit), perToken*int64(maxModelLen))
}

// tooBigToCopy says whether reading a model of size bytes into memory
// would crowd out everything else (avail 0: unknown, so no).
func tooBigToCopy(size, avail int64) bool { return avail > 0 && size > avail/4*3 }

// memAvailable reads MemAvailable from /proc/meminfo, or 0.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuModel adapts the GGUF tokenizer to what the server needs: completion
// prompts get the model's BOS and may contain special tokens; chat prompts
// come from the template, which writes its own BOS.
type cpuModel struct{ t *tokenizer.Tokenizer }

func (m cpuModel) Encode(text string) []int     { return m.t.Encode(text, true, true) }
func (m cpuModel) EncodeChat(text string) []int { return m.t.Encode(text, false, true) }
func (m cpuModel) Decode(ids []int) string      { return m.t.Decode(ids, true) }
func (m cpuModel) TokenString(id int) string    { return m.t.TokenString(id) }
func (m cpuModel) EOS() int                     { return m.t.EOS() }
func (m cpuModel) VocabSize() int               { return m.t.VocabSize() }

// TokenBytes hides control tokens from generated text, as vLLM's
// skip_special_tokens does.
func (m cpuModel) TokenBytes(id int) []byte {
	if m.t.IsSpecial(id) {
		return nil
	}
	return m.t.TokenBytes(id)
}

func chatRenderer(chat *jinja.Chat, tok *tokenizer.Tokenizer) func([]openai.ChatMessage) (string, error) {
	var bos, eos string
	if tok.BOS() >= 0 {
		bos = tok.TokenString(tok.BOS())
	}
	if tok.EOS() >= 0 {
		eos = tok.TokenString(tok.EOS())
	}
	return func(msgs []openai.ChatMessage) (string, error) {
		ms := make([]jinja.Message, len(msgs))
		for i, m := range msgs {
			ms[i] = jinja.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		}
		return chat.Render(ms, jinja.ChatOptions{AddGenerationPrompt: true, BOS: bos, EOS: eos})
	}
}

// resolveModel turns --model into a local path, downloading an hf://
// reference into the cache first ($HF_HOME-style: $GLASSBOX_CACHE, else the
// user cache directory; $HF_ENDPOINT and $HF_TOKEN as the hub clients use).
func resolveModel(arg string, progress io.Writer) (string, error) {
	if !strings.HasPrefix(arg, hub.Prefix) {
		return arg, nil
	}
	ref, err := hub.ParseRef(arg)
	if err != nil {
		return "", err
	}
	dir := os.Getenv("GLASSBOX_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find a cache directory for %s: %w (set GLASSBOX_CACHE)", arg, err)
		}
		dir = filepath.Join(base, "glassbox")
	}
	c := hub.Config{BaseURL: os.Getenv("HF_ENDPOINT"), CacheDir: filepath.Join(dir, "hf"), Progress: progress, Token: os.Getenv("HF_TOKEN")}
	return c.Fetch(context.Background(), ref)
}
