package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// specSeries are speculative decoding's counters, as vLLM's
// SpecDecodingProm: drafts (one per sequence per step that verified any),
// their tokens, the accepted ones, and the accepted ones by draft
// position, every position's series created at zero. The zero value (no
// speculation) observes nothing.
type specSeries struct {
	drafts, draftTokens, accepted prometheus.Counter
	perPos                        []prometheus.Counter
}

func newSpecSeries(b *builder, k int) specSeries {
	s := specSeries{
		drafts:      b.counter(metricspec.SpecDecodeDrafts),
		draftTokens: b.counter(metricspec.SpecDecodeDraftTokens),
		accepted:    b.counter(metricspec.SpecDecodeAcceptedTokens),
	}
	positions := make([]string, k)
	for i := range positions {
		positions[i] = strconv.Itoa(i)
	}
	byPos := b.counterVec(metricspec.SpecDecodeAcceptedTokensPos, positions)
	for _, p := range positions {
		s.perPos = append(s.perPos, byPos[p])
	}
	return s
}

func (s *specSeries) observe(ev *engine.StepEvent) {
	if s.drafts == nil {
		return
	}
	s.drafts.Add(float64(ev.SpecDrafts))
	s.draftTokens.Add(float64(ev.SpecDraftTokens))
	s.accepted.Add(float64(ev.SpecAccepted))
	for i, n := range ev.SpecAcceptedPerPos {
		if i < len(s.perPos) {
			s.perPos[i].Add(float64(n))
		}
	}
}
