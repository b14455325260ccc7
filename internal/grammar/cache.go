package grammar

import (
	"container/list"
	"strings"
	"sync"
)

// Kind is what a Spec constrains the output to.
type Kind string

// The kinds of structured outputs, named as vLLM's structured_outputs
// fields.
const (
	KindJSON       Kind = "json"        // a JSON Schema
	KindJSONObject Kind = "json_object" // any JSON object
	KindRegex      Kind = "regex"
	KindChoice     Kind = "choice"
	KindGrammar    Kind = "grammar" // GBNF
)

// Spec is one request's constraint.
type Spec struct {
	Kind    Kind
	Text    string   // the schema's JSON, the regex or the grammar
	Choices []string // KindChoice
	// Suffix (KindJSON) follows the JSON value, after optional
	// whitespace, which may also precede it: a tool call's body and its
	// closing tag.
	Suffix string
	// Trigger makes the constraint lazy: the output is free until it
	// generates Trigger, then follows the grammar to its end, then is free
	// again (llama.cpp's lazy grammars): tool_choice auto's calls.
	Trigger string
}

func (s Spec) key() string {
	if s.Kind == KindChoice {
		return string(s.Kind) + "\x00" + strings.Join(s.Choices, "\x00")
	}
	return string(s.Kind) + "\x00" + s.Text + "\x00" + s.Suffix
}

// Parse compiles a spec into a grammar.
func Parse(s Spec) (*Grammar, error) {
	switch s.Kind {
	case KindJSON:
		if s.Suffix != "" {
			return jsonSchemaThen([]byte(s.Text), s.Suffix)
		}
		return JSONSchema([]byte(s.Text))
	case KindJSONObject:
		return JSONObject(), nil
	case KindRegex:
		return Regex(s.Text)
	case KindChoice:
		return Choice(s.Choices)
	case KindGrammar:
		return GBNF(s.Text)
	}
	return nil, syntaxErr("kind", "unknown constraint kind %q", s.Kind)
}

// Cache compiles specs over one vocabulary and keeps the most recently
// used, with the masks their matchers computed: the second request of a
// shape pays for nothing but its own matching. The vocabulary is built on
// first use (a trie of a large vocabulary takes a moment). Safe for
// concurrent use.
type Cache struct {
	vocab    func() *Vocab
	capacity int

	once sync.Once
	v    *Vocab

	mu      sync.Mutex
	lru     *list.List // of *cacheEntry, most recent first
	entries map[string]*list.Element
}

type cacheEntry struct {
	key  string
	once sync.Once
	c    *Compiled
	err  error
}

// NewCache keeps up to capacity compiled specs over the vocabulary vocab
// builds.
func NewCache(vocab func() *Vocab, capacity int) *Cache {
	return &Cache{vocab: vocab, capacity: max(capacity, 1), lru: list.New(), entries: map[string]*list.Element{}}
}

// Vocab is the cache's vocabulary, built on first use.
func (c *Cache) Vocab() *Vocab {
	c.once.Do(func() { c.v = c.vocab() })
	return c.v
}

// Get returns s compiled over the vocabulary; concurrent requests for the
// same spec compile it once.
func (c *Cache) Get(s Spec) (*Compiled, error) {
	key := s.key()
	c.mu.Lock()
	el, ok := c.entries[key]
	if ok {
		c.lru.MoveToFront(el)
	} else {
		el = c.lru.PushFront(&cacheEntry{key: key})
		c.entries[key] = el
		for c.lru.Len() > c.capacity {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.entries, old.Value.(*cacheEntry).key)
		}
	}
	e := el.Value.(*cacheEntry)
	c.mu.Unlock()
	e.once.Do(func() {
		g, err := Parse(s)
		if err != nil {
			e.err = err
			return
		}
		e.c = Compile(g, c.Vocab())
	})
	return e.c, e.err
}
