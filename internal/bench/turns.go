package bench

import (
	"fmt"
	"io"
)

// TurnMetrics is one turn of an agent-session load, over every session's
// request at that turn: how long the prompt has grown, how much of it the
// server's prefix cache served, and the time to first token, which an
// agent waits on before each of its tools runs — from when the request was
// sent (the server's share) and from when the turn was due (what the agent
// waited, a client-side hold included).
type TurnMetrics struct {
	Turn             int // from 1
	Requests, Failed int
	PromptTokens     int // Σ over the turn's successful requests
	// CachedTokens is Σ of the server's usage.prompt_tokens_details.
	// cached_tokens over the requests that report it, Reported how many
	// do: the cache's hit rate is CachedTokens over those requests'
	// prompt tokens.
	CachedTokens, CachedOf, Reported int
	TTFT, TTFTFromDue                Dist
}

// HitRate is the share of the turn's prompt tokens the prefix cache
// served, or -1 when the server reported no cached tokens.
func (t *TurnMetrics) HitRate() float64 {
	if t.Reported == 0 || t.CachedOf == 0 {
		return -1
	}
	return float64(t.CachedTokens) / float64(t.CachedOf)
}

// turnMetrics groups outputs by their agent turn.
func turnMetrics(outputs []Output, turns int, percentiles []float64) []TurnMetrics {
	out := make([]TurnMetrics, turns)
	ttfts, fromDue := make([][]float64, turns), make([][]float64, turns)
	for _, o := range outputs {
		if o.Turn < 0 || o.Turn >= turns || o.Start.IsZero() {
			continue
		}
		t := &out[o.Turn]
		t.Requests++
		if !o.Success {
			t.Failed++
			continue
		}
		t.PromptTokens += o.PromptLen
		if o.CachedTokens != nil {
			t.Reported++
			t.CachedTokens += *o.CachedTokens
			t.CachedOf += o.PromptLen
		}
		if !o.Unary {
			ttfts[o.Turn] = append(ttfts[o.Turn], o.TTFT.Seconds())
			fromDue[o.Turn] = append(fromDue[o.Turn], (o.QueueTime + o.TTFT).Seconds())
		}
	}
	for i := range out {
		out[i].Turn = i + 1
		out[i].TTFT = newDist(ttfts[i], percentiles)
		out[i].TTFTFromDue = newDist(fromDue[i], percentiles)
	}
	return out
}

// writeTurns prints one line per agent turn.
func writeTurns(w io.Writer, p *Pass) {
	fmt.Fprintln(w, center(" Agent sessions by turn ", "-", 50))
	pct := "p99"
	if n := len(p.Turns); n > 0 && len(p.Turns[0].TTFT.Percentiles) > 0 {
		last := p.Turns[0].TTFT.Percentiles[len(p.Turns[0].TTFT.Percentiles)-1]
		pct = "p" + percentileWord(last.P)
	}
	fmt.Fprintf(w, "%-5s %8s %10s %10s %13s %13s %13s\n", "turn", "requests", "prompt tok", "cache hits", "mean TTFT ms", pct+" TTFT ms", "from due ms")
	for _, t := range p.Turns {
		hit := "-"
		if r := t.HitRate(); r >= 0 {
			hit = fmt.Sprintf("%.1f%%", 100*r)
		}
		ok := t.Requests - t.Failed
		mean := 0.0
		if ok > 0 {
			mean = float64(t.PromptTokens) / float64(ok)
		}
		p99 := 0.0
		if n := len(t.TTFT.Percentiles); n > 0 {
			p99 = t.TTFT.Percentiles[n-1].Value
		}
		fmt.Fprintf(w, "%-5d %8d %10.0f %10s %13.2f %13.2f %13.2f\n", t.Turn, t.Requests, mean, hit, t.TTFT.Mean, p99, t.TTFTFromDue.Mean)
	}
}

// turnObjects are the turns under the result's "turns" key.
func turnObjects(turns []TurnMetrics) []object {
	var out []object
	for _, t := range turns {
		var hit any
		if r := t.HitRate(); r >= 0 {
			hit = r
		}
		o := object{{"turn", t.Turn}, {"requests", t.Requests}, {"failed", t.Failed}, {"total_input_tokens", t.PromptTokens},
			{"cached_tokens", t.CachedTokens}, {"prefix_cache_hit_rate", hit}, {"mean_ttft_ms", t.TTFT.Mean}, {"median_ttft_ms", t.TTFT.Median}}
		for _, pc := range t.TTFT.Percentiles {
			o = append(o, field{"p" + percentileWord(pc.P) + "_ttft_ms", pc.Value})
		}
		o = append(o, field{"mean_ttft_from_due_ms", t.TTFTFromDue.Mean}, field{"median_ttft_from_due_ms", t.TTFTFromDue.Median})
		for _, pc := range t.TTFTFromDue.Percentiles {
			o = append(o, field{"p" + percentileWord(pc.P) + "_ttft_from_due_ms", pc.Value})
		}
		out = append(out, o)
	}
	return out
}
