package doctor

import "fmt"

// Severity orders findings; the worst sets the exit status.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	switch s {
	case Critical:
		return "critical"
	case Warning:
		return "warning"
	}
	return "info"
}

// MarshalText writes the name, so JSON carries "warning", not 1.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name MarshalText wrote, so a JSON report reads back.
func (s *Severity) UnmarshalText(b []byte) error {
	for _, v := range []Severity{Info, Warning, Critical} {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("severity %q: want info, warning or critical", b)
}

// Finding is one diagnosis.
type Finding struct {
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	// Answers are the questions of the report's header the finding
	// answers (compute, kv, scheduler); none for a latency, client or
	// health finding.
	Answers   []Question `json:"answers,omitempty"`
	Title     string     `json:"title"`
	Evidence  []Evidence `json:"evidence"`
	Inference string     `json:"inference"`
	Changes   []Change   `json:"recommended_changes"`
	// Sources are where the evidence came from (vllm, glassbox, dcgm,
	// flag, gpu-profile, inferred, inferred-plateau, vllm-estimate), and
	// Confidence how far they carry the conclusion: high, medium or low.
	Sources    []string `json:"sources"`
	Confidence string   `json:"confidence"`

	// apply makes the recommended flags on a replica's configuration, for
	// Verify; nil when no flag of a single replica is recommended.
	apply func(*ReplicaConfig) `json:"-"`
	// itl says the change aims at inter-token latency (and may cost
	// throughput), so Verify judges it by that.
	itl bool
	// untested says why a recommended change is not replayed: the replay
	// cannot show its effect.
	untested string
}

// Change is one recommended change: a flag and its suggested value, or an
// action without a flag.
type Change struct {
	Flag  string `json:"flag,omitempty"`
	Value string `json:"value,omitempty"`
	Why   string `json:"why"`
}
