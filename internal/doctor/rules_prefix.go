package doctor

import (
	"fmt"
	"math"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// prefixReuseWhen: prefix caching is on, serves most of a prompt-heavy
// load's prompt tokens, and nothing else names the cache.
func prefixReuseWhen(s *Signals) bool {
	pc := s.cfg.prefixCaching
	if pc == nil || !*pc || !(s.v(SigFinished) >= s.th.MinRequests) {
		return false
	}
	return s.reuse() >= s.th.PrefixReuseHit && s.v(SigPromptRate)/s.v(SigGenRate) >= s.th.PromptHeavy
}

// reuse is the share of prompt tokens a cache served: the prefix cache's
// hit rate, or with an offload tier the cached share of prompt tokens,
// which counts those loaded back from host memory too.
func (s *Signals) reuse() float64 {
	if s.cfg.offloadGiB > 0 {
		return math.Max(zeroNaN(s.v(SigHitRate)), zeroNaN(s.v(SigCachedShare)))
	}
	return s.v(SigHitRate)
}

// prefixReuse says what a load that lives on its prefix cache needs: the
// cache on, room for the prefixes between a session's requests, and a
// router that sends a session back to the replica holding its prefix.
func prefixReuse(s *Signals, _ *diagnosis) *Finding {
	hit, ratio := s.v(SigHitRate), s.v(SigPromptRate)/s.v(SigGenRate)
	evs := append(s.evs(SigHitRate, SigPromptMean),
		ev("prompt tokens per generated token", ratio, "", s.p.ratio(s.p.rate(metricspec.PromptTokens), s.p.rate(metricspec.GenerationTokens))))
	inf := fmt.Sprintf("The prefix cache serves %s of prompt tokens, and prompts carry %.1f tokens for every generated one: each request resends a shared prefix and its conversation so far, as agents do between tool calls. "+
		"Its capacity is the cache's: a prefix evicted while its session waits on a tool is recomputed at the next turn.", pct(hit), ratio)
	headroom := Change{Why: "give the KV cache headroom for the sessions between their turns (--kv-cache-memory-bytes, --gpu-memory-utilization): cached prefixes are evicted, least recently used first, when new requests need the blocks, so a session idle through a long tool call loses its conversation first"}
	offload := Change{Flag: "--kv-offloading-size", Why: "or keep evicted prefixes in host memory (vLLM's native CPU offload, in GiB): a session's conversation comes back over PCIe at its next turn instead of being recomputed"}
	if gib := s.cfg.offloadGiB; gib > 0 {
		cached := s.v(SigCachedShare)
		evs = append(evs, s.ev(SigCachedShare))
		inf = fmt.Sprintf("%s of prompt tokens were served from a cache, the prefix cache's hits %s of those looked up: the rest came back from the %g GiB offload tier in host memory over PCIe, and prompts carry %.1f tokens for every generated one: each request resends a shared prefix and its conversation so far, as agents do between tool calls. "+
			"What neither tier holds is recomputed.", pct(cached), pct(hit), gib, ratio)
		offload.Why = fmt.Sprintf("the offload tier (%g GiB) keeps evicted prefixes in host memory: a larger one keeps more sessions' conversations between their turns", gib)
	}
	return &Finding{Title: "the load lives on its prefix cache: prompts resend what earlier ones sent (agent sessions, conversations)",
		Evidence:  evs,
		Inference: inf,
		Changes: []Change{
			{Why: "keep prefix caching on (vLLM's default): without it every turn recomputes the whole conversation"},
			headroom, offload,
			{Why: "behind a router, send a session's turns to the replica that holds its prefix: prefix-aware routing (the Inference Extension's endpoint picker with its prefix-cache scorer; glassbox simulate --router endpoint-picker tries it), not round robin, which spreads a session's prefix over every replica"},
		}}
}
