// The data block's checks: the data types, shared_prefix with its
// aliases, the length distributions and traces.

package inferenceperf

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

func (c *Config) checkTraceFormat(t *Trace, path string) error {
	switch t.Format {
	case "":
		t.Format = workload.TraceAzure
	case workload.TraceAzure, workload.TraceBurstGPT:
	default:
		return c.at(path+".format", "%q: want %s (or %s, which glassbox also reads)", t.Format, workload.TraceAzure, workload.TraceBurstGPT)
	}
	if t.File == "" {
		return c.at(path+".file", "is empty")
	}
	return nil
}

func (c *Config) checkData() error {
	d := &c.Data
	switch d.Type {
	case "":
		d.Type = "mock"
	case "mock", "random", "synthetic", "shared_prefix", "shareGPT":
	case "conversation_replay":
		if err := c.checkConversationReplay(); err != nil {
			return err
		}
	case "cnn_dailymail", "infinity_instruct", "billsum_conversations":
		return c.at("data.type", "%s: glassbox does not read that hub dataset (use shareGPT, random, synthetic or shared_prefix)", d.Type)
	case "otel_trace_replay":
		if err := c.checkOTelTraceReplay(); err != nil {
			return err
		}
	case "weka_trace_replay", "visionarena":
		return c.at("data.type", "%s is not built in glassbox (it replays Weka's traces or multimodal chats; otel_trace_replay replays agent traces, conversation_replay generates agent sessions)", d.Type)
	default:
		return c.at("data.type", "%q: want mock, shareGPT, random, synthetic, shared_prefix, conversation_replay or otel_trace_replay", d.Type)
	}
	if d.Type != "otel_trace_replay" && d.OTelTraceReplay != nil {
		return c.at("data.otel_trace_replay", "is set for data.type %s", d.Type)
	}
	if d.Type != "conversation_replay" && d.ConversationReplay != nil {
		return c.at("data.conversation_replay", "is set for data.type %s", d.Type)
	}
	for key, v := range map[string]any{"multimodal": d.Multimodal, "weka_trace_replay": d.WekaTraceReplay, "visionarena": d.VisionArena} {
		if v != nil {
			return c.at("data."+key, "glassbox does not generate multimodal prompts or replay Weka's traces")
		}
	}
	if d.UseChatTemplate {
		if d.Type != "random" {
			return c.at("data.use_chat_template", "is only read by data.type random (as in inference-perf)")
		}
		return c.at("data.use_chat_template", "is not built in glassbox: it would need the model's chat template on the client")
	}
	if d.Type != "shared_prefix" && d.SharedPrefix != nil {
		return c.at("data.shared_prefix", "is set for data.type %s", d.Type)
	}
	if d.Trace != nil {
		if d.Type != "random" {
			return c.at("data.trace", "is read by data.type random only")
		}
		if err := c.checkTraceFormat(d.Trace, "data.trace"); err != nil {
			return err
		}
	}
	if d.Path != "" && d.Type != "shareGPT" {
		return c.at("data.path", "is read by data.type shareGPT only")
	}
	if d.CorpusFilePath != "" && d.Type != "synthetic" {
		return c.at("data.corpus_file_path", "is read by data.type synthetic only")
	}
	for _, k := range []struct {
		name string
		d    *Distribution
	}{{"input_distribution", d.InputDistribution}, {"output_distribution", d.OutputDistribution}} {
		if k.d == nil {
			continue
		}
		if d.Type == "mock" || d.Type == "shared_prefix" {
			return c.at("data."+k.name, "data.type %s takes no input or output distribution (as in inference-perf)", d.Type)
		}
		if err := k.d.check(); err != nil {
			return c.at("data."+k.name, "%v", err)
		}
		if d.Type == "random" || d.Type == "synthetic" {
			if err := k.d.checkGenerated(); err != nil {
				return c.at("data."+k.name, "%v", err)
			}
		}
	}
	switch d.Type {
	case "random", "synthetic":
		if d.Trace == nil && (d.InputDistribution == nil || d.OutputDistribution == nil) {
			return c.at("data.type", "data.type %s needs input_distribution and output_distribution (or, for random, data.trace)", d.Type)
		}
	case "shared_prefix":
		if d.SharedPrefix == nil {
			d.SharedPrefix = &SharedPrefix{}
		}
		if err := c.checkSharedPrefix(d.SharedPrefix); err != nil {
			return err
		}
		if d.SharedPrefix.EnableMultiTurnChat && c.API.Type != "completion" {
			return c.at("data.shared_prefix.enable_multi_turn_chat", "needs api.type completion, as inference-perf's")
		}
	}
	return nil
}

func (c *Config) checkSharedPrefix(s *SharedPrefix) error {
	const p = "data.shared_prefix"
	pick := func(a, b *int, name string, def int) (*int, error) {
		switch {
		case a != nil && b != nil && *a != *b:
			return nil, c.at(p+"."+name, "is given twice (with its alias) with different values")
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
	if *s.NumGroups < 1 || *s.NumPromptsPerGroup < 1 {
		return c.at(p, "num_groups and num_prompts_per_group must be at least 1")
	}
	if s.Multimodal != nil {
		return c.at(p+".multimodal", "glassbox does not generate multimodal prompts")
	}
	for _, f := range []struct {
		name   string
		l      **Length
		legacy *Distribution
		def    int
		min    int
	}{{"system_prompt_len", &s.SystemPromptLen, nil, 100, 0}, {"question_len", &s.QuestionLen, s.QuestionDistribution, 50, 1},
		{"output_len", &s.OutputLen, s.OutputDistribution, 50, 1}} {
		if *f.l == nil {
			*f.l = &Length{Value: f.def}
		}
		l := *f.l
		if l.Dist != nil && f.legacy != nil {
			return c.at(p+"."+f.name, "an inline distribution and the legacy %s are both given: use one", strings.Replace(f.name, "_len", "_distribution", 1))
		}
		if l.Dist != nil {
			if err := l.Dist.check(); err != nil {
				return c.at(p+"."+f.name, "%v", err)
			}
			if *l.Dist.Max < f.min {
				return c.at(p+"."+f.name, "max must be at least %d", f.min)
			}
		} else if l.Value < f.min {
			return c.at(p+"."+f.name, "must be at least %d, got %d", f.min, l.Value)
		}
	}
	for _, d := range []struct {
		name string
		d    *Distribution
	}{{"question_distribution", s.QuestionDistribution}, {"output_distribution", s.OutputDistribution}} {
		if d.d != nil {
			if err := d.d.check(); err != nil {
				return c.at(p+"."+d.name, "%v", err)
			}
		}
	}
	return nil
}

func defInt(p **int, v int) {
	if *p == nil {
		*p = &v
	}
}

func defFloat(p **float64, v float64) {
	if *p == nil {
		*p = &v
	}
}

// check fills a distribution's defaults and checks it, as inference-perf's
// Distribution model does.
func (d *Distribution) check() error {
	defInt(&d.Min, 10)
	defInt(&d.Max, 1024)
	defFloat(&d.Mean, 512)
	if d.Variance != nil {
		if d.StdDev != nil {
			return errors.New("give std_dev or variance, not both")
		}
		if !(*d.Variance >= 0) {
			return fmt.Errorf("variance cannot be negative, got %v", *d.Variance)
		}
		sd := math.Sqrt(*d.Variance)
		d.StdDev = &sd
	}
	defFloat(&d.StdDev, 200)
	defFloat(&d.Skew, 0)
	switch d.Type {
	case "":
		d.Type = "normal"
	case "normal", "skew_normal", "lognormal", "uniform", "poisson", "fixed":
	default:
		return fmt.Errorf("type %q: want normal, skew_normal, lognormal, uniform, poisson or fixed", d.Type)
	}
	if *d.Min > *d.Max || !(*d.StdDev >= 0) || *d.Min < 0 || math.IsInf(*d.Mean, 0) || math.IsNaN(*d.Mean) || math.IsInf(*d.StdDev, 0) {
		return fmt.Errorf("want 0 <= min <= max, a finite mean and std_dev >= 0, got min %d, max %d, mean %v, std_dev %v", *d.Min, *d.Max, *d.Mean, *d.StdDev)
	}
	if math.IsNaN(*d.Skew) || math.IsInf(*d.Skew, 0) {
		return fmt.Errorf("skew must be finite, got %v", *d.Skew)
	}
	if *d.Max > 1<<24 {
		return fmt.Errorf("max %d is too large", *d.Max)
	}
	if d.TotalCount != nil && (*d.TotalCount < 1 || *d.TotalCount > workload.MaxRequests) {
		return fmt.Errorf("total_count must be 1 to %d, got %d", workload.MaxRequests, *d.TotalCount)
	}
	return nil
}

// checkGenerated refuses what inference-perf's generate_distribution (the
// random and synthetic lengths) refuses: it draws only normal, lognormal,
// uniform and fixed lengths, and a normal mean outside [min, max].
func (d *Distribution) checkGenerated() error {
	switch d.Type {
	case "skew_normal", "poisson":
		return fmt.Errorf("type %s: inference-perf draws random and synthetic lengths as normal, lognormal, uniform or fixed", d.Type)
	case "normal":
		if *d.Mean < float64(*d.Min) || *d.Mean > float64(*d.Max) {
			return fmt.Errorf("the mean %v is outside [min, max] = [%d, %d]", *d.Mean, *d.Min, *d.Max)
		}
	}
	return nil
}
