package bench

import (
	"time"

	"github.com/glassbox-llm/glassbox/internal/workload"
)

// Offline makes a result of outputs that no HTTP client measured (glassbox
// simulate runs the load in virtual time and measures it as a client
// would), with bench's metrics, JSON and summary. cfg names the load (its
// rates, percentiles and SLOs); p carries the pass's shape, start and
// outputs; dur is the run's length from the first send to the last answer.
func Offline(cfg Config, modelID, tokenizerID string, p Pass, dur time.Duration, plan *workload.Plan) (*Result, error) {
	cfg, err := cfg.ClientDefaults()
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = "main"
	}
	p.measure(&cfg, dur, plan)
	return &Result{Config: cfg, Date: cfg.Now(), ModelID: modelID, TokenizerID: tokenizerID, Passes: []*Pass{&p}}, nil
}
