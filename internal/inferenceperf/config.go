// Package inferenceperf is glassbox's compatibility with the Kubernetes
// serving working group's benchmark, kubernetes-sigs/inference-perf, in one
// place: its configuration files (every key of the schema read and checked,
// what glassbox cannot honour refused by name, what only changes where
// results go noted), the load they describe built as a workload.Plan (the
// stages, a saturation sweep, the data, multi-turn and agent sessions,
// request timeouts, circuit breakers, LoRA traffic splits; as inference-perf
// runs them now, or as e8e0aa99 did; recorded agent traces, otel_trace_replay,
// read into graph sessions), and a run's report files, written as
// inference-perf writes them.
//
// It builds on workload (plans and their schedule) and bench (a run's
// results); cmd wires it into bench, simulate and plan, and calibrate reads
// the reference runs' files with it. workload and bench must not import it,
// nor it the engine side or the simulator (internal/layering).
package inferenceperf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Config is a kubernetes-sigs/inference-perf configuration, every
// key of its schema: what shapes the load (load, api, server, data) is
// run; what glassbox cannot honour is refused by name, or, where it only
// concerns where results go (Prometheus queries, cloud storage), noted
// (Notes) and the run goes on. Unknown keys are errors with their line, as
// in inference-perf, whose models are strict.
type Config struct {
	Load            Load             `yaml:"load"`
	API             API              `yaml:"api"`
	Server          Server           `yaml:"server"`
	Data            Data             `yaml:"data"`
	Tokenizer       *TokenizerConfig `yaml:"tokenizer"`
	Metrics         *Metrics         `yaml:"metrics"`
	Report          Report           `yaml:"report"`
	Storage         *Storage         `yaml:"storage"`
	CircuitBreakers []CircuitBreaker `yaml:"circuit_breakers"`

	// Notes are the keys understood but not honoured here that do not
	// change the load, one sentence each, for the caller to show.
	Notes []string       `yaml:"-"`
	lines map[string]int // key path → line, for errors
}

// Load is the load block.
type Load struct {
	// Type is constant (default), poisson, concurrent, trace_replay or
	// trace_session_replay (data.type otel_trace_replay's).
	Type     string   `yaml:"type"`
	Interval *float64 `yaml:"interval"` // seconds between stages; default 1
	Stages   []Stage  `yaml:"stages"`
	Sweep    *Sweep   `yaml:"sweep"`
	Trace    *Trace   `yaml:"trace"`

	NumWorkers              *int        `yaml:"num_workers"`
	WorkerMaxConcurrency    *int        `yaml:"worker_max_concurrency"` // default 100
	WorkerMaxTCPConnections *int        `yaml:"worker_max_tcp_connections"`
	RequestTimeout          *float64    `yaml:"request_timeout"`
	BaseSeed                *int64      `yaml:"base_seed"`
	CircuitBreakers         []string    `yaml:"circuit_breakers"`
	LoRATrafficSplit        []LoRASplit `yaml:"lora_traffic_split"`
}

// Stage is one stage: rate requests per second for duration seconds, or
// (load type concurrent) num_requests at concurrency_level at once, or
// (trace_session_replay) num_sessions sessions, concurrent_sessions at
// once (0: all), session_rate a second at most, timeout seconds at most.
type Stage struct {
	Rate             float64 `yaml:"rate"`
	Duration         float64 `yaml:"duration"`
	NumRequests      *int    `yaml:"num_requests"`
	ConcurrencyLevel *int    `yaml:"concurrency_level"`

	ConcurrentSessions *int     `yaml:"concurrent_sessions"`
	SessionRate        *float64 `yaml:"session_rate"`
	NumSessions        *int     `yaml:"num_sessions"`
	Timeout            *float64 `yaml:"timeout"`
}

// Sweep is inference-perf's saturation sweep: a burst of num_requests
// finds the rate the server drains at, then num_stages stages of
// stage_duration seconds are spaced up to it.
type Sweep struct {
	Type                 string   `yaml:"type"` // linear or geometric
	NumRequests          *int     `yaml:"num_requests"`
	Timeout              *float64 `yaml:"timeout"`
	NumStages            *int     `yaml:"num_stages"`
	StageDuration        *float64 `yaml:"stage_duration"`
	SaturationPercentile *float64 `yaml:"saturation_percentile"`
}

// Trace names a request trace: timestamps and token counts.
type Trace struct {
	File   string `yaml:"file"`
	Format string `yaml:"format"` // AzurePublicDataset (default); glassbox also reads BurstGPT
}

// LoRASplit sends split of the requests to LoRA adapter name.
type LoRASplit struct {
	Name  string  `yaml:"name"`
	Split float64 `yaml:"split"`
}

// API is the api block.
type API struct {
	Type                  string            `yaml:"type"` // completion (default) or chat
	Streaming             bool              `yaml:"streaming"`
	Headers               map[string]string `yaml:"headers"`
	SLOUnit               *string           `yaml:"slo_unit"`
	SLOTPOTHeader         *string           `yaml:"slo_tpot_header"`
	SLOTTFTHeader         *string           `yaml:"slo_ttft_header"`
	ResponseFormat        *ResponseFormat   `yaml:"response_format"`
	SessionIDHeaderKey    *string           `yaml:"session_id_header_key"`
	SessionTokenHeaderKey *string           `yaml:"session_token_header_key"`
}

// ResponseFormat is api.response_format: structured output.
type ResponseFormat struct {
	Type       string  `yaml:"type"` // json_schema (default) or json_object
	Name       *string `yaml:"name"` // default structured_output
	JSONSchema JSONDoc `yaml:"json_schema"`
}

// Server is the server block.
type Server struct {
	Type      string  `yaml:"type"`
	ModelName string  `yaml:"model_name"`
	BaseURL   string  `yaml:"base_url"`
	IgnoreEOS *bool   `yaml:"ignore_eos"` // default true
	APIKey    *string `yaml:"api_key"`
	CertPath  *string `yaml:"cert_path"`
	KeyPath   *string `yaml:"key_path"`
}

// TokenizerConfig names the tokenizer inference-perf loads; glassbox counts
// with the server's (or the simulator's) instead.
type TokenizerConfig struct {
	PretrainedModelNameOrPath *string `yaml:"pretrained_model_name_or_path"`
	TrustRemoteCode           *bool   `yaml:"trust_remote_code"`
	Token                     *string `yaml:"token"`
}

// Data is the data block.
type Data struct {
	// Type is mock (default), shared_prefix, random, synthetic or shareGPT.
	Type               string        `yaml:"type"`
	Path               string        `yaml:"path"`
	CorpusFilePath     string        `yaml:"corpus_file_path"`
	InputDistribution  *Distribution `yaml:"input_distribution"`
	OutputDistribution *Distribution `yaml:"output_distribution"`
	SharedPrefix       *SharedPrefix `yaml:"shared_prefix"`
	Trace              *Trace        `yaml:"trace"`
	UseChatTemplate    bool          `yaml:"use_chat_template"`

	// ConversationReplay is data.type conversation_replay's agent
	// sessions.
	ConversationReplay *ConversationReplay `yaml:"conversation_replay"`

	// OTelTraceReplay is data.type otel_trace_replay's agent traces.
	OTelTraceReplay *OTelTraceReplay `yaml:"otel_trace_replay"`

	// Read to be refused by name: glassbox generates no multimodal
	// content and replays no Weka traces.
	Multimodal      any `yaml:"multimodal"`
	WekaTraceReplay any `yaml:"weka_trace_replay"`
	VisionArena     any `yaml:"visionarena"`
}

// Distribution is a length distribution (inference-perf's Distribution):
// normal by default, clipped to [min, max] and rounded.
type Distribution struct {
	Type       string   `yaml:"type"` // normal, skew_normal, lognormal, uniform, poisson, fixed
	Min        *int     `yaml:"min"`  // default 10
	Max        *int     `yaml:"max"`  // default 1024
	Mean       *float64 `yaml:"mean"` // default 512
	StdDev     *float64 `yaml:"std_dev"`
	Variance   *float64 `yaml:"variance"`
	Skew       *float64 `yaml:"skew"`
	TotalCount *int     `yaml:"total_count"`
}

// UnmarshalYAML reads a distribution's mapping; inference-perf's
// expression strings ("Min(100, Max(10, Normal(50, 10)))", SymPy's) are
// refused by name.
func (d *Distribution) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return fmt.Errorf("line %d: the expression distribution %q is not supported by glassbox: give a mapping {type, min, max, mean, std_dev}", n.Line, n.Value)
	}
	type plain Distribution
	return n.Decode((*plain)(d))
}

// Length is a token count given as a number or as a distribution
// (inference-perf's Union[int, Distribution]).
type Length struct {
	Value int
	Dist  *Distribution
}

// UnmarshalYAML reads a number or a distribution's mapping.
func (l *Length) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		l.Dist = &Distribution{}
		return n.Decode(l.Dist)
	}
	return n.Decode(&l.Value)
}

// Fixed is the length when it is a number.
func (l *Length) Fixed() (int, bool) { return l.Value, l != nil && l.Dist == nil }

// SharedPrefix is the shared_prefix block, with inference-perf's aliases.
type SharedPrefix struct {
	NumGroups               *int          `yaml:"num_groups"`
	NumUniqueSystemPrompts  *int          `yaml:"num_unique_system_prompts"`
	NumPromptsPerGroup      *int          `yaml:"num_prompts_per_group"`
	NumUsersPerSystemPrompt *int          `yaml:"num_users_per_system_prompt"`
	SystemPromptLen         *Length       `yaml:"system_prompt_len"` // default 100
	QuestionLen             *Length       `yaml:"question_len"`      // default 50
	OutputLen               *Length       `yaml:"output_len"`        // default 50
	QuestionDistribution    *Distribution `yaml:"question_distribution"`
	OutputDistribution      *Distribution `yaml:"output_distribution"`
	Seed                    *int64        `yaml:"seed"`
	EnableMultiTurnChat     bool          `yaml:"enable_multi_turn_chat"`
	Multimodal              any           `yaml:"multimodal"`

	// The values under the short names alone, which are all that
	// inference-perf e8e0aa99 read (Legacy).
	legacyGroups, legacyPerGroup *int
}

// Metrics is the metrics block: where inference-perf queries the
// server's metrics. glassbox scrapes the server's /metrics itself.
type Metrics struct {
	Type       string      `yaml:"type"`
	Prometheus *Prometheus `yaml:"prometheus"`
}

// Prometheus is metrics.prometheus.
type Prometheus struct {
	ScrapeInterval *int     `yaml:"scrape_interval"`
	URL            *string  `yaml:"url"`
	Filters        []string `yaml:"filters"`
	GoogleManaged  bool     `yaml:"google_managed"`
}

// Report is the report block: which of inference-perf's files to write.
type Report struct {
	RequestLifecycle LifecycleReport `yaml:"request_lifecycle"`
	Prometheus       *PromReport     `yaml:"prometheus"`
	SessionLifecycle *SessionReport  `yaml:"session_lifecycle"`
	Goodput          *Goodput        `yaml:"goodput"`
}

// LifecycleReport is report.request_lifecycle; nil flags take
// inference-perf's defaults (summary, per_stage and per_adapter on).
type LifecycleReport struct {
	Summary               *bool     `yaml:"summary"`
	PerStage              *bool     `yaml:"per_stage"`
	PerRequest            *bool     `yaml:"per_request"`
	PerAdapter            *bool     `yaml:"per_adapter"`
	PerAdapterStage       *bool     `yaml:"per_adapter_stage"`
	Percentiles           []float64 `yaml:"percentiles"`
	UseServerOutputTokens *bool     `yaml:"use_server_output_tokens"` // only true is built
	MaxErrorMessages      *int      `yaml:"max_error_messages"`
}

// PromReport is report.prometheus.
type PromReport struct {
	Summary  *bool `yaml:"summary"`
	PerStage *bool `yaml:"per_stage"`
}

// SessionReport is report.session_lifecycle (agent trace sessions).
type SessionReport struct {
	Summary    *bool `yaml:"summary"`
	PerStage   *bool `yaml:"per_stage"`
	PerSession *bool `yaml:"per_session"`
}

// Goodput is report.goodput: SLOs in seconds.
type Goodput struct {
	Constraints map[string]float64 `yaml:"constraints"`
}

// Storage is the storage block: where the reports go.
type Storage struct {
	LocalStorage         *StoragePath `yaml:"local_storage"`
	GoogleCloudStorage   *StoragePath `yaml:"google_cloud_storage"`
	SimpleStorageService *StoragePath `yaml:"simple_storage_service"`
}

// StoragePath is one storage target; the bucket fields belong to the
// cloud ones.
type StoragePath struct {
	Path             *string `yaml:"path"`
	ReportFilePrefix *string `yaml:"report_file_prefix"`
	BucketName       *string `yaml:"bucket_name"`
	EndpointURL      *string `yaml:"endpoint_url"`
	RegionName       *string `yaml:"region_name"`
	AddressingStyle  *string `yaml:"addressing_style"`
}

// CircuitBreaker stops a run when its requests' outcomes trip it.
type CircuitBreaker struct {
	Name    string `yaml:"name"`
	Metrics struct {
		Matches []string `yaml:"matches"`
		Rules   []string `yaml:"rules"`
	} `yaml:"metrics"`
	Triggers []Trigger `yaml:"triggers"`
}

// Trigger is one trigger of a circuit breaker.
type Trigger struct {
	Type       string   `yaml:"type"` // consecutive or rate_over_window
	Threshold  float64  `yaml:"threshold"`
	WindowSec  *float64 `yaml:"window_sec"`
	MinSamples *int     `yaml:"min_samples"`
}

// Read reads and checks the configuration file at path.
// Errors name the file and the key's line.
func Read(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read inference-perf config: %w", err)
	}
	c, err := parseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a configuration and checks it.
func Parse(r io.Reader) (*Config, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read inference-perf config: %w", err)
	}
	return parseConfig(raw)
}

func parseConfig(raw []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("parse inference-perf config: %w", err)
	}
	c := &Config{lines: map[string]int{}}
	k := &keyChecker{lines: c.lines}
	if err := k.walk(&root, reflect.TypeFor[Config](), ""); err != nil {
		return nil, fmt.Errorf("parse inference-perf config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse inference-perf config: %w", err)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("check inference-perf config: %w", err)
	}
	return c, nil
}
