package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"go.yaml.in/yaml/v3"
)

// InferencePerf is a kubernetes-sigs/inference-perf configuration: the
// fields of its schema that shape the load (load, api, server, data,
// tokenizer); report, storage and metrics are accepted and left to
// inference-perf. Unknown keys are errors, as in inference-perf since it
// made its models strict.
type InferencePerf struct {
	Load      IPLoad       `yaml:"load"`
	API       IPAPI        `yaml:"api"`
	Server    IPServer     `yaml:"server"`
	Data      IPData       `yaml:"data"`
	Tokenizer *IPTokenizer `yaml:"tokenizer"`

	Report          any `yaml:"report"`
	Storage         any `yaml:"storage"`
	Metrics         any `yaml:"metrics"`
	CircuitBreakers any `yaml:"circuit_breakers"`
}

// IPLoad is the load block: stages of constant or Poisson arrivals.
type IPLoad struct {
	Type     string    `yaml:"type"`     // constant (default) or poisson
	Interval *float64  `yaml:"interval"` // seconds between stages; default 1
	Stages   []IPStage `yaml:"stages"`

	NumWorkers              int      `yaml:"num_workers"`
	WorkerMaxConcurrency    int      `yaml:"worker_max_concurrency"` // default 100
	WorkerMaxTCPConnections int      `yaml:"worker_max_tcp_connections"`
	RequestTimeout          *float64 `yaml:"request_timeout"`
	BaseSeed                *int64   `yaml:"base_seed"`
	Sweep                   any      `yaml:"sweep"`
	CircuitBreakers         any      `yaml:"circuit_breakers"`
}

// IPStage is one stage: rate requests per second for duration seconds.
type IPStage struct {
	Rate     float64 `yaml:"rate"`
	Duration float64 `yaml:"duration"`
}

// IPAPI is the api block.
type IPAPI struct {
	Type      string            `yaml:"type"` // completion (default) or chat
	Streaming bool              `yaml:"streaming"`
	Headers   map[string]string `yaml:"headers"`
}

// IPServer is the server block.
type IPServer struct {
	Type      string  `yaml:"type"`
	ModelName string  `yaml:"model_name"`
	BaseURL   string  `yaml:"base_url"`
	IgnoreEOS *bool   `yaml:"ignore_eos"` // default true
	APIKey    *string `yaml:"api_key"`
}

// IPTokenizer names the tokenizer inference-perf loads; glassbox uses the
// server's (or the simulator's) instead.
type IPTokenizer struct {
	PretrainedModelNameOrPath string `yaml:"pretrained_model_name_or_path"`
	TrustRemoteCode           bool   `yaml:"trust_remote_code"`
	Token                     string `yaml:"token"`
}

// IPData is the data block.
type IPData struct {
	Type               string          `yaml:"type"` // mock (default), shared_prefix, random or shareGPT
	Path               string          `yaml:"path"`
	InputDistribution  *IPDistribution `yaml:"input_distribution"`
	OutputDistribution *IPDistribution `yaml:"output_distribution"`
	SharedPrefix       *IPSharedPrefix `yaml:"shared_prefix"`
}

// IPDistribution is a length distribution: normal (clipped) by default.
type IPDistribution struct {
	Type       string   `yaml:"type"` // normal (default), uniform, fixed
	Min        *int     `yaml:"min"`  // default 10
	Max        *int     `yaml:"max"`  // default 1024
	Mean       *float64 `yaml:"mean"` // default 512
	StdDev     *float64 `yaml:"std_dev"`
	Variance   *float64 `yaml:"variance"`
	TotalCount *int     `yaml:"total_count"`
}

// IPSharedPrefix is the shared_prefix block, with inference-perf's aliases.
type IPSharedPrefix struct {
	NumGroups               *int   `yaml:"num_groups"`
	NumUniqueSystemPrompts  *int   `yaml:"num_unique_system_prompts"`
	NumPromptsPerGroup      *int   `yaml:"num_prompts_per_group"`
	NumUsersPerSystemPrompt *int   `yaml:"num_users_per_system_prompt"`
	SystemPromptLen         *int   `yaml:"system_prompt_len"` // default 100
	QuestionLen             *int   `yaml:"question_len"`      // default 50
	OutputLen               *int   `yaml:"output_len"`        // default 50
	Seed                    *int64 `yaml:"seed"`
	EnableMultiTurnChat     bool   `yaml:"enable_multi_turn_chat"`

	// The values under the short names alone, which are all that
	// inference-perf e8e0aa99 read (Legacy).
	legacyGroups, legacyPerGroup *int
}

// ParseInferencePerf reads a configuration and checks it.
func ParseInferencePerf(r io.Reader) (*InferencePerf, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read inference-perf config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c InferencePerf
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("parse inference-perf config: %w", err)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("check inference-perf config: %w", err)
	}
	return &c, nil
}

func (c *InferencePerf) check() error {
	switch c.Load.Type {
	case "":
		c.Load.Type = "constant"
	case "constant", "poisson":
	default:
		return fmt.Errorf("load.type %q: glassbox runs constant and poisson stages", c.Load.Type)
	}
	if len(c.Load.Stages) == 0 {
		return errors.New("load.stages is empty")
	}
	for i, s := range c.Load.Stages {
		if !(s.Rate > 0) || !(s.Duration > 0) || math.IsInf(s.Rate, 0) || math.IsInf(s.Duration, 0) {
			return fmt.Errorf("load.stages[%d]: rate and duration must be positive, got %v and %v", i, s.Rate, s.Duration)
		}
		if n := s.Rate * s.Duration; n > maxDurationRequests {
			return fmt.Errorf("load.stages[%d]: %v requests is too many", i, n)
		}
	}
	if c.Load.Interval != nil && *c.Load.Interval < 0 {
		return fmt.Errorf("load.interval must not be negative, got %v", *c.Load.Interval)
	}
	switch c.API.Type {
	case "":
		c.API.Type = "completion"
	case "completion", "chat":
	default:
		return fmt.Errorf("api.type %q: want completion or chat", c.API.Type)
	}
	d := &c.Data
	switch d.Type {
	case "":
		d.Type = "mock"
	case "mock", "random":
	case "shared_prefix":
		if d.SharedPrefix == nil {
			d.SharedPrefix = &IPSharedPrefix{}
		}
		if err := d.SharedPrefix.check(); err != nil {
			return err
		}
		if d.SharedPrefix.EnableMultiTurnChat && c.API.Type != "completion" {
			return errors.New("data.shared_prefix.enable_multi_turn_chat needs api.type completion, as inference-perf's")
		}
	case "shareGPT":
		if d.Path == "" {
			return errors.New("data.path: glassbox reads ShareGPT from a local file (no downloads)")
		}
	default:
		return fmt.Errorf("data.type %q: glassbox generates mock, random, shared_prefix and shareGPT", d.Type)
	}
	if d.Type != "shared_prefix" && d.SharedPrefix != nil {
		return fmt.Errorf("data.shared_prefix is set for data.type %s", d.Type)
	}
	for name, dist := range map[string]*IPDistribution{"input_distribution": d.InputDistribution, "output_distribution": d.OutputDistribution} {
		if dist != nil {
			if err := dist.check(); err != nil {
				return fmt.Errorf("data.%s: %w", name, err)
			}
		}
	}
	if d.Type == "random" && (d.InputDistribution == nil || d.OutputDistribution == nil) {
		return fmt.Errorf("data.type %s needs input_distribution and output_distribution", d.Type)
	}
	return nil
}

func (s *IPSharedPrefix) check() error {
	pick := func(a, b *int, name string, def int) (*int, error) {
		switch {
		case a != nil && b != nil && *a != *b:
			return nil, fmt.Errorf("data.shared_prefix: %s is given twice (with its alias) with different values", name)
		case a != nil:
			return a, nil
		case b != nil:
			return b, nil
		}
		return &def, nil
	}
	s.legacyGroups, s.legacyPerGroup = s.NumGroups, s.NumPromptsPerGroup
	var err error
	if s.NumGroups, err = pick(s.NumGroups, s.NumUniqueSystemPrompts, "num_groups", 10); err != nil {
		return err
	}
	if s.NumPromptsPerGroup, err = pick(s.NumPromptsPerGroup, s.NumUsersPerSystemPrompt, "num_prompts_per_group", 10); err != nil {
		return err
	}
	s.NumUniqueSystemPrompts, s.NumUsersPerSystemPrompt = s.NumGroups, s.NumPromptsPerGroup
	for _, f := range []struct {
		v   **int
		def int
	}{{&s.SystemPromptLen, 100}, {&s.QuestionLen, 50}, {&s.OutputLen, 50}} {
		if *f.v == nil {
			d := f.def
			*f.v = &d
		}
	}
	switch {
	case *s.NumGroups < 1 || *s.NumPromptsPerGroup < 1:
		return errors.New("data.shared_prefix: num_groups and num_prompts_per_group must be at least 1")
	case *s.SystemPromptLen < 0 || *s.QuestionLen < 1 || *s.OutputLen < 1:
		return errors.New("data.shared_prefix: system_prompt_len must not be negative, question_len and output_len must be positive")
	}
	return nil
}

func (d *IPDistribution) check() error {
	setI := func(p **int, v int) {
		if *p == nil {
			*p = &v
		}
	}
	setF := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	setI(&d.Min, 10)
	setI(&d.Max, 1024)
	setF(&d.Mean, 512)
	if d.Variance != nil {
		if d.StdDev != nil {
			return errors.New("give std_dev or variance, not both")
		}
		sd := math.Sqrt(*d.Variance)
		d.StdDev = &sd
	}
	setF(&d.StdDev, 200)
	switch d.Type {
	case "":
		d.Type = "normal"
	case "normal", "uniform", "fixed":
	default:
		return fmt.Errorf("type %q: glassbox draws normal, uniform and fixed lengths", d.Type)
	}
	if *d.Min > *d.Max || *d.StdDev < 0 || *d.Min < 0 {
		return fmt.Errorf("want 0 <= min <= max and std_dev >= 0, got min %d, max %d, std_dev %v", *d.Min, *d.Max, *d.StdDev)
	}
	if d.TotalCount != nil && *d.TotalCount < 1 {
		return fmt.Errorf("total_count must be at least 1, got %d", *d.TotalCount)
	}
	return nil
}
