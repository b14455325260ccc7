package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
	"github.com/glassbox-llm/glassbox/internal/promtext"
	"github.com/glassbox-llm/glassbox/internal/speculative"
)

// fitAcceptance reads the per-position acceptance rates of a scrape, or of
// the run between two scrapes ("before,after"), of a server's spec-decode
// counters.
func fitAcceptance(arg string) ([]float64, error) {
	paths := strings.Split(arg, ",")
	if len(paths) > 2 {
		return nil, errors.New("want one scrape, or two (before,after)")
	}
	var cs []speculative.Counters
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc, err := promtext.Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		c, err := specCounters(sc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		cs = append(cs, c)
	}
	c := cs[0]
	if len(cs) == 2 {
		var err error
		if c, err = cs[1].Since(&cs[0]); err != nil {
			return nil, err
		}
	}
	return c.Rates()
}

// specCounters reads vLLM's four spec-decode counters from a scrape,
// each summed over its series (every engine and model the scrape holds),
// the per-position one by its position label. A missing family is an
// error that names it: vLLM and glassbox export none of them without
// --speculative-config.
func specCounters(s *promtext.Scrape) (speculative.Counters, error) {
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
