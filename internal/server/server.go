// Package server owns the HTTP side of glassbox: the OpenAI-compatible
// routes (/v1/completions, /v1/chat/completions with structured outputs
// and tool calls, /v1/responses with its store (input items, delete,
// cancel, background responses), /v1/embeddings, /v1/models; OpenAI's error body for
// every other route and method), vLLM's
// /tokenize and /detokenize, /health, /ready, /version and /metrics,
// /debug/engine, the profiler's /start_profile and /stop_profile, API-key and
// metrics credentials checks, and turning each HTTP request into engine
// requests and their outputs into JSON or server-sent events.
//
// Wire types, validation and the error body live in openai; this package
// holds only handlers. It talks to the engine only through Submit, Abort and
// the per-request Stream (plus Snapshot for /debug/engine), and must not
// import sched, kvcache, an executor, metrics, tracing or profiler: those are
// wired in cmd/. Trace context travels as the W3C header values in
// engine.Request, so this package needs no OpenTelemetry.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/grammar"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/openai"
)

// maxBodyBytes bounds a request body; a longer one is a 413. Prompts of a
// few hundred thousand tokens fit many times over.
const maxBodyBytes = 32 << 20

// Model is what the server needs of the served model's tokenizer.
type Model interface {
	Encode(text string) []int
	Decode(ids []int) string
	TokenBytes(id int) []byte // raw bytes of a token; nil for special tokens
	TokenString(id int) string
}

// chatEncoder is an optional capability of a Model: rendered chat prompts,
// which carry their own BOS from the template, are tokenized without adding
// special tokens (vLLM's add_special_tokens=False for chat).
type chatEncoder interface {
	EncodeChat(text string) []int
}

// encodeChat tokenizes a rendered chat prompt.
func (s *Server) encodeChat(text string) []int { return EncodeChat(s.model, text) }

// vocabSizer is an optional capability of a Model: when present, token ids
// from clients are checked against it instead of reaching the executor.
type vocabSizer interface {
	VocabSize() int
}

// Config is the server's configuration, filled from flags in cmd/.
type Config struct {
	ServedModelNames []string // --served-model-name; the first is the default
	// APIKey (--api-key), when set, is required as a bearer token on every
	// route but /health and /ready: /v1, /metrics, /version, /debug and the
	// profiler. (vLLM guards only /v1.)
	APIKey  string
	Version string
	// Dashboard serves the live page under /dashboard (its data under
	// /dashboard/api/, guarded by APIKey); nil for none.
	Dashboard http.Handler
	// Chat renders a conversation into the prompt that ends where the
	// assistant speaks: the model's chat template. Nil means ChatML.
	Chat   ChatRenderer
	Logger *slog.Logger
	// Metrics, when set, is served at /metrics.
	Metrics http.Handler
	// Profiler, when set, is driven by POST /start_profile and
	// /stop_profile; without it those routes do not exist.
	Profiler Profiler
	// Instrument, when set, wraps each route's handler (named by its path),
	// for request metrics or tracing.
	Instrument func(name string, h http.Handler) http.Handler
	// Rejected, when set, hears of every generation request refused with
	// 503, with metricspec's reason (vllm:admission_rejections_total).
	Rejected func(reason string)
	// Grammars compiles structured-output constraints over the model's
	// vocabulary (shared with the library); nil builds one from Model.
	Grammars *grammar.Cache
	// ToolParser reads tool calls out of "auto" tool choice's output
	// (toolcall's names: --tool-call-parser, or the one the chat
	// template's format calls for); "" refuses "auto" with tools.
	ToolParser string
	// Embeddings, when set, serves /v1/embeddings (an embedding model's
	// GGUF, or the simulator); nil answers it with a 400.
	Embeddings *Embeddings
	// LoRA are the adapters served as model names (--lora-modules), each
	// request naming one run with it.
	LoRA []LoRAModule
	// ResponsesStore is how many Responses API responses are kept for
	// previous_response_id, item_reference and GET /v1/responses/{id}
	// (--responses-store-size); 0 keeps none, as vLLM by default.
	ResponsesStore int
}

// LoRAModule is one adapter: the model name clients use and where it is.
type LoRAModule struct {
	Name, Path string
}

// Engine is what the server needs of the engine: one (*engine.Engine),
// or data-parallel ranks behind one API (*engine.DataParallel).
type Engine interface {
	NewGroup(id string, n int) *engine.Group
	Snapshot(ctx context.Context) (*engine.Snapshot, error)
	Closed() bool
	Config() engine.Config
	// Health is nil while the engine serves, its *engine.DeadError once
	// its executor died.
	Health() error
}

// Server serves one engine. Handlers run on net/http's goroutines; each
// request owns its engine streams and nothing else is shared but the engine.
type Server struct {
	cfg   Config
	eng   Engine
	model Model
	log   *slog.Logger
	// maxModelLen is the engine's context, against which requests are
	// resolved.
	maxModelLen int
	started     int64 // unix seconds, the models' "created"
	responses   *responseStore
	// background counts the background responses' goroutines, each
	// ended by its engine request's end.
	background sync.WaitGroup
}

// New builds a server for eng, whose requests use m's tokenizer.
func New(cfg Config, eng Engine, m Model) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Grammars == nil {
		cfg.Grammars = NewGrammars(m, eng.Config().EOS)
	}
	return &Server{cfg: cfg, eng: eng, model: m, log: cfg.Logger, maxModelLen: eng.Config().MaxModelLen, started: time.Now().Unix(),
		responses: newResponseStore(cfg.ResponsesStore)}
}

// grammarCacheSize is how many structured-output shapes stay compiled, with
// the masks their requests computed.
const grammarCacheSize = 64

// NewGrammars is the structured-output cache over m's vocabulary, whose
// sequences end with eos. A model that cannot say its vocabulary's size
// gets an empty one, and every constrained request a 400.
func NewGrammars(m Model, eos []int) *grammar.Cache {
	return grammar.NewCache(func() *grammar.Vocab {
		n := 0
		if v, ok := m.(vocabSizer); ok {
			n = v.VocabSize()
		}
		return grammar.NewVocab(n, m.TokenBytes, eos)
	}, grammarCacheSize)
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, name string, h http.HandlerFunc, public bool) {
		var handler http.Handler = h
		if !public {
			handler = s.requireKey(handler)
		}
		if s.cfg.Instrument != nil {
			handler = s.cfg.Instrument(name, handler)
		}
		mux.Handle(pattern, handler)
	}
	route("POST /v1/completions", "/v1/completions", s.handleCompletions, false)
	route("POST /v1/chat/completions", "/v1/chat/completions", s.handleChat, false)
	route("POST /v1/embeddings", "/v1/embeddings", s.handleEmbeddings, false)
	route("POST /v1/responses", "/v1/responses", s.handleResponses, false)
	route("GET /v1/responses/{id}", "/v1/responses/{id}", s.handleGetResponse, false)
	route("DELETE /v1/responses/{id}", "/v1/responses/{id}", s.handleDeleteResponse, false)
	route("POST /v1/responses/{id}/cancel", "/v1/responses/{id}/cancel", s.handleCancelResponse, false)
	route("GET /v1/responses/{id}/input_items", "/v1/responses/{id}/input_items", s.handleInputItems, false)
	route("GET /v1/models", "/v1/models", s.handleModels, false)
	route("GET /v1/models/{id...}", "/v1/models/{id}", s.handleModel, false)
	route("POST /tokenize", "/tokenize", s.handleTokenize, false)
	route("POST /detokenize", "/detokenize", s.handleDetokenize, false)
	// Probes stay open: a kubelet has no API key.
	route("GET /health", "/health", s.handleHealth, true)
	route("GET /ready", "/ready", s.handleReady, true)
	route("GET /version", "/version", s.handleVersion, false)
	route("GET /debug/engine", "/debug/engine", s.handleDebugEngine, false)
	if s.cfg.Metrics != nil {
		route("GET /metrics", "/metrics", s.cfg.Metrics.ServeHTTP, false)
		route("GET /metrics/", "/metrics", s.cfg.Metrics.ServeHTTP, false)
	}
	if s.cfg.Profiler != nil {
		route("POST /start_profile", "/start_profile", s.handleStartProfile, false)
		route("POST /stop_profile", "/stop_profile", s.handleStopProfile, false)
	}
	if d := s.cfg.Dashboard; d != nil {
		// The page and its assets hold no data; what it draws comes from
		// /dashboard/api/, behind the key like the rest.
		route("GET /dashboard", "/dashboard", d.ServeHTTP, true)
		route("GET /dashboard/", "/dashboard", d.ServeHTTP, true)
		route("GET /dashboard/api/", "/dashboard/api", d.ServeHTTP, false)
	}
	// Everything else gets OpenAI's error body rather than net/http's
	// plain text, which clients' JSON parsers choke on; the instrumentator
	// vLLM uses labels such requests "none".
	route("/", "none", func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, noRoute(mux, r)) }, false)
	return mux
}

// noRoute is the error for a request no route matched: 405 naming the
// methods the path has, or 404.
func noRoute(mux *http.ServeMux, r *http.Request) *openai.Error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		return openai.MethodNotAllowed(r.Method, r.URL.Path, allowed)
	}
	return openai.RouteNotFound(r.Method, r.URL.Path)
}

// fail writes err as an error response and logs what the server got wrong.
// A refused submission counts as an admission rejection (a dead engine's
// as a shutdown's); a request the engine failed after admitting it (an
// *outputError) does not. A dead engine's errors are logged at debug
// level: the engine logged its death once.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	dead := errors.Is(err, engine.ErrEngineDead)
	var admitted *outputError
	if s.cfg.Rejected != nil && !errors.As(err, &admitted) {
		switch {
		case errors.Is(err, engine.ErrOverloaded):
			s.cfg.Rejected(metricspec.RejectQueueFull)
		case (dead || errors.Is(err, engine.ErrClosed)) && r.Method == http.MethodPost:
			s.cfg.Rejected(metricspec.RejectShutdown)
		}
	}
	e := openai.WriteError(w, err)
	level := slog.LevelDebug
	if e.Status >= http.StatusInternalServerError && !dead {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "request failed", "path", r.URL.Path, "status", e.Status, "err", err)
}

// generationFailed logs a generation the engine failed after its response
// began; a dead engine's at debug level, as the engine logged its death
// once.
func (s *Server) generationFailed(r *http.Request, id string, err error) {
	level := slog.LevelError
	if errors.Is(err, engine.ErrEngineDead) {
		level = slog.LevelDebug
	}
	s.log.Log(r.Context(), level, "generation failed", "id", id, "err", err)
}

// writeJSON writes a 200 response.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log.DebugContext(r.Context(), "write response", "path", r.URL.Path, "err", err)
	}
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, openai.Version{Version: s.cfg.Version})
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, openai.ModelList{Object: "list", Data: s.modelCards()})
}

// handleModel serves GET /v1/models/{id} (the SDKs' models.retrieve): the
// card of one served name, or the 404 a model the server does not serve
// gets everywhere.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, c := range s.modelCards() {
		if c.ID == id {
			s.writeJSON(w, r, c)
			return
		}
	}
	s.fail(w, r, openai.ModelNotFound(id))
}

// modelCards describes every name the server answers to.
func (s *Server) modelCards() []openai.ModelCard {
	list := openai.ModelList{Data: []openai.ModelCard{}}
	for _, name := range s.cfg.ServedModelNames {
		list.Data = append(list.Data, openai.ModelCard{
			ID: name, Object: "model", Created: s.started, OwnedBy: "glassbox",
			Root: s.cfg.ServedModelNames[0], MaxModelLen: s.maxModelLen,
		})
	}
	for _, l := range s.cfg.LoRA {
		// vLLM's card of an adapter: its path as root, the base model as parent.
		list.Data = append(list.Data, openai.ModelCard{
			ID: l.Name, Object: "model", Created: s.started, OwnedBy: "glassbox",
			Root: l.Path, Parent: &s.cfg.ServedModelNames[0], MaxModelLen: s.maxModelLen,
		})
	}
	return list.Data
}

// modelNames are the names requests may give: the served model's and the
// adapters'.
func (s *Server) modelNames() []string {
	if len(s.cfg.LoRA) == 0 {
		return s.cfg.ServedModelNames
	}
	out := slices.Clone(s.cfg.ServedModelNames)
	for _, l := range s.cfg.LoRA {
		out = append(out, l.Name)
	}
	return out
}

// adapter is the LoRA adapter a model name selects, "" for the base model.
func (s *Server) adapter(model string) string {
	for _, l := range s.cfg.LoRA {
		if l.Name == model {
			return l.Name
		}
	}
	return ""
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	req, err := openai.DecodeTokenizeRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.fail(w, r, err)
		return
	}
	var ids []int
	if req.Prompt != nil {
		if req.AddSpecialTokens != nil && !*req.AddSpecialTokens {
			ids = s.encodeChat(*req.Prompt) // as the template writes: no BOS added
		} else {
			ids = s.model.Encode(*req.Prompt)
		}
	} else {
		var tools []any
		if req.Tools != nil {
			if tools, err = openai.ToolDefs(req.Tools); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		text, err := s.renderChat(req.Messages, tools)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ids = s.encodeChat(text)
	}
	resp := openai.TokenizeResponse{Count: len(ids), MaxModelLen: s.maxModelLen, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int{}
	}
	if req.ReturnTokenStrs {
		for _, id := range ids {
			resp.TokenStrs = append(resp.TokenStrs, s.model.TokenString(id))
		}
	}
	s.writeJSON(w, r, resp)
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	req, err := openai.DecodeDetokenizeRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err == nil {
		err = s.checkModel(req.Model)
	}
	if err == nil {
		err = s.checkVocab("tokens", req.Tokens)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, r, openai.DetokenizeResponse{Prompt: s.model.Decode(req.Tokens)})
}

// checkModel accepts an empty name (the default model) or a served one.
func (s *Server) checkModel(name string) error {
	if name == "" {
		return nil
	}
	if slices.Contains(s.modelNames(), name) {
		return nil
	}
	return openai.ModelNotFound(name)
}

// checkVocab rejects token ids the model does not have, when it can tell.
func (s *Server) checkVocab(param string, ids []int) error {
	v, ok := s.model.(vocabSizer)
	if !ok {
		return nil
	}
	n := v.VocabSize()
	for _, id := range ids {
		if id < 0 || id >= n {
			return openai.BadRequest(param, "token id %d is out of vocabulary (size %d)", id, n)
		}
	}
	return nil
}
