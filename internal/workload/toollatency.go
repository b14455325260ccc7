package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// ToolLatency is the time an agent's tool takes between an answer and the
// session's next turn: the same every time, or drawn per turn. Real tools
// (a search, a build, a test run) take times with a long right tail, which
// a constant hides: sessions fall into step with one another and their
// turns arrive in waves that no agent fleet sends.
type ToolLatency struct {
	// Distribution is "constant" (or empty), "exponential" (a memoryless
	// wait of mean Mean) or "lognormal" (mean Mean, standard deviation
	// StdDev: most calls quick, a few slow).
	Distribution string
	Mean         time.Duration
	StdDev       time.Duration // lognormal's; 0 with the others
}

// ToolLatencyDistributions are the distributions ToolLatency draws from.
var ToolLatencyDistributions = []string{"constant", "exponential", "lognormal"}

// Check refuses what cannot be drawn, by flag.
func (t ToolLatency) Check() error {
	switch {
	case !slices.Contains(ToolLatencyDistributions, t.dist()):
		return fmt.Errorf("agent sessions: --agent-tool-latency-distribution %q: want constant, exponential or lognormal", t.Distribution)
	case t.Mean < 0:
		return fmt.Errorf("agent sessions: --agent-tool-latency must not be negative, got %v", t.Mean)
	case t.StdDev < 0:
		return fmt.Errorf("agent sessions: --agent-tool-latency-stddev must not be negative, got %v", t.StdDev)
	case t.StdDev > 0 && t.dist() != "lognormal":
		return fmt.Errorf("agent sessions: --agent-tool-latency-stddev is the lognormal distribution's; the %s one has none", t.dist())
	case t.dist() == "lognormal" && (t.Mean == 0 || t.StdDev == 0):
		return fmt.Errorf("agent sessions: a lognormal tool latency needs a positive --agent-tool-latency (its mean) and --agent-tool-latency-stddev, got %v and %v", t.Mean, t.StdDev)
	}
	return nil
}

func (t ToolLatency) dist() string {
	if t.Distribution == "" {
		return "constant"
	}
	return t.Distribution
}

// Draw draws one tool call's time.
func (t ToolLatency) Draw(rng *rand.Rand) time.Duration {
	mean := t.Mean.Seconds()
	switch t.dist() {
	case "exponential":
		return Seconds(rng.ExpFloat64() * mean)
	case "lognormal":
		// The log's parameters that give the asked mean and deviation.
		cv := t.StdDev.Seconds() / mean
		sigma2 := math.Log1p(cv * cv)
		mu := math.Log(mean) - sigma2/2
		return Seconds(math.Exp(mu + math.Sqrt(sigma2)*rng.NormFloat64()))
	}
	return t.Mean
}

// String says what it draws, for a summary.
func (t ToolLatency) String() string {
	switch t.dist() {
	case "exponential":
		return fmt.Sprintf("exponential, mean %v", t.Mean)
	case "lognormal":
		return fmt.Sprintf("lognormal, mean %v, std dev %v", t.Mean, t.StdDev)
	}
	return t.Mean.String()
}
