package promtext

import (
	"fmt"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// SpecCounters reads vLLM's four spec-decode counters from the scrape,
// each summed over its series (every engine and model the scrape holds),
// the per-position one by its position label. A missing family is an
// error that names it: vLLM and glassbox export none of them without
// --speculative-config.
func (s *Scrape) SpecCounters() (speculative.Counters, error) {
	var c speculative.Counters
	for _, f := range []struct {
		name string
		dst  *float64
	}{{metricspec.SpecDecodeDrafts, &c.Drafts}, {metricspec.SpecDecodeDraftTokens, &c.DraftTokens}, {metricspec.SpecDecodeAcceptedTokens, &c.Accepted}} {
		v, ok := s.Sum(f.name, nil)
		if !ok {
			return c, fmt.Errorf("read spec-decode counters: no %s in the scrape (was speculative decoding on?)", f.name)
		}
		*f.dst = v
	}
	series := s.Series(metricspec.SpecDecodeAcceptedTokensPos)
	if len(series) == 0 {
		return c, fmt.Errorf("read spec-decode counters: no %s in the scrape (was speculative decoding on?)", metricspec.SpecDecodeAcceptedTokensPos)
	}
	for _, x := range series {
		p, err := strconv.Atoi(x.Labels[metricspec.LabelPosition])
		if err != nil || p < 0 || p >= speculative.MaxSpeculativeTokens {
			return c, fmt.Errorf("read spec-decode counters: %s has position %q: want 0 to %d", metricspec.SpecDecodeAcceptedTokensPos,
				x.Labels[metricspec.LabelPosition], speculative.MaxSpeculativeTokens-1)
		}
		for len(c.PerPos) <= p {
			c.PerPos = append(c.PerPos, 0)
		}
		c.PerPos[p] += x.Value
	}
	return c, nil
}
