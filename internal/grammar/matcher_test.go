package grammar

import (
	"math/rand/v2"
	"testing"
)

// refMask is the mask by brute force: every token whose bytes a fresh
// matcher accepts after history.
func refMask(c *Compiled, history []int) []uint64 {
	mask := make([]uint64, c.v.MaskWords())
	for tok := range c.v.size {
		mt := c.NewMatcher()
		ok := true
		for _, h := range history {
			ok = ok && mt.Accept(h)
		}
		if ok && mt.Accept(tok) {
			mask[tok>>6] |= 1 << (tok & 63)
		}
	}
	return mask
}

// tinyJSON is a small recursive grammar: values are numbers, "ab"
// strings, arrays and objects, with optional spaces.
func tinyJSON(t *testing.T) *Grammar {
	b := NewBuilder()
	ws := Rep(Lit(" "), 0, 2)
	value := b.Rule("value")
	str := Seq(Lit(`"`), Star(Alt(Bytes('a', 'b'), Lit(`\"`))), Lit(`"`))
	num := Seq(Opt(Lit("-")), Alt(Lit("0"), Seq(Bytes('1', '9'), Star(Bytes('0', '9')))))
	arr := Seq(Lit("["), ws, Opt(Seq(value, ws, Star(Seq(Lit(","), ws, value, ws)))), Lit("]"))
	obj := Seq(Lit("{"), ws, Opt(Seq(str, ws, Lit(":"), ws, value, ws)), Lit("}"))
	b.Define("value", Alt(b.Rule("string"), num, arr, obj, Lit("true")))
	b.Define("string", str)
	b.Define("root", Seq(value))
	g, err := b.Build("root")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func randomVocab(rng *rand.Rand, n int, alphabet string) *Vocab {
	pieces := make([][]byte, n)
	for i := range pieces {
		l := 1 + rng.IntN(4)
		if i < len(alphabet) {
			pieces[i] = []byte{alphabet[i]}
			continue
		}
		for range l {
			pieces[i] = append(pieces[i], alphabet[rng.IntN(len(alphabet))])
		}
	}
	pieces[n-1] = nil // a special token: EOS
	return NewVocab(n, func(id int) []byte { return pieces[id] }, []int{n - 1})
}

// TestMaskMatchesBruteForce: along random walks through the grammar, every
// mask equals the set of tokens a fresh matcher accepts there.
func TestMaskMatchesBruteForce(t *testing.T) {
	g := tinyJSON(t)
	rng := rand.New(rand.NewPCG(1, 2))
	v := randomVocab(rng, 300, `"ab\\-0123456789[]{},: tru e`)
	c := Compile(g, v)
	for walk := range 30 {
		mt := c.NewMatcher()
		var history []int
		for step := 0; step < 40; step++ {
			mask := make([]uint64, v.MaskWords())
			mt.FillMask(mask)
			want := refMask(c, history)
			for i := range mask {
				if mask[i] != want[i] {
					t.Fatalf("walk %d after %q: mask word %d = %064b, want %064b", walk, decode(v, history), i, mask[i], want[i])
				}
			}
			var allowed []int
			for tok := range v.size {
				if mask[tok>>6]&(1<<(tok&63)) != 0 {
					allowed = append(allowed, tok)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("walk %d after %q: nothing allowed", walk, decode(v, history))
			}
			tok := allowed[rng.IntN(len(allowed))]
			if !mt.Accept(tok) {
				t.Fatalf("walk %d: allowed token %q refused", walk, v.TokenBytes(tok))
			}
			history = append(history, tok)
			if v.IsEOS(tok) {
				break
			}
		}
	}
}

func decode(v *Vocab, ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, v.TokenBytes(id)...)
	}
	return string(b)
}

// clone copies a matcher, arena and all, for brute-force checks.
func clone(mt *Matcher) *Matcher {
	m := &machine{g: mt.m.g, nodes: append([]snode(nil), mt.m.nodes...), index: make(map[snode]int32, len(mt.m.index))}
	for k, v := range mt.m.index {
		m.index[k] = v
	}
	return &Matcher{c: mt.c, m: m, kernel: append([]thread(nil), mt.kernel...), accept: mt.accept, finished: mt.finished}
}

// bruteMask is every token a copy of mt accepts.
func bruteMask(mt *Matcher) []uint64 {
	v := mt.c.v
	mask := make([]uint64, v.MaskWords())
	for tok := range v.size {
		if v.TokenBytes(tok) == nil && !v.IsEOS(tok) {
			continue
		}
		if clone(mt).Accept(tok) {
			mask[tok>>6] |= 1 << (tok & 63)
		}
	}
	return mask
}

// TestMaskExactOnQwenVocab: over a real 152k vocabulary, the mask at
// points along a structured output is exactly the set of tokens the
// matcher accepts there, neither wider nor narrower.
func TestMaskExactOnQwenVocab(t *testing.T) {
	if testing.Short() {
		t.Skip("brute force over 152k tokens; run without -short")
	}
	v := realVocab(t, "qwen3")
	tok := qwenTokenizer(t)
	g, err := JSONSchema([]byte(benchSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(g, v)
	mt := c.NewMatcher()
	mask := make([]uint64, v.MaskWords())
	toks := tok.Encode(benchOutput, false, false)
	for i, id := range toks {
		if i%9 == 0 || i == len(toks)-1 {
			mt.FillMask(mask)
			want := bruteMask(mt)
			for w := range mask {
				if mask[w] != want[w] {
					diff := mask[w] ^ want[w]
					bad := w*64 + trailing(diff)
					t.Fatalf("after %q: token %d %q allowed=%v, brute force says %v", decode(v, toks[:i]), bad, v.TokenBytes(bad),
						mask[w]&(1<<(bad&63)) != 0, want[w]&(1<<(bad&63)) != 0)
				}
			}
		}
		if !mt.Accept(id) {
			t.Fatalf("token %q refused after %q", v.TokenBytes(id), decode(v, toks[:i]))
		}
	}
	if !mt.CanEnd() {
		t.Error("the complete output cannot end")
	}
}

// TestJSONMarksItsOutput: matchers of a JSON Schema's grammar (with a
// suffix too, and lazily) and of json_object's say their output is JSON,
// for the simulated model; regular expressions, choices and GBNF do not.
func TestJSONMarksItsOutput(t *testing.T) {
	v := jsonAlphabetVocab(rand.New(rand.NewPCG(1, 1)))
	for _, c := range []struct {
		spec Spec
		json bool
	}{
		{Spec{Kind: KindJSON, Text: `{"type":"integer"}`}, true},
		{Spec{Kind: KindJSON, Text: `{"type":"object"}`, Suffix: "</call>"}, true},
		{Spec{Kind: KindJSONObject}, true},
		{Spec{Kind: KindRegex, Text: `\{[a-z]+\}`}, false},
		{Spec{Kind: KindChoice, Choices: []string{"{}", "[]"}}, false},
		{Spec{Kind: KindGrammar, Text: `root ::= "{" "}"`}, false},
	} {
		g, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		compiled := Compile(g, v)
		if got, lazy := compiled.NewMatcher().JSON(), compiled.NewLazy("<call>").JSON(); got != c.json || lazy != c.json {
			t.Errorf("%+v: JSON() %v, lazily %v, want %v", c.spec, got, lazy, c.json)
		}
	}
}
