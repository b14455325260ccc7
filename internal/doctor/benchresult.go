package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// ClientView is what a load generator saw, from a `glassbox bench` (or
// `vllm bench serve`) result file: the client's side of the window.
// Numbers the file lacks are 0.
type ClientView struct {
	Completed         int     `json:"completed"`
	Failed            int     `json:"failed"`
	Duration          float64 `json:"duration_s"`
	RequestThroughput float64 `json:"request_throughput"`
	OutputThroughput  float64 `json:"output_throughput"`
	MeanTTFTms        float64 `json:"mean_ttft_ms"`
	P99TTFTms         float64 `json:"p99_ttft_ms"`
	MeanE2ELms        float64 `json:"mean_e2el_ms"`
	Timeouts          int     `json:"timeouts"` // failed requests whose error names a timeout or deadline (needs --save-detailed)
	ServerTTFTMeanMS  float64 `json:"server_mean_ttft_ms"`
}

// ParseBenchResult reads a bench result. A sweep's passes are not mixed:
// its last pass is the client view, being the heaviest load.
func ParseBenchResult(r io.Reader) (*ClientView, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(r, 256<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("parse bench result: %w", err)
	}
	if sw, ok := raw["sweep"]; ok {
		var passes []map[string]json.RawMessage
		if err := json.Unmarshal(sw, &passes); err != nil {
			return nil, fmt.Errorf("parse bench result sweep: %w", err)
		}
		if len(passes) == 0 {
			return nil, fmt.Errorf("parse bench result: empty sweep")
		}
		raw = passes[len(passes)-1]
	}
	if _, ok := raw["completed"]; !ok {
		return nil, fmt.Errorf("parse bench result: no \"completed\" key: not a bench result")
	}
	c := &ClientView{}
	num := func(key string) float64 {
		var v *float64
		if b, ok := raw[key]; ok && json.Unmarshal(b, &v) == nil && v != nil && !math.IsInf(*v, 0) {
			return *v
		}
		return 0
	}
	c.Completed, c.Failed = int(num("completed")), int(num("failed"))
	if c.Completed < 0 || c.Failed < 0 {
		return nil, fmt.Errorf("parse bench result: negative request counts")
	}
	c.Duration, c.RequestThroughput = num("duration"), num("request_throughput")
	c.OutputThroughput, c.MeanTTFTms, c.P99TTFTms = num("output_throughput"), num("mean_ttft_ms"), num("p99_ttft_ms")
	c.MeanE2ELms = num("mean_e2el_ms")
	if b, ok := raw["server"]; ok {
		var sv struct {
			TTFT struct {
				Mean *float64 `json:"mean_ms"`
			} `json:"ttft"`
		}
		if json.Unmarshal(b, &sv) == nil && sv.TTFT.Mean != nil {
			c.ServerTTFTMeanMS = *sv.TTFT.Mean
		}
	}
	if b, ok := raw["errors"]; ok {
		var errs []string
		if json.Unmarshal(b, &errs) == nil {
			for _, e := range errs {
				l := strings.ToLower(e)
				if strings.Contains(l, "timeout") || strings.Contains(l, "deadline") {
					c.Timeouts++
				}
			}
		}
	}
	return c, nil
}

func zeroNaN(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
