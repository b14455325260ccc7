package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// InferencePerf is a kubernetes-sigs/inference-perf configuration, every
// key of its schema: what shapes the load (load, api, server, data) is
// run; what glassbox cannot honour is refused by name, or, where it only
// concerns where results go (Prometheus queries, cloud storage), noted
// (Notes) and the run goes on. Unknown keys are errors with their line, as
// in inference-perf, whose models are strict.
type InferencePerf struct {
	Load            IPLoad             `yaml:"load"`
	API             IPAPI              `yaml:"api"`
	Server          IPServer           `yaml:"server"`
	Data            IPData             `yaml:"data"`
	Tokenizer       *IPTokenizer       `yaml:"tokenizer"`
	Metrics         *IPMetrics         `yaml:"metrics"`
	Report          IPReport           `yaml:"report"`
	Storage         *IPStorage         `yaml:"storage"`
	CircuitBreakers []IPCircuitBreaker `yaml:"circuit_breakers"`

	// Notes are the keys understood but not honoured here that do not
	// change the load, one sentence each, for the caller to show.
	Notes []string       `yaml:"-"`
	lines map[string]int // key path → line, for errors
}

// IPLoad is the load block.
type IPLoad struct {
	// Type is constant (default), poisson, concurrent or trace_replay.
	Type     string    `yaml:"type"`
	Interval *float64  `yaml:"interval"` // seconds between stages; default 1
	Stages   []IPStage `yaml:"stages"`
	Sweep    *IPSweep  `yaml:"sweep"`
	Trace    *IPTrace  `yaml:"trace"`

	NumWorkers              *int          `yaml:"num_workers"`
	WorkerMaxConcurrency    *int          `yaml:"worker_max_concurrency"` // default 100
	WorkerMaxTCPConnections *int          `yaml:"worker_max_tcp_connections"`
	RequestTimeout          *float64      `yaml:"request_timeout"`
	BaseSeed                *int64        `yaml:"base_seed"`
	CircuitBreakers         []string      `yaml:"circuit_breakers"`
	LoRATrafficSplit        []IPLoRASplit `yaml:"lora_traffic_split"`
}

// IPStage is one stage: rate requests per second for duration seconds, or
// (load type concurrent) num_requests at concurrency_level at once.
// trace_session_replay's fields are read to be refused.
type IPStage struct {
	Rate             float64 `yaml:"rate"`
	Duration         float64 `yaml:"duration"`
	NumRequests      *int    `yaml:"num_requests"`
	ConcurrencyLevel *int    `yaml:"concurrency_level"`

	ConcurrentSessions *int     `yaml:"concurrent_sessions"`
	SessionRate        *float64 `yaml:"session_rate"`
	NumSessions        *int     `yaml:"num_sessions"`
	Timeout            *float64 `yaml:"timeout"`
}

// IPSweep is inference-perf's saturation sweep: a burst of num_requests
// finds the rate the server drains at, then num_stages stages of
// stage_duration seconds are spaced up to it.
type IPSweep struct {
	Type                 string   `yaml:"type"` // linear or geometric
	NumRequests          *int     `yaml:"num_requests"`
	Timeout              *float64 `yaml:"timeout"`
	NumStages            *int     `yaml:"num_stages"`
	StageDuration        *float64 `yaml:"stage_duration"`
	SaturationPercentile *float64 `yaml:"saturation_percentile"`
}

// IPTrace names a request trace: timestamps and token counts.
type IPTrace struct {
	File   string `yaml:"file"`
	Format string `yaml:"format"` // AzurePublicDataset (default); glassbox also reads BurstGPT
}

// IPLoRASplit sends split of the requests to LoRA adapter name.
type IPLoRASplit struct {
	Name  string  `yaml:"name"`
	Split float64 `yaml:"split"`
}

// IPAPI is the api block.
type IPAPI struct {
	Type                  string            `yaml:"type"` // completion (default) or chat
	Streaming             bool              `yaml:"streaming"`
	Headers               map[string]string `yaml:"headers"`
	SLOUnit               *string           `yaml:"slo_unit"`
	SLOTPOTHeader         *string           `yaml:"slo_tpot_header"`
	SLOTTFTHeader         *string           `yaml:"slo_ttft_header"`
	ResponseFormat        *IPResponseFormat `yaml:"response_format"`
	SessionIDHeaderKey    *string           `yaml:"session_id_header_key"`
	SessionTokenHeaderKey *string           `yaml:"session_token_header_key"`
}

// IPResponseFormat is api.response_format: structured output.
type IPResponseFormat struct {
	Type       string  `yaml:"type"` // json_schema (default) or json_object
	Name       *string `yaml:"name"` // default structured_output
	JSONSchema JSONDoc `yaml:"json_schema"`
}

// IPServer is the server block.
type IPServer struct {
	Type      string  `yaml:"type"`
	ModelName string  `yaml:"model_name"`
	BaseURL   string  `yaml:"base_url"`
	IgnoreEOS *bool   `yaml:"ignore_eos"` // default true
	APIKey    *string `yaml:"api_key"`
	CertPath  *string `yaml:"cert_path"`
	KeyPath   *string `yaml:"key_path"`
}

// IPTokenizer names the tokenizer inference-perf loads; glassbox counts
// with the server's (or the simulator's) instead.
type IPTokenizer struct {
	PretrainedModelNameOrPath *string `yaml:"pretrained_model_name_or_path"`
	TrustRemoteCode           *bool   `yaml:"trust_remote_code"`
	Token                     *string `yaml:"token"`
}

// IPData is the data block.
type IPData struct {
	// Type is mock (default), shared_prefix, random, synthetic or shareGPT.
	Type               string          `yaml:"type"`
	Path               string          `yaml:"path"`
	CorpusFilePath     string          `yaml:"corpus_file_path"`
	InputDistribution  *IPDistribution `yaml:"input_distribution"`
	OutputDistribution *IPDistribution `yaml:"output_distribution"`
	SharedPrefix       *IPSharedPrefix `yaml:"shared_prefix"`
	Trace              *IPTrace        `yaml:"trace"`
	UseChatTemplate    bool            `yaml:"use_chat_template"`

	// ConversationReplay is data.type conversation_replay's agent
	// sessions.
	ConversationReplay *IPConversationReplay `yaml:"conversation_replay"`

	// Read to be refused by name: glassbox generates no multimodal
	// content and replays no agent traces.
	Multimodal      any `yaml:"multimodal"`
	OTelTraceReplay any `yaml:"otel_trace_replay"`
	WekaTraceReplay any `yaml:"weka_trace_replay"`
	VisionArena     any `yaml:"visionarena"`
}

// IPDistribution is a length distribution (inference-perf's Distribution):
// normal by default, clipped to [min, max] and rounded.
type IPDistribution struct {
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
func (d *IPDistribution) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return fmt.Errorf("line %d: the expression distribution %q is not supported by glassbox: give a mapping {type, min, max, mean, std_dev}", n.Line, n.Value)
	}
	type plain IPDistribution
	return n.Decode((*plain)(d))
}

// Length is a token count given as a number or as a distribution
// (inference-perf's Union[int, Distribution]).
type Length struct {
	Value int
	Dist  *IPDistribution
}

// UnmarshalYAML reads a number or a distribution's mapping.
func (l *Length) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		l.Dist = &IPDistribution{}
		return n.Decode(l.Dist)
	}
	return n.Decode(&l.Value)
}

// Fixed is the length when it is a number.
func (l *Length) Fixed() (int, bool) { return l.Value, l != nil && l.Dist == nil }

// IPSharedPrefix is the shared_prefix block, with inference-perf's aliases.
type IPSharedPrefix struct {
	NumGroups               *int            `yaml:"num_groups"`
	NumUniqueSystemPrompts  *int            `yaml:"num_unique_system_prompts"`
	NumPromptsPerGroup      *int            `yaml:"num_prompts_per_group"`
	NumUsersPerSystemPrompt *int            `yaml:"num_users_per_system_prompt"`
	SystemPromptLen         *Length         `yaml:"system_prompt_len"` // default 100
	QuestionLen             *Length         `yaml:"question_len"`      // default 50
	OutputLen               *Length         `yaml:"output_len"`        // default 50
	QuestionDistribution    *IPDistribution `yaml:"question_distribution"`
	OutputDistribution      *IPDistribution `yaml:"output_distribution"`
	Seed                    *int64          `yaml:"seed"`
	EnableMultiTurnChat     bool            `yaml:"enable_multi_turn_chat"`
	Multimodal              any             `yaml:"multimodal"`

	// The values under the short names alone, which are all that
	// inference-perf e8e0aa99 read (Legacy).
	legacyGroups, legacyPerGroup *int
}

// IPMetrics is the metrics block: where inference-perf queries the
// server's metrics. glassbox scrapes the server's /metrics itself.
type IPMetrics struct {
	Type       string        `yaml:"type"`
	Prometheus *IPPrometheus `yaml:"prometheus"`
}

// IPPrometheus is metrics.prometheus.
type IPPrometheus struct {
	ScrapeInterval *int     `yaml:"scrape_interval"`
	URL            *string  `yaml:"url"`
	Filters        []string `yaml:"filters"`
	GoogleManaged  bool     `yaml:"google_managed"`
}

// IPReport is the report block: which of inference-perf's files to write.
type IPReport struct {
	RequestLifecycle IPLifecycleReport `yaml:"request_lifecycle"`
	Prometheus       *IPPromReport     `yaml:"prometheus"`
	SessionLifecycle *IPSessionReport  `yaml:"session_lifecycle"`
	Goodput          *IPGoodput        `yaml:"goodput"`
}

// IPLifecycleReport is report.request_lifecycle; nil flags take
// inference-perf's defaults (summary, per_stage and per_adapter on).
type IPLifecycleReport struct {
	Summary               *bool     `yaml:"summary"`
	PerStage              *bool     `yaml:"per_stage"`
	PerRequest            *bool     `yaml:"per_request"`
	PerAdapter            *bool     `yaml:"per_adapter"`
	PerAdapterStage       *bool     `yaml:"per_adapter_stage"`
	Percentiles           []float64 `yaml:"percentiles"`
	UseServerOutputTokens *bool     `yaml:"use_server_output_tokens"` // only true is built
	MaxErrorMessages      *int      `yaml:"max_error_messages"`
}

// IPPromReport is report.prometheus.
type IPPromReport struct {
	Summary  *bool `yaml:"summary"`
	PerStage *bool `yaml:"per_stage"`
}

// IPSessionReport is report.session_lifecycle (agent trace sessions).
type IPSessionReport struct {
	Summary    *bool `yaml:"summary"`
	PerStage   *bool `yaml:"per_stage"`
	PerSession *bool `yaml:"per_session"`
}

// IPGoodput is report.goodput: SLOs in seconds.
type IPGoodput struct {
	Constraints map[string]float64 `yaml:"constraints"`
}

// IPStorage is the storage block: where the reports go.
type IPStorage struct {
	LocalStorage         *IPStoragePath `yaml:"local_storage"`
	GoogleCloudStorage   *IPStoragePath `yaml:"google_cloud_storage"`
	SimpleStorageService *IPStoragePath `yaml:"simple_storage_service"`
}

// IPStoragePath is one storage target; the bucket fields belong to the
// cloud ones.
type IPStoragePath struct {
	Path             *string `yaml:"path"`
	ReportFilePrefix *string `yaml:"report_file_prefix"`
	BucketName       *string `yaml:"bucket_name"`
	EndpointURL      *string `yaml:"endpoint_url"`
	RegionName       *string `yaml:"region_name"`
	AddressingStyle  *string `yaml:"addressing_style"`
}

// IPCircuitBreaker stops a run when its requests' outcomes trip it.
type IPCircuitBreaker struct {
	Name    string `yaml:"name"`
	Metrics struct {
		Matches []string `yaml:"matches"`
		Rules   []string `yaml:"rules"`
	} `yaml:"metrics"`
	Triggers []IPTrigger `yaml:"triggers"`
}

// IPTrigger is one trigger of a circuit breaker.
type IPTrigger struct {
	Type       string   `yaml:"type"` // consecutive or rate_over_window
	Threshold  float64  `yaml:"threshold"`
	WindowSec  *float64 `yaml:"window_sec"`
	MinSamples *int     `yaml:"min_samples"`
}

// ReadInferencePerf reads and checks the configuration file at path.
// Errors name the file and the key's line.
func ReadInferencePerf(path string) (*InferencePerf, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read inference-perf config: %w", err)
	}
	c, err := parseInferencePerf(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseInferencePerf reads a configuration and checks it.
func ParseInferencePerf(r io.Reader) (*InferencePerf, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read inference-perf config: %w", err)
	}
	return parseInferencePerf(raw)
}

func parseInferencePerf(raw []byte) (*InferencePerf, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("parse inference-perf config: %w", err)
	}
	c := &InferencePerf{lines: map[string]int{}}
	k := &keyChecker{lines: c.lines}
	if err := k.walk(&root, reflect.TypeFor[InferencePerf](), ""); err != nil {
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
