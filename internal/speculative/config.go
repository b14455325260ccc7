// Package speculative owns speculative decoding's pure parts: vLLM's
// --speculative-config (parsed and checked, every key honoured or refused
// by name), the n-gram prompt-lookup proposer, the per-sequence back-off
// that stops drafting when drafts keep being rejected, and acceptance
// curves (vLLM's synthetic rates, or fitted from a run's spec-decode
// counters) for the simulator.
//
// It is pure: no goroutines, no I/O, no clock. It must not import net/http,
// Prometheus, OpenTelemetry, or the engine, server, metrics or executor
// packages: the engine and the executors build on it.
package speculative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Methods glassbox runs.
const (
	MethodNgram      = "ngram"
	MethodDraftModel = "draft_model"
)

// Rejection-sampling methods (vLLM's rejection_sample_method).
const (
	RejectStandard  = "standard"
	RejectSynthetic = "synthetic"
)

// Config is a parsed --speculative-config. The zero value means no
// speculation.
type Config struct {
	Method string // MethodNgram or MethodDraftModel
	// Model is the draft model's GGUF file (draft_model).
	Model string
	// NumSpeculativeTokens is k, the most drafts verified per step.
	NumSpeculativeTokens int
	// PromptLookupMin and PromptLookupMax bound the n-gram matched
	// (ngram; vLLM's defaults are 5 and 5).
	PromptLookupMin, PromptLookupMax int
	// DraftTensorParallelSize is the draft model's tensor parallelism
	// (0: as vLLM, the target's). Only a draft model has one.
	DraftTensorParallelSize int
	// DraftMaxModelLen, when set (vLLM's max_model_len key), is the
	// longest sequence the draft drafts for: longer ones decode without
	// speculation.
	DraftMaxModelLen int
	// DraftKVCacheDtype is the draft model's K/V type ("": the target's).
	DraftKVCacheDtype string
	// RejectionSampleMethod is RejectStandard (verify drafts against the
	// target, distribution-preserving) or RejectSynthetic (accept them
	// at the rates of Synthetic: the simulator's).
	RejectionSampleMethod string
	// Synthetic are the unconditional per-position acceptance rates of
	// synthetic rejection sampling: entry i is the probability that the
	// first i+1 drafts are all accepted (vLLM's synthetic_acceptance_rates,
	// or resolved from synthetic_acceptance_length).
	Synthetic []float64
}

// Enabled reports whether the configuration speculates at all.
func (c *Config) Enabled() bool { return c.Method != "" }

// Lookahead is how many positions past a step's tokens must have K/V room
// after it: a draft model writes its own K/V for the drafts it proposes
// (vLLM's num_lookahead_tokens); prompt lookup writes none.
func (c *Config) Lookahead() int {
	if c.Method == MethodDraftModel {
		return c.NumSpeculativeTokens
	}
	return 0
}

// vllmKeys are SpeculativeConfig's fields that glassbox does not honour:
// they are refused by name rather than ignored. Keys in neither list are
// not vLLM's at all.
var vllmKeys = []string{
	"quantization", "moe_backend", "attention_backend", "revision", "code_revision",
	"index_share_for_mtp_iteration", "disable_padded_drafter_batch", "disable_eagle_block_drop",
	"use_local_argmax_reduction", "use_heterogeneous_vocab", "parallel_drafting",
	"target_model_config", "target_parallel_config", "draft_model_config", "draft_parallel_config",
	"suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
	"suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "draft_load_config",
	"enable_adaptive_verification", "draft_sample_method", "dspark_draft_topk",
	"num_speculative_tokens_per_batch_size", "speculative_token_tree", "draft_confidence_threshold",
}

// otherMethods are vLLM's speculative methods that glassbox does not run.
var otherMethods = []string{"medusa", "mlp_speculator", "suffix", "custom_class", "eagle", "eagle3",
	"extract_hidden_states", "mtp", "ngram_gpu", "dflash", "dspark", "deepseek_mtp"}

// Error is a --speculative-config problem, naming the key it is about.
type Error struct {
	Key string // the JSON key, or "" for the document as a whole
	Msg string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return "--speculative-config: " + e.Msg
	}
	return fmt.Sprintf("--speculative-config %s: %s", e.Key, e.Msg)
}

func errorf(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads vLLM's --speculative-config JSON. Every key is either
// honoured or refused by name: an unknown key, a vLLM key glassbox does
// not honour, a method it does not run and a value out of range are all
// errors. What depends on the deployment (a draft model's tensor
// parallelism, synthetic acceptance, which the CPU cannot honour) is
// checked by Check.
func Parse(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return c, errorf("", "not a JSON object: %v", err)
	}
	if raw == nil {
		return c, errorf("", "not a JSON object: null")
	}
	if dec.More() {
		return c, errorf("", "more than one JSON value")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var (
		method, model, rejection, kvDtype string
		k, lmin, lmax, dtp, maxLen        int
		length                            float64
		hasLength, hasRates, enforceEager bool
	)
	for _, key := range keys {
		v := raw[key]
		if string(v) == "null" {
			continue // pydantic's None: the default
		}
		var err error
		switch key {
		case "method":
			err = str(key, v, &method)
		case "model":
			err = str(key, v, &model)
		case "num_speculative_tokens":
			err = positive(key, v, &k)
		case "prompt_lookup_max":
			err = positive(key, v, &lmax)
		case "prompt_lookup_min":
			err = positive(key, v, &lmin)
		case "draft_tensor_parallel_size":
			err = positive(key, v, &dtp)
		case "tensor_parallel_size":
			err = errorf(key, "vLLM's field for this is draft_tensor_parallel_size")
		case "max_model_len":
			err = positive(key, v, &maxLen)
		case "kv_cache_dtype":
			err = str(key, v, &kvDtype)
		case "enforce_eager":
			// There are no CUDA graphs to capture: glassbox always runs
			// eagerly, which is what either value allows.
			err = boolean(key, v, &enforceEager)
		case "rejection_sample_method":
			err = str(key, v, &rejection)
		case "synthetic_acceptance_rates":
			hasRates = true
			err = floats(key, v, &c.Synthetic)
		case "synthetic_acceptance_length":
			hasLength = true
			err = number(key, v, &length)
		default:
			if slices.Contains(vllmKeys, key) {
				err = errorf(key, "vLLM's key is not honoured by glassbox (it runs the ngram and draft_model methods with standard or synthetic rejection sampling)")
			} else {
				err = errorf(key, "unknown key (vLLM's SpeculativeConfig has no such field)")
			}
		}
		if err != nil {
			return Config{}, err
		}
	}

	// vLLM infers the method from the model when it is not given.
	switch {
	case method == "" && (model == "ngram" || model == "[ngram]"):
		method = MethodNgram
	case method == "" && model != "":
		method = MethodDraftModel
	case method == "[ngram]":
		method = MethodNgram
	}
	switch method {
	case MethodNgram, MethodDraftModel:
	case "":
		return Config{}, errorf("method", "missing: give method \"ngram\", or a draft model's GGUF file as model")
	default:
		if slices.Contains(otherMethods, method) {
			return Config{}, errorf("method", "%q is vLLM's but not built in glassbox (ngram is)", method)
		}
		return Config{}, errorf("method", "unknown method %q (glassbox runs ngram)", method)
	}
	if k == 0 {
		return Config{}, errorf("num_speculative_tokens", "missing: how many tokens to draft per step")
	}
	c.Method, c.NumSpeculativeTokens = method, k
	if k > MaxSpeculativeTokens {
		return Config{}, errorf("num_speculative_tokens", "%d is more than %d (vLLM's MAX_SPEC_LEN)", k, MaxSpeculativeTokens)
	}
	if method == MethodNgram {
		if model != "" && model != "ngram" && model != "[ngram]" {
			return Config{}, errorf("model", "the ngram method uses no model, got %q", model)
		}
		switch {
		case lmin == 0 && lmax == 0:
			lmin, lmax = 5, 5 // vLLM's defaults
		case lmin == 0:
			lmin = lmax
		case lmax == 0:
			lmax = lmin
		}
		if lmin > lmax {
			return Config{}, errorf("prompt_lookup_min", "prompt_lookup_min=%d must be <= prompt_lookup_max=%d", lmin, lmax)
		}
		c.PromptLookupMin, c.PromptLookupMax = lmin, lmax
		for key, set := range map[string]bool{"draft_tensor_parallel_size": dtp != 0, "max_model_len": maxLen != 0, "kv_cache_dtype": kvDtype != ""} {
			if set {
				return Config{}, errorf(key, "is a draft model's setting: the ngram method has none")
			}
		}
	} else {
		if model == "" {
			return Config{}, errorf("model", "missing: the draft model's GGUF file")
		}
		if lmin != 0 || lmax != 0 {
			key := "prompt_lookup_min"
			if lmax != 0 {
				key = "prompt_lookup_max"
			}
			return Config{}, errorf(key, "is the ngram method's setting, not a draft model's")
		}
		c.Model, c.DraftTensorParallelSize, c.DraftMaxModelLen = model, dtp, maxLen
		switch kvDtype {
		case "", "auto":
		case "fp16", "float16", "fp32", "float32":
			c.DraftKVCacheDtype = kvDtype
		default:
			return Config{}, errorf("kv_cache_dtype", "%q: the draft's K/V are auto, fp16 or fp32", kvDtype)
		}
	}

	switch rejection {
	case "", RejectStandard:
		c.RejectionSampleMethod = RejectStandard
		if hasRates || hasLength {
			key := "synthetic_acceptance_rates"
			if hasLength {
				key = "synthetic_acceptance_length"
			}
			return Config{}, errorf(key, "needs rejection_sample_method \"synthetic\"")
		}
	case RejectSynthetic:
		c.RejectionSampleMethod = RejectSynthetic
		rates, err := resolveSynthetic(k, c.Synthetic, hasRates, length, hasLength)
		if err != nil {
			return Config{}, err
		}
		c.Synthetic = rates
	case "block":
		return Config{}, errorf("rejection_sample_method", "\"block\" (block verification) is vLLM's but not built in glassbox")
	default:
		return Config{}, errorf("rejection_sample_method", "unknown method %q (standard or synthetic)", rejection)
	}
	return c, nil
}

// MaxSpeculativeTokens is the most drafts one step verifies (vLLM's
// rejection sampler's MAX_SPEC_LEN).
const MaxSpeculativeTokens = 32

// Deployment is what Check needs to know about where the configuration
// runs.
type Deployment struct {
	// Simulated is the simulated GPU (synthetic acceptance is its; the
	// CPU verifies every draft against the model).
	Simulated bool
	// TensorParallel is the target's tensor parallelism (1 on the CPU).
	TensorParallel int
}

// Check refuses, by name, what the configuration asks of a deployment
// that cannot honour it.
func (c *Config) Check(d Deployment) error {
	if !c.Enabled() {
		return nil
	}
	tp := max(d.TensorParallel, 1)
	if c.DraftTensorParallelSize != 0 && c.DraftTensorParallelSize != 1 && c.DraftTensorParallelSize != tp {
		return errorf("draft_tensor_parallel_size", "%d: a draft runs on one GPU or on the target's %d (vLLM's rule)", c.DraftTensorParallelSize, tp)
	}
	if !d.Simulated {
		if c.DraftTensorParallelSize > 1 {
			return errorf("draft_tensor_parallel_size", "%d: the CPU executor has no tensor parallelism", c.DraftTensorParallelSize)
		}
		if c.RejectionSampleMethod == RejectSynthetic {
			return errorf("rejection_sample_method", "\"synthetic\" accepts drafts without looking at them: the CPU verifies every draft against the model (synthetic acceptance is the simulator's)")
		}
	}
	return nil
}

// String is the configuration as vLLM's JSON, with its defaults filled in.
func (c *Config) String() string {
	if !c.Enabled() {
		return ""
	}
	m := map[string]any{"method": c.Method, "num_speculative_tokens": c.NumSpeculativeTokens}
	if c.Method == MethodNgram {
		m["prompt_lookup_min"], m["prompt_lookup_max"] = c.PromptLookupMin, c.PromptLookupMax
	} else {
		m["model"] = c.Model
		if c.DraftTensorParallelSize != 0 {
			m["draft_tensor_parallel_size"] = c.DraftTensorParallelSize
		}
		if c.DraftMaxModelLen != 0 {
			m["max_model_len"] = c.DraftMaxModelLen
		}
		if c.DraftKVCacheDtype != "" {
			m["kv_cache_dtype"] = c.DraftKVCacheDtype
		}
	}
	if c.RejectionSampleMethod == RejectSynthetic {
		m["rejection_sample_method"] = RejectSynthetic
		m["synthetic_acceptance_rates"] = c.Synthetic
	}
	b, _ := json.Marshal(m) // maps of strings, numbers and slices always marshal
	return string(b)
}

func str(key string, v json.RawMessage, dst *string) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return errorf(key, "want a string, got %s", v)
	}
	return nil
}

func boolean(key string, v json.RawMessage, dst *bool) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return errorf(key, "want true or false, got %s", v)
	}
	return nil
}

func number(key string, v json.RawMessage, dst *float64) error {
	if err := json.Unmarshal(v, dst); err != nil || math.IsNaN(*dst) || math.IsInf(*dst, 0) {
		return errorf(key, "want a number, got %s", v)
	}
	return nil
}

// positive reads an integer of at least 1 (pydantic's gt=0 / ge=1); a
// float with no fraction, as Python's JSON may write, is taken.
func positive(key string, v json.RawMessage, dst *int) error {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || strings.ContainsAny(string(v), `"`) {
		return errorf(key, "want a whole number, got %s", v)
	}
	if f < 1 || f > 1<<30 {
		return errorf(key, "must be at least 1, got %s", v)
	}
	*dst = int(f)
	return nil
}

func floats(key string, v json.RawMessage, dst *[]float64) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return errorf(key, "want a list of numbers, got %s", v)
	}
	return nil
}

// resolveSynthetic is vLLM's _resolve_synthetic_acceptance_rates: exactly
// one of the rates (k of them in [0, 1], non-increasing) or the mean
// acceptance length (in [1, k+1], spread as its minimum-variance
// schedule: full positions, one fractional, then none).
func resolveSynthetic(k int, rates []float64, hasRates bool, length float64, hasLength bool) ([]float64, error) {
	if hasRates == hasLength {
		return nil, errorf("rejection_sample_method", "\"synthetic\" needs exactly one of synthetic_acceptance_rates and synthetic_acceptance_length")
	}
	if hasRates {
		if len(rates) != k {
			return nil, errorf("synthetic_acceptance_rates", "must have %d entries (num_speculative_tokens), got %d", k, len(rates))
		}
		for i, r := range rates {
			if math.IsNaN(r) || r < 0 || r > 1 {
				return nil, errorf("synthetic_acceptance_rates", "entries must be in [0, 1], got %v", r)
			}
			if i > 0 && r > rates[i-1] {
				return nil, errorf("synthetic_acceptance_rates", "must be non-increasing, got %v", rates)
			}
		}
		return rates, nil
	}
	if length < 1 || length > float64(k+1) {
		return nil, errorf("synthetic_acceptance_length", "must be in [1, %d], got %v", k+1, length)
	}
	return RatesForLength(length, k), nil
}

// RatesForLength spreads a mean acceptance length (1 + accepted drafts per
// draft) over k positions as vLLM does: every position accepted while the
// mean allows, one fractional, the rest never.
func RatesForLength(length float64, k int) []float64 {
	drafts := length - 1
	full := int(drafts)
	out := make([]float64, k)
	for i := range out {
		switch {
		case i < full:
			out[i] = 1
		case i == full:
			out[i] = drafts - float64(full)
		}
	}
	return out
}
