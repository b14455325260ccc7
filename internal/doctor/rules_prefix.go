package doctor

import (
	"fmt"

	"github.com/glassbox-llm/glassbox/internal/metricspec"
)

// prefixReuseHit is the prefix-cache hit rate at which a load's prompts
// are mostly what earlier requests already sent: agent sessions and chats
// resending their conversation, behind a shared system prompt. It is not a
// tuned threshold: below it the cache still helps, and prefix-caching's
// rule judges whether it is evicted.
const prefixReuseHit = 0.5

// prefixReuseWhen: prefix caching is on, serves most of a prompt-heavy
// load's prompt tokens, and nothing else names the cache.
func prefixReuseWhen(s *Signals) bool {
	pc := s.cfg.prefixCaching
	if pc == nil || !*pc || !(s.v(sigFinished) >= 3) {
		return false
	}
	return s.v(sigHitRate) >= prefixReuseHit && s.v(sigPromptRate)/s.v(sigGenRate) >= s.th.PromptHeavy
}

// prefixReuse says what a load that lives on its prefix cache needs: the
// cache on, room for the prefixes between a session's requests, and a
// router that sends a session back to the replica holding its prefix.
func prefixReuse(s *Signals, _ *diagnosis) *Finding {
	hit, ratio := s.v(sigHitRate), s.v(sigPromptRate)/s.v(sigGenRate)
	return &Finding{Title: "the load lives on its prefix cache: prompts resend what earlier ones sent (agent sessions, conversations)",
		Evidence: append(s.evs(sigHitRate, sigPromptMean),
			ev("prompt tokens per generated token", ratio, "", s.p.ratio(s.p.rate(metricspec.PromptTokens), s.p.rate(metricspec.GenerationTokens)))),
		Inference: fmt.Sprintf("The prefix cache serves %s of prompt tokens, and prompts carry %.1f tokens for every generated one: each request resends a shared prefix and its conversation so far, as agents do between tool calls. "+
			"Its capacity is the cache's: a prefix evicted while its session waits on a tool is recomputed at the next turn.", pct(hit), ratio),
		Changes: []Change{
			{Why: "keep prefix caching on (vLLM's default): without it every turn recomputes the whole conversation"},
			{Why: "give the KV cache headroom for the sessions between their turns (--kv-cache-memory-bytes, --gpu-memory-utilization): cached prefixes are evicted, least recently used first, when new requests need the blocks, so a session idle through a long tool call loses its conversation first"},
			{Why: "behind a router, send a session's turns to the replica that holds its prefix: prefix-aware routing (the Inference Extension's endpoint picker with its prefix-cache scorer; glassbox simulate --router endpoint-picker tries it), not round robin, which spreads a session's prefix over every replica"},
		}}
}
