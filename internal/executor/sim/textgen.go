package sim

// The text generator stands in for a model's forward pass. For each
// sequence it derives, from a hash of the recent context, about 32
// candidate next tokens and a logit for each. The candidates follow a tiny
// grammar (determiner → adjective or noun → verb → …), so that sampled
// output reads like English sentences, and the end of a sentence may be
// followed by EOS, so that a typical completion is a few hundred tokens
// long. Logits depend only on the context, never on the request's random
// source: greedy decoding is a function of the prompt, and seeded sampling a
// function of seed and prompt, as with a real model.

const numCandidates = 32

// genState is what the previous token says about what may come next.
type genState uint8

const (
	stateLineStart genState = iota // nothing yet, or after a newline: capitalised, no space
	stateSentence                  // after ".", "!" or "?": EOS, a paragraph or a capitalised word
	stateComma
	stateWord // after a word; its class picks the successors
	stateOther
)

// successor is one class that may follow, with its relative weight.
type successor struct {
	class  wordClass
	weight uint32
}

// grammar returns the classes that may follow a word of each class (and,
// at classNone, a sentence start or a comma), and whether a period or comma
// may follow. It is a function, not a table variable, to keep the package
// free of globals; textGen calls it once.
func grammar() (next [numClasses][]successor, period, comma [numClasses]bool) {
	next[classNone] = []successor{{classDet, 5}, {classSubject, 3}, {classAdv, 1}, {classPrep, 1}}
	next[classDet] = []successor{{classAdj, 3}, {classNoun, 7}}
	next[classSubject] = []successor{{classVerb, 8}, {classAdv, 2}}
	next[classObject] = []successor{{classPrep, 4}, {classAdv, 2}, {classConj, 2}}
	next[classNoun] = []successor{{classVerb, 4}, {classPrep, 4}, {classConj, 2}}
	next[classVerb] = []successor{{classDet, 5}, {classObject, 2}, {classAdv, 2}, {classPrep, 2}}
	next[classAdj] = []successor{{classNoun, 8}, {classAdj, 1}}
	next[classAdv] = []successor{{classVerb, 4}, {classAdj, 2}, {classDet, 2}}
	next[classPrep] = []successor{{classDet, 6}, {classNoun, 2}, {classObject, 1}, {classAdj, 1}}
	next[classConj] = []successor{{classDet, 4}, {classSubject, 4}, {classAdv, 1}, {classNoun, 1}}
	for _, c := range []wordClass{classNoun, classObject, classVerb, classAdv} {
		period[c] = true
	}
	for _, c := range []wordClass{classNoun, classObject, classAdv, classAdj} {
		comma[c] = true
	}
	return next, period, comma
}

// afterComma is what may follow a comma.
func afterComma() []successor {
	return []successor{{classConj, 4}, {classDet, 2}, {classSubject, 2}, {classAdv, 1}, {classPrep, 1}}
}

// textGen builds candidate lists. It owns its buffers: one per executor.
type textGen struct {
	v                            *Vocab
	next                         [numClasses][]successor
	period, comma                [numClasses]bool
	afterComma                   []successor
	tokPeriod, tokComma, tokPara int32
	wordA, wordAn                int32 // word indices of "a" and "an"

	cands  []int32   // vocabulary ids
	logits []float32 // one per candidate
	taken  [numClasses]int32
}

func newTextGen(v *Vocab) *textGen {
	g := &textGen{
		v:          v,
		afterComma: afterComma(),
		tokPeriod:  '.',
		tokComma:   ',',
		cands:      make([]int32, 0, numCandidates),
		logits:     make([]float32, 0, numCandidates),
	}
	para, _ := v.ID("\n\n")
	g.tokPara = int32(para)
	a, _ := v.ID(" a")
	an, _ := v.ID(" an")
	g.wordA, g.wordAn = v.tokWord[a], v.tokWord[an]
	g.next, g.period, g.comma = grammar()
	return g
}

// mix is splitmix64's finaliser: a cheap, well-spread hash step.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// unit maps a hash to [0, 1).
func unit(h uint64) float32 { return float32(h>>40) / (1 << 24) }

// contextHash summarises what the candidates depend on: the last three
// tokens, the length so far (so greedy output does not cycle) and both
// ends of the prompt (so different prompts read differently).
func contextHash(h []int, numPrompt int) uint64 {
	x := mix(uint64(len(h)) + 0x9e3779b97f4a7c15)
	for i := max(0, len(h)-3); i < len(h); i++ {
		x = mix(x ^ uint64(h[i]))
	}
	numPrompt = min(numPrompt, len(h))
	for i := 0; i < min(4, numPrompt); i++ {
		x = mix(x ^ uint64(h[i])<<1)
	}
	for i := max(0, numPrompt-4); i < numPrompt; i++ {
		x = mix(x ^ uint64(h[i])<<2)
	}
	return x
}

// Which initial letter the next word needs, after "a" or "an".
const (
	anyInitial = iota
	consonantInitial
	vowelInitial
)

// state classifies the last token of h, counts the tokens since the current
// sentence began and says what initial an article asks of the next word.
func (g *textGen) state(h []int) (s genState, class wordClass, sentLen, initial int) {
	if len(h) == 0 {
		return stateLineStart, classNone, 0, anyInitial
	}
	for i := len(h) - 1; i >= 0 && sentLen < 64; i-- {
		if t := h[i]; t == '.' || t == '!' || t == '?' || t == '\n' || int32(t) == g.tokPara {
			break
		}
		sentLen++
	}
	last := h[len(h)-1]
	switch {
	case last == '.' || last == '!' || last == '?':
		return stateSentence, classNone, sentLen, anyInitial
	case last == '\n' || int32(last) == g.tokPara || g.v.IsSpecial(last):
		return stateLineStart, classNone, sentLen, anyInitial
	case last == ',':
		return stateComma, classNone, sentLen, anyInitial
	case last >= 0 && last < len(g.v.tokWord) && g.v.tokWord[last] >= 0:
		w := g.v.tokWord[last]
		initial = anyInitial
		switch w {
		case g.wordA:
			initial = consonantInitial
		case g.wordAn:
			initial = vowelInitial
		}
		return stateWord, g.v.words[w].class, sentLen, initial
	}
	return stateOther, classNoun, sentLen, anyInitial
}

// candidates fills g.cands and g.logits for the token after h.
func (g *textGen) candidates(h []int, numPrompt int) ([]int32, []float32) {
	g.cands, g.logits = g.cands[:0], g.logits[:0]
	g.taken = [numClasses]int32{}
	x := contextHash(h, numPrompt)
	s, class, sentLen, initial := g.state(h)
	succ := g.next[class]
	form := func(w *word) int32 { return w.space }

	switch s {
	case stateLineStart:
		succ = g.next[classNone]
		form = func(w *word) int32 { return w.cap }
	case stateSentence:
		// Greedy decoding ends about one sentence in 40; sampling at
		// temperature 1 adds about 5% a sentence (logit 2.8 against the
		// words' ~300 total weight), so completions run to a few hundred
		// tokens. There is no EOS straight after the prompt: an empty
		// completion is rare for real models and useless for load tests.
		if len(h) > numPrompt {
			eos := float32(2.8)
			if mix(x^0xe05)%40 == 0 {
				eos = 9
			}
			g.push(tokEOS, eos)
		}
		para := float32(2.8)
		if mix(x^0x9a7)%6 == 0 {
			para = 8
		}
		g.push(g.tokPara, para)
		succ = g.next[classNone]
		form = func(w *word) int32 { return w.capSpace }
	case stateComma:
		succ = g.afterComma
	}
	if s == stateWord || s == stateOther {
		if g.period[class] {
			// Sentences grow likelier to end the longer they get: even
			// odds against the best word near 15 tokens.
			g.push(g.tokPeriod, -1+0.4*float32(sentLen-5)+unit(mix(x^0x2e)))
		}
		if g.comma[class] && sentLen > 4 {
			g.push(g.tokComma, 0.3+1.2*unit(mix(x^0x2c)))
		}
	}
	g.fillWords(x, succ, form, initial)
	return g.cands, g.logits
}

func (g *textGen) push(id int32, logit float32) {
	g.cands = append(g.cands, id)
	g.logits = append(g.logits, logit)
}

// fillWords tops the candidates up to numCandidates with words of the
// successor classes, picked by weight; each class is walked with a stride
// coprime to its size, so no word appears twice, skipping words whose
// initial does not suit a preceding article. Logits fall with the slot (a
// Zipf-like spread) plus a hash jitter that reorders neighbours.
func (g *textGen) fillWords(x uint64, succ []successor, form func(*word) int32, initial int) {
	var total uint32
	for _, s := range succ {
		total += s.weight
	}
	for slot := 0; len(g.cands) < numCandidates; slot++ {
		h := mix(x + uint64(slot)*0x9e3779b97f4a7c15)
		pick := uint32(h % uint64(total))
		class := succ[len(succ)-1].class
		for _, s := range succ {
			if pick < s.weight {
				class = s.class
				break
			}
			pick -= s.weight
		}
		w := g.pickWord(x, class, initial)
		if w == nil {
			w = g.pickWord(x, classNoun, initial)
		}
		g.push(form(w), 3-0.15*float32(slot)+1.5*unit(h))
	}
}

// pickWord returns the next unused word of class with the wanted initial,
// or nil when the class has none left.
func (g *textGen) pickWord(x uint64, class wordClass, initial int) *word {
	list := g.v.byClass[class]
	n := uint64(len(list))
	start := mix(x ^ uint64(class))
	for int(g.taken[class]) < len(list) {
		// 7919 is a prime larger than any list, hence coprime to its size.
		i := (start + uint64(g.taken[class])*7919) % n
		g.taken[class]++
		w := &g.v.words[list[i]]
		if initial == anyInitial || (initial == vowelInitial) == w.vowel {
			return w
		}
	}
	return nil
}
