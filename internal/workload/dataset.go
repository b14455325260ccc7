package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
)

// DatasetConfig chooses the prompts. The defaults are vLLM's.
type DatasetConfig struct {
	// Name is "random" (default), "sharegpt", "prefix-repetition",
	// "custom", "sonnet", "burstgpt", "hf" (vLLM's), "trace" (glassbox's:
	// a request trace replayed at its times) or "agent" (glassbox's: agent
	// sessions, a plan of their own).
	Name string
	Path string // the file (or, for hf, the hub dataset) of the named dataset

	RandomInputLen   int     // default 1024
	RandomOutputLen  int     // default 128
	RandomRangeRatio float64 // lengths drawn uniformly from [L(1-r), L(1+r)]; 0 to <1
	RandomPrefixLen  int     // tokens of one shared prefix put before every random prompt

	SharegptOutputLen int // overrides the length of the dataset's completions
	CustomOutputLen   int // default 256

	PrefixLen, SuffixLen, NumPrefixes, PrefixOutputLen int // prefix-repetition: 256, 256, 10, 128

	SonnetInputLen, SonnetOutputLen, SonnetPrefixLen int // sonnet: 550, 150, 200

	// hf: --hf-subset, --hf-split (default train), --hf-name (the hub
	// dataset a local --dataset-path copies), --hf-output-len; Rows reads
	// the hub.
	HFSubset, HFSplit, HFName string
	HFOutputLen               int
	Rows                      HFRows

	NoOversample     bool // --no-oversample
	DisableShuffle   bool // --disable-shuffle
	SkipChatTemplate bool // --skip-chat-template
}

// Check fills the defaults and checks the rest.
func (d *DatasetConfig) Check() error {
	switch d.Name {
	case "":
		d.Name = "random"
	case "random", "prefix-repetition", "agent":
	case "prefix_repetition":
		d.Name = "prefix-repetition"
	case "sharegpt", "custom", "sonnet", "burstgpt", "hf", "trace":
		if d.Path == "" {
			return fmt.Errorf("check dataset %s: a --dataset-path is required", d.Name)
		}
	case "random-mm", "random-rerank", "spec_bench", "txt-slices":
		return fmt.Errorf("check dataset %q: vLLM's multimodal, rerank, spec-bench and txt-slices datasets are not built in glassbox", d.Name)
	default:
		return fmt.Errorf("check dataset %q: want random, sharegpt, prefix-repetition, custom, sonnet, burstgpt, hf, trace or agent", d.Name)
	}
	if d.Name == "random" && d.Path != "" {
		return fmt.Errorf("check dataset: the random dataset takes no --dataset-path %s (as vLLM; name the dataset with --dataset-name)", d.Path)
	}
	def := func(v *int, x int) {
		if *v == 0 {
			*v = x
		}
	}
	def(&d.RandomInputLen, 1024)
	def(&d.RandomOutputLen, 128)
	def(&d.CustomOutputLen, 256)
	def(&d.PrefixLen, 256)
	def(&d.SuffixLen, 256)
	def(&d.NumPrefixes, 10)
	def(&d.PrefixOutputLen, 128)
	def(&d.SonnetInputLen, 550)
	def(&d.SonnetOutputLen, 150)
	def(&d.SonnetPrefixLen, 200)
	if !(d.RandomRangeRatio >= 0 && d.RandomRangeRatio < 1) {
		return errors.New("check dataset: --random-range-ratio must be in [0, 1)")
	}
	for _, v := range []int{d.RandomInputLen, d.RandomOutputLen, d.RandomPrefixLen, d.SharegptOutputLen, d.CustomOutputLen, d.PrefixLen, d.SuffixLen,
		d.NumPrefixes, d.PrefixOutputLen, d.SonnetInputLen, d.SonnetOutputLen, d.SonnetPrefixLen, d.HFOutputLen} {
		if v < 0 {
			return errors.New("check dataset: lengths must not be negative")
		}
	}
	return nil
}

// LoadSamples builds n samples of the configured dataset.
func LoadSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	switch d.Name {
	case "sharegpt":
		return shareGPTSamples(ctx, d, n, tc, rng)
	case "custom":
		return customSamples(ctx, d, n, tc, rng)
	case "prefix-repetition":
		return prefixRepetitionSamples(ctx, d, n, tc, rng)
	case "sonnet":
		return sonnetSamples(ctx, d, n, tc, rng)
	case "burstgpt":
		return burstGPTSamples(ctx, d, n, tc, rng)
	case "hf":
		return hfSamples(ctx, d, n, tc, rng)
	case "trace":
		return nil, errors.New("load dataset trace: a trace is a plan of its own (TracePlan), not samples")
	case "agent":
		return nil, errors.New("load dataset agent: agent sessions are a plan of their own (NewAgentPlan), not samples")
	}
	return randomSamples(ctx, d, n, tc, rng)
}

// randomSamples is vLLM's random dataset: input and output lengths drawn
// uniformly from [⌊L(1−r)⌋, ⌊L(1+r)⌋] (output at least 1), each prompt made
// of random words fitted to its length, after an optional shared prefix.
func randomSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	if it, ok := tc.(IDTokenizer); ok {
		return randomIDSamples(ctx, d, n, it, rng)
	}
	inLo, inHi := lengthRange(d.RandomInputLen, d.RandomRangeRatio)
	outLo, outHi := lengthRange(d.RandomOutputLen, d.RandomRangeRatio)
	outLo = max(outLo, 1)
	outHi = max(outHi, outLo)
	prefix := ""
	if d.RandomPrefixLen > 0 {
		p, _, err := fitText(ctx, tc, "", d.RandomPrefixLen, rng)
		if err != nil {
			return nil, err
		}
		prefix = p + " "
	}
	lens := make([][2]int, n)
	seeds := make([]uint64, n)
	for i := range lens {
		lens[i] = [2]int{inLo + rng.IntN(inHi-inLo+1), outLo + rng.IntN(outHi-outLo+1)}
		seeds[i] = rng.Uint64()
	}
	return buildParallel(ctx, n, func(ctx context.Context, i int) (Sample, error) {
		r := rand.New(rand.NewPCG(seeds[i], uint64(i)))
		text, got, err := fitText(ctx, tc, prefix, d.RandomPrefixLen+lens[i][0], r)
		return Sample{Prompt: text, PromptLen: got, OutputLen: lens[i][1]}, err
	})
}

// randomIDSamples is vLLM's RandomDataset with a tokenizer that converts:
// each prompt is a run of consecutive token ids after an optional shared
// prefix, decoded and re-encoded until the text has exactly the drawn
// length, which the server then counts (its BOS included) as
// --random-input-len.
func randomIDSamples(ctx context.Context, d DatasetConfig, n int, tk IDTokenizer, rng *rand.Rand) ([]Sample, error) {
	v := tk.VocabSize()
	if v < 2 {
		return nil, fmt.Errorf("random dataset: the tokenizer has %d ids", v)
	}
	real := max(d.RandomInputLen-tk.SpecialTokens(), 0)
	inLo := int(math.Floor(float64(real) * (1 - d.RandomRangeRatio)))
	inHi := int(math.Ceil(float64(real) * (1 + d.RandomRangeRatio)))
	outLo := max(int(math.Floor(float64(d.RandomOutputLen)*(1-d.RandomRangeRatio))), 1)
	outHi := max(int(math.Ceil(float64(d.RandomOutputLen)*(1+d.RandomRangeRatio))), outLo)
	if d.RandomPrefixLen+inLo < 1 {
		return nil, errors.New("random dataset: the prompts would be empty")
	}
	lo := FirstWordID(v)
	prefix := make([]int, d.RandomPrefixLen)
	for i := range prefix {
		prefix[i] = lo + rng.IntN(v-lo)
	}
	type plan struct {
		in, out, offset int
		seed            uint64
	}
	plans := make([]plan, n)
	for i := range plans {
		plans[i] = plan{inLo + rng.IntN(inHi-inLo+1), outLo + rng.IntN(outHi-outLo+1), rng.IntN(v - lo), rng.Uint64()}
	}
	return buildParallel(ctx, n, func(ctx context.Context, i int) (Sample, error) {
		p := plans[i]
		ids := append(make([]int, 0, len(prefix)+p.in), prefix...)
		for k := range p.in {
			ids = append(ids, lo+(p.offset+i+k)%(v-lo))
		}
		text, got, err := ExactPrompt(ctx, tk, ids, len(ids), rand.New(rand.NewPCG(p.seed, uint64(i))))
		return Sample{Prompt: text, PromptIDs: got, PromptLen: len(got) + tk.SpecialTokens(), OutputLen: p.out}, err
	})
}

// ExactPrompt is vLLM's gen_prompt_decode_to_target_len: decode ids,
// re-encode the text, then append random ids or cut the excess, until the
// text encodes to target tokens. vLLM gives up after ten rounds and warns;
// a cut can merge differently when re-encoded, so this keeps going (with
// fresh random ids each time) for up to fifty. It returns the text and its
// tokens (whose count may still differ if it never settled).
func ExactPrompt(ctx context.Context, tk IDTokenizer, ids []int, target int, rng *rand.Rand) (string, []int, error) {
	var text string
	for remain := 50; ; remain-- {
		var err error
		if text, err = tk.Decode(ctx, ids); err != nil {
			return "", nil, err
		}
		if ids, err = tk.Encode(ctx, text); err != nil {
			return "", nil, err
		}
		switch {
		case remain <= 0 || len(ids) == target:
			return text, ids, nil
		case len(ids) < target:
			lo := FirstWordID(tk.VocabSize())
			for len(ids) < target {
				ids = append(ids, lo+rng.IntN(tk.VocabSize()-lo))
			}
		case remain > 40:
			ids = ids[:target]
		default:
			// A cut that re-encodes longer (a split character, a byte the
			// wire turns into U+FFFD) does so every time: cut as much again
			// and refill with random ids instead.
			ids = ids[:max(2*target-len(ids), 0)]
		}
	}
}

// FirstWordID skips the ids that are single bytes in common vocabularies
// (byte-level BPE's first 256, SentencePiece's 3 specials and 256 byte
// fallbacks, the simulator's first 256): a lone byte past ASCII decodes to
// invalid UTF-8, which the wire turns into U+FFFD, three tokens instead of
// one, and a prompt built of them never settles at its length.
func FirstWordID(vocab int) int { return min(259, vocab/2) }

// RandomTexts makes one random text of each length (0: empty), as
// inference-perf's random token text: exact lengths with a tokenizer that
// converts, else words fitted to the length.
func RandomTexts(ctx context.Context, tk Tokenizer, lens []int, rng *rand.Rand) ([]Sample, error) {
	seeds := make([]uint64, len(lens))
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	return buildParallel(ctx, len(lens), func(ctx context.Context, i int) (Sample, error) {
		n := lens[i]
		if n <= 0 {
			return Sample{}, nil
		}
		r := rand.New(rand.NewPCG(seeds[i], uint64(i)))
		if it, ok := tk.(IDTokenizer); ok {
			v := it.VocabSize()
			lo := FirstWordID(v)
			ids := make([]int, n)
			start := r.IntN(v - lo)
			for k := range ids {
				ids[k] = lo + (start+k)%(v-lo)
			}
			text, got, err := ExactPrompt(ctx, it, ids, n, r)
			return Sample{Prompt: text, PromptIDs: got, PromptLen: len(got)}, err
		}
		text, got, err := fitText(ctx, tk, "", n, r)
		return Sample{Prompt: text, PromptLen: got}, err
	})
}

// prefixRepetitionSamples is vLLM's prefix_repetition dataset: NumPrefixes
// random prefixes, each request one of them plus a random suffix, shuffled,
// so a prefix cache can hit on PrefixLen tokens of most prompts.
func prefixRepetitionSamples(ctx context.Context, d DatasetConfig, n int, tc Tokenizer, rng *rand.Rand) ([]Sample, error) {
	prefixes := make([]string, d.NumPrefixes)
	for i := range prefixes {
		p, _, err := fitText(ctx, tc, "", d.PrefixLen, rng)
		if err != nil {
			return nil, err
		}
		prefixes[i] = p + " "
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	out, err := buildParallel(ctx, n, func(ctx context.Context, i int) (Sample, error) {
		r := rand.New(rand.NewPCG(seeds[i], uint64(i)))
		text, got, err := fitText(ctx, tc, prefixes[i%len(prefixes)], d.PrefixLen+d.SuffixLen, r)
		return Sample{Prompt: text, PromptLen: got, OutputLen: d.PrefixOutputLen}, err
	})
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, err
}

// lengthRange is vLLM's [int(L(1−r)), int(L(1+r))].
func lengthRange(l int, r float64) (lo, hi int) {
	return int(math.Floor(float64(l) * (1 - r))), int(math.Floor(float64(l) * (1 + r)))
}

// fitText appends random words to prefix until the counter says the whole
// text has target tokens, correcting by the difference a few times (a word is
// about one token, but tokenizers differ). It returns the text and its count.
func fitText(ctx context.Context, tc Tokenizer, prefix string, target int, rng *rand.Rand) (string, int, error) {
	words := make([]string, 0, target)
	base := 0
	if prefix != "" {
		c, err := tc.Count(ctx, strings.TrimSpace(prefix))
		if err != nil {
			return "", 0, err
		}
		base = c
	}
	want := max(target-base, 1)
	for range want {
		words = append(words, vocabulary[rng.IntN(len(vocabulary))])
	}
	text := prefix + strings.Join(words, " ")
	got := 0
	for range 8 {
		c, err := tc.Count(ctx, text)
		if err != nil {
			return "", 0, err
		}
		got = c
		switch {
		case got == target:
			return text, got, nil
		case got > target && len(words) > 1:
			words = words[:max(1, len(words)-(got-target))]
		case got < target:
			for range target - got {
				words = append(words, vocabulary[rng.IntN(len(vocabulary))])
			}
		default:
			return text, got, nil
		}
		text = prefix + strings.Join(words, " ")
	}
	c, err := tc.Count(ctx, text)
	return text, c, err
}

// buildParallel runs build for 0..n-1 on a few goroutines (each dataset
// sample may take several /tokenize round trips) and keeps the order.
func buildParallel(ctx context.Context, n int, build func(context.Context, int) (Sample, error)) ([]Sample, error) {
	out := make([]Sample, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, 16) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = build(ctx, i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// RandomWord is one of vocabulary's words, drawn from rng.
func RandomWord(rng *rand.Rand) string { return vocabulary[rng.IntN(len(vocabulary))] }

// vocabulary is common English words that most tokenizers (and glassbox's
// simulator) keep as single tokens with a leading space.
var vocabulary = strings.Fields(`the of and to in is was for on that with as by at from his her he she it they
we you are were be been have has had not but or an this which their there all one two three new time
year people way day man woman child world life hand part place case week company system program
question work government number night point home water room mother area money story fact month lot
right study book eye job word business issue side kind head house service friend father power hour
game line end member law car city community name president team minute idea kid body information back
parent face others level office door health person art war history party result change morning
reason research girl guy moment air teacher force education good first last long great little own
other old big high different small large next early young important few public bad same able make
go know take see come think look want give use find tell ask seem feel try leave call keep let
begin show hear play run move live believe bring happen write provide sit stand lose pay meet include
continue set learn lead understand watch follow stop create speak read allow add spend grow open walk
win offer remember love consider appear buy wait serve die send expect build stay fall cut reach
kill remain suggest raise pass sell require report decide pull`)
