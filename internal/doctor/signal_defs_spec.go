package doctor

import (
	"fmt"
	"math"
	"strconv"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// SigSpecPos is the acceptance at draft position i: the share of verify
// passes whose draft i was accepted (and so every draft before it).
func SigSpecPos(i int) SignalName { return SignalName("spec_acceptance_pos_" + strconv.Itoa(i)) }

// specSignalDefs are speculative decoding's signals, from vLLM's four
// spec-decode counters; all NaN without speculation (the families are then
// absent, as in vLLM).
func specSignalDefs() []signalDef {
	drafts, draftTok, acc := metricspec.SpecDecodeDrafts, metricspec.SpecDecodeDraftTokens, metricspec.SpecDecodeAcceptedTokens
	steps := metricspec.IterationTokens + "_count"
	out := []signalDef{
		one(SigSpecDrafts, "", srcVLLM, "verify passes (sequences × steps with drafts)", func(v *view) float64 { return v.inc(drafts) },
			func(p promql, _ *Signals) string { return p.inc(drafts) }),
		// Every position 0..k-1 is exported from zero, as vLLM does: their
		// number is the configured k.
		{name: SigSpecK, unit: "tokens", constant: true, alts: []signalAlt{{src: srcVLLM, what: "num_speculative_tokens (the draft positions exported)",
			value: func(v *view) float64 {
				n := 0
				for n < maxSpecPositions && v.w.Has(keySpecPos(n)) {
					n++
				}
				return positive(float64(n))
			},
			promql: func(p promql, _ *Signals) string {
				return "count(" + p.s(metricspec.SpecDecodeAcceptedTokensPos) + ")"
			}}}},
		one(SigSpecAcceptance, "ratio", srcVLLM, "draft acceptance rate: accepted over draft tokens",
			func(v *view) float64 { return ratio(v.inc(acc), v.inc(draftTok)) },
			func(p promql, _ *Signals) string { return p.ratio(p.inc(acc), p.inc(draftTok)) }),
		one(SigSpecDraftLen, "tokens", srcVLLM, "draft tokens per verify pass",
			func(v *view) float64 { return ratio(v.inc(draftTok), v.inc(drafts)) },
			func(p promql, _ *Signals) string { return p.ratio(p.inc(draftTok), p.inc(drafts)) }),
		one(SigSpecTokensPerPass, "tokens", srcVLLM, "tokens per verify pass (1 + accepted drafts)",
			func(v *view) float64 { return 1 + ratio(v.inc(acc), v.inc(drafts)) },
			func(p promql, _ *Signals) string { return "1 + " + p.ratio(p.inc(acc), p.inc(drafts)) }),
		// A verify pass scores the last token and its drafts and keeps the
		// accepted ones and the token after them: where the pass is
		// compute-bound, its cost per token against plain decoding's.
		one(SigSpecScoredPerToken, "", srcVLLM, "positions a verify pass scores per token it keeps ((passes + drafts) / (passes + accepted))",
			func(v *view) float64 { return ratio(v.inc(drafts)+v.inc(draftTok), v.inc(drafts)+v.inc(acc)) },
			func(p promql, _ *Signals) string {
				return "(" + p.inc(drafts) + " + " + p.inc(draftTok) + ") / (" + p.inc(drafts) + " + " + p.inc(acc) + ")"
			}),
		// vLLM's iteration tokens count a step's prompt tokens and its
		// output, not the drafts it scored.
		{name: SigSpecVerifyPerStep, unit: "tokens", alts: []signalAlt{
			{src: srcVLLM, what: "positions scored by verify passes per engine step",
				value: func(v *view) float64 { return ratio(v.inc(drafts)+v.inc(draftTok), v.inc(steps)) },
				promql: func(p promql, _ *Signals) string {
					return "(" + p.inc(drafts) + " + " + p.inc(draftTok) + ") / " + p.inc(steps)
				}},
			{src: srcGlassbox, what: "positions scored by verify passes per engine step",
				value: func(v *view) float64 {
					return ratio(v.inc(drafts)+v.inc(draftTok), v.inc(metricspec.EngineSteps))
				}},
		}},
	}
	for i := range maxSpecPositions {
		out = append(out, one(SigSpecPos(i), "ratio", srcVLLM, fmt.Sprintf("acceptance at draft position %d (accepted there per verify pass)", i),
			func(v *view) float64 {
				if !v.w.Has(keySpecPos(i)) {
					return math.NaN()
				}
				return ratio(v.inc(keySpecPos(i)), v.inc(drafts))
			},
			func(p promql, _ *Signals) string {
				return p.ratio(p.inc(metricspec.SpecDecodeAcceptedTokensPos, fmt.Sprintf("position=%q", strconv.Itoa(i))), p.inc(drafts))
			}))
	}
	return out
}
