package sim

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	gbgrammar "github.com/glassbox-llm/glassbox/internal/grammar"
)

// TestStructuredOutputsLookLikeAModel: where a schema leaves the model a
// choice, the fake model fills it as a model does, the same for the same
// seed: arrays without minItems hold a few values of one type, objects
// take their optional properties, json_object's keys are words and its
// values plausible, strings open with a capitalised word, numbers are
// short decimals; bounds hold.
func TestStructuredOutputsLookLikeAModel(t *testing.T) {
	e := newExec(t, Config{})
	v := e.Vocab()
	cache := gbgrammar.NewCache(func() *gbgrammar.Vocab { return gbgrammar.NewVocab(v.Size(), v.TokenBytes, []int{v.EOS()}) }, 8)
	gen := func(spec gbgrammar.Spec, seed uint64) any {
		t.Helper()
		c, err := cache.Get(spec)
		if err != nil {
			t.Fatal(err)
		}
		text := constrained(t, e, c.NewMatcher(), seed)
		if again := constrained(t, e, c.NewMatcher(), seed); again != text {
			t.Fatalf("seed %d: %q, then %q", seed, text, again)
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("seed %d: %q is not JSON: %v", seed, text, err)
		}
		return x
	}
	number := regexp.MustCompile(`^-?[1-9][0-9]{0,4}(\.[0-9]{1,2})?$|^-?0(\.[0-9]{1,2})?$`)
	word := regexp.MustCompile(`^[a-z]+$`)
	value := regexp.MustCompile(`^[A-Z][a-z]*( [A-Za-z]+)*[.,]?( [A-Za-z]+)*\.?$`)
	const n = 100
	var filled, items, objects, keys int
	for seed := range uint64(n) {
		list := gen(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: `{"type":"array","items":{"type":"number"}}`}, seed).([]any)
		if len(list) > 0 {
			filled++
		}
		items += len(list)
		for _, x := range list {
			if num, ok := x.(json.Number); !ok || !number.MatchString(num.String()) {
				t.Errorf("seed %d: %v in a list of numbers", seed, x)
			}
		}
		obj := gen(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}}}`}, seed).(map[string]any)
		if len(obj) > 0 {
			objects++
		}
		for _, tag := range asList(obj["tags"]) {
			if s, ok := tag.(string); !ok || !value.MatchString(s) {
				t.Errorf("seed %d: tag %q", seed, tag)
			}
		}
		free := gen(gbgrammar.Spec{Kind: gbgrammar.KindJSONObject}, seed).(map[string]any)
		keys += len(free)
		for k, x := range free {
			if !word.MatchString(k) {
				t.Errorf("seed %d: json_object key %q is not a word", seed, k)
			}
			if s, ok := x.(string); ok && !value.MatchString(s) {
				t.Errorf("seed %d: json_object value %q", seed, s)
			}
		}
		bounded := gen(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: `{"type":"array","items":{"type":"integer","minimum":10,"maximum":20},"minItems":2,"maxItems":3}`}, seed).([]any)
		if len(bounded) < 2 || len(bounded) > 3 {
			t.Errorf("seed %d: %v breaks minItems 2, maxItems 3", seed, bounded)
		}
	}
	if filled < n*8/10 || float64(items)/float64(filled) < 1.5 || float64(items)/float64(filled) > 4 {
		t.Errorf("lists of numbers without minItems: %d of %d filled, %d values in all; want most filled with a few", filled, n, items)
	}
	if objects < n*8/10 {
		t.Errorf("objects of optional properties: %d of %d have any", objects, n)
	}
	if keys < n {
		t.Errorf("json_object: %d keys in %d objects, want more than one an object", keys, n)
	}
	t.Logf("lists of numbers: %d of %d filled, %.1f values; objects with properties: %d; json_object keys: %.1f an object", filled, n, float64(items)/float64(filled), objects, float64(keys)/n)
}

func asList(x any) []any { l, _ := x.([]any); return l }

// TestScanJSON: the writer's reading of a JSON text so far.
func TestScanJSON(t *testing.T) {
	for _, c := range []struct {
		text  string
		where jsonWhere
		depth int
		count int
	}{
		{``, atValue, 0, 0},
		{`{`, atKey, 1, 0},
		{`{"a`, inString, 1, 0},
		{`{"a"`, atColon, 1, 0},
		{`{"a": [1, 2`, inNumber, 2, 1},
		{`{"a": [1, 2]`, atAfter, 1, 1},
		{`{"a": [1, 2], "b": "x \" y`, inString, 1, 1},
		{`{"a": [1, 2], "b": "x \" y"}`, atEnd, 0, 0},
		{`[tru`, inLiteral, 1, 0},
		{`[true,`, atValue, 1, 1},
	} {
		p := scanJSON([]byte(c.text))
		count := 0
		if len(p.count) > 0 {
			count = p.count[len(p.count)-1]
		}
		if p.where != c.where || len(p.stack) != c.depth || count != c.count {
			t.Errorf("%q: where %d, depth %d, count %d; want %d, %d, %d", c.text, p.where, len(p.stack), count, c.where, c.depth, c.count)
		}
	}
	if p := scanJSON([]byte(`{"a":"Big red`)); p.key || p.strLen != 7 || p.spaces != 1 || !bytes.Equal(p.first, []byte{'"'}) {
		t.Errorf("an open value string: %+v", p)
	}
}

// FuzzScanJSON: no bytes panic the reader; a whole JSON object, array or
// string reads as complete, and none of its proper prefixes does.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, -2.5e3, true, null], "b": {"c": "x\"y"}}`, `["", {}, []]`, `"\\"`, `{"a":`, `[1,`, "\x00\xff{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := scanJSON(b)
		trimmed := bytes.Trim(b, " \t\r\n")
		if !json.Valid(trimmed) || len(trimmed) == 0 || !strings.ContainsRune(`{["`, rune(trimmed[0])) {
			return
		}
		if p.where != atEnd || len(p.stack) != 0 {
			t.Fatalf("%q reads as unfinished: %+v", b, p)
		}
		for i := 1; i < len(trimmed); i++ {
			if q := scanJSON(trimmed[:i]); q.where == atEnd {
				t.Fatalf("the prefix %q of %q reads as complete", trimmed[:i], trimmed)
			}
		}
	})
}

// TestRecursiveSchemaEnds: a tree whose nodes list nodes ends after a few
// levels, well within a usual max_tokens, as a model's would.
func TestRecursiveSchemaEnds(t *testing.T) {
	e := newExec(t, Config{})
	v := e.Vocab()
	cache := gbgrammar.NewCache(func() *gbgrammar.Vocab { return gbgrammar.NewVocab(v.Size(), v.TokenBytes, []int{v.EOS()}) }, 1)
	c, err := cache.Get(gbgrammar.Spec{Kind: gbgrammar.KindJSON, Text: `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"value":{"type":"string","maxLength":12},` +
		`"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value","children"],"additionalProperties":false}}}`})
	if err != nil {
		t.Fatal(err)
	}
	longest, nested := 0, 0
	for seed := range uint64(50) {
		text := constrained(t, e, c.NewMatcher(), seed)
		tokens := len(v.Encode(text))
		longest = max(longest, tokens)
		if strings.Contains(text, `"children":[{`) {
			nested++
		}
	}
	if longest > 400 || nested < 25 {
		t.Errorf("trees: the longest %d tokens, %d of 50 with children; want most with children, none past 400 tokens", longest, nested)
	}
	t.Logf("trees: the longest %d tokens, %d of 50 with children", longest, nested)
}
