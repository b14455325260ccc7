package speculative

// Ngram is vLLM's prompt-lookup proposer: it finds the longest n-gram
// (between Min and Max tokens) that ends the context and also occurs
// earlier in it, and drafts the tokens that followed that earlier
// occurrence.
type Ngram struct {
	Min, Max int
}

// Propose appends to dst up to k tokens that followed the earliest of the
// longest earlier occurrences of the context's final n-gram, Min ≤ n ≤
// Max; fewer when the context ends first, none without a match. As vLLM's
// (its KMP over the reversed tokens), an occurrence must end before the
// context's last token, so at least one token follows it.
func (g Ngram) Propose(dst []int, tokens []int, k int) []int {
	n := len(tokens)
	if k <= 0 || n < g.Min || g.Min < 1 {
		return dst
	}
	last := tokens[n-1]
	best, bestEnd := 0, -1 // longest match so far, and where its occurrence ends
	for end := 0; end < n-1; end++ {
		if tokens[end] != last {
			continue
		}
		// Length of the common suffix of tokens[:end+1] and tokens, at
		// most Max.
		m := 1
		for m < g.Max && m <= end && tokens[end-m] == tokens[n-1-m] {
			m++
		}
		if m > best { // strictly longer: the earliest occurrence of a length wins
			best, bestEnd = m, end
			if m == g.Max {
				break
			}
		}
	}
	if best < g.Min {
		return dst
	}
	start := bestEnd + 1
	return append(dst, tokens[start:min(start+k, n)]...)
}
