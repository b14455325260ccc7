package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Byte-level BPE (GPT-2, Llama 3, Qwen): every byte of a pre-tokenized word
// is first mapped to one printable character (GPT-2's bytes_to_unicode), so
// the vocabulary and merges are strings of those characters; the word
// starts as one symbol per byte and the listed merges are applied, lowest
// rank first (leftmost on a tie), until none applies. This is llama.cpp's
// llm_tokenizer_bpe_session and the Hugging Face BPE model, which agree.

// byteLevel maps each byte to its byte-level character and back.
type byteLevel struct {
	char [256]rune
	byte map[rune]byte
}

func newByteLevel() *byteLevel {
	bl := &byteLevel{byte: make(map[rune]byte, 256)}
	n := rune(0)
	for b := range 256 {
		printable := ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
		if printable {
			bl.char[b] = rune(b)
		} else {
			bl.char[b] = 256 + n
			n++
		}
		bl.byte[bl.char[b]] = byte(b)
	}
	return bl
}

// encode appends the byte-level form of s to dst.
func (bl *byteLevel) encode(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, bl.char[s[i]])
	}
	return dst
}

// decode maps a vocabulary string back to the bytes it stands for. A string
// holding a character outside the byte-level alphabet is returned as it is,
// as the Hugging Face ByteLevel decoder does.
func (bl *byteLevel) decode(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := bl.byte[r]
		if !ok {
			return []byte(s)
		}
		out = append(out, b)
	}
	return out
}

// merge is what a pair of adjacent tokens becomes, and how early.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel holds what byte-level encoding needs beyond the vocabulary.
type bpeModel struct {
	pre          preTokenizer
	merges       map[uint64]merge
	ignoreMerges bool       // a word that is a whole token is emitted as is
	byteToken    [256]int32 // the token of each byte's character, or -1
	bl           *byteLevel

	cache wordCache
	pool  sync.Pool // *bpeScratch
}

// The word cache keeps words up to maxCachedWord bytes (long ones, runs of
// spaces or base64, are rare repeats and would only hold memory), at most
// maxCacheWords of them.
const (
	maxCachedWord = 64
	maxCacheWords = 1 << 16
)

// Symbol ids that are not tokens: a byte whose character the vocabulary
// lacks, and a symbol merged into its left neighbour.
const (
	bpeNoToken     = -1
	bpeMergedToken = -2
)

// wordCache remembers the tokens of recent words. It is shared by every
// goroutine that encodes with the tokenizer; when full it starts over,
// which is cheap and keeps memory bounded.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int32
}

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheWords {
		c.m = make(map[string][]int32)
	}
	// w is a slice of the caller's text: copy it, or the cache would pin
	// the whole text in memory.
	c.m[strings.Clone(w)] = ids
	c.mu.Unlock()
}

// bpeSymbol is one token of a word being merged, in a doubly linked list.
type bpeSymbol struct {
	id         int32 // bpeMergedToken once merged into its left neighbour
	prev, next int32
}

// bigram is a candidate merge of the symbol at left with its right
// neighbour; it is stale once either has changed.
type bigram struct {
	rank        int32
	left        int32
	leftID, rID int32
	id          int32 // what the pair becomes
}

type bpeScratch struct {
	syms []bpeSymbol
	heap []bigram
	buf  []byte
}

// encodeWord appends the tokens of one pre-tokenized word.
func (t *Tokenizer) encodeWord(out []int, word string) []int {
	m := t.bpe
	if len(word) <= maxCachedWord {
		if ids, ok := m.cache.get(word); ok {
			for _, id := range ids {
				out = append(out, int(id))
			}
			return out
		}
	}
	s, _ := m.pool.Get().(*bpeScratch)
	if s == nil {
		s = &bpeScratch{}
	}
	defer m.pool.Put(s)
	start := len(out)
	out = t.mergeWord(out, word, s)
	if len(word) <= maxCachedWord {
		ids := make([]int32, len(out)-start)
		for i, id := range out[start:] {
			ids[i] = int32(id)
		}
		m.cache.put(word, ids)
	}
	return out
}

// mergeWord runs the merges over word with a heap of candidate pairs:
// O(n log n) in the word's length, not a rescan per merge.
func (t *Tokenizer) mergeWord(out []int, word string, s *bpeScratch) []int {
	m := t.bpe
	if m.ignoreMerges {
		s.buf = m.bl.encode(s.buf[:0], word)
		if id, ok := t.ids[string(s.buf)]; ok {
			return append(out, int(id))
		}
	}
	if word == "" {
		return out
	}
	s.syms = s.syms[:0]
	for i := 0; i < len(word); i++ {
		s.syms = append(s.syms, bpeSymbol{id: m.byteToken[word[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	s.syms[len(s.syms)-1].next = -1
	s.heap = s.heap[:0]
	for i := 1; i < len(s.syms); i++ {
		s.push(m, int32(i-1), int32(i))
	}
	for len(s.heap) > 0 {
		bg := s.pop()
		l := &s.syms[bg.left]
		if l.id != bg.leftID || l.next < 0 {
			continue
		}
		r := &s.syms[l.next]
		if r.id != bg.rID {
			continue
		}
		l.id = bg.id
		r.id = bpeMergedToken
		l.next = r.next
		if r.next >= 0 {
			s.syms[r.next].prev = bg.left
		}
		if l.prev >= 0 {
			s.push(m, l.prev, bg.left)
		}
		if l.next >= 0 {
			s.push(m, bg.left, l.next)
		}
	}
	for i := int32(0); i >= 0; i = s.syms[i].next {
		switch id := s.syms[i].id; {
		case id >= 0:
			out = append(out, int(id))
		case t.unk >= 0:
			// The vocabulary lacks this byte's character (llama.cpp drops
			// it; an unknown token at least keeps the count honest).
			out = append(out, t.unk)
		}
	}
	return out
}

// push adds the pair (left, right) when the merges list has it.
func (s *bpeScratch) push(m *bpeModel, left, right int32) {
	a, b := s.syms[left].id, s.syms[right].id
	if a < 0 || b < 0 {
		return
	}
	mg, ok := m.merges[pairKey(a, b)]
	if !ok {
		return
	}
	s.heap = heapPush(s.heap, bigram{rank: mg.rank, left: left, leftID: a, rID: b, id: mg.id}, bigram.less)
}

func (a bigram) less(b bigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

// pop removes the lowest-rank, leftmost candidate.
func (s *bpeScratch) pop() bigram {
	top, h := heapPop(s.heap, bigram.less)
	s.heap = h
	return top
}

// encodeBPE appends the tokens of a text fragment (no special tokens).
func (t *Tokenizer) encodeBPE(out []int, text string) []int {
	if t.normalize != nil {
		text = t.normalize(text)
	}
	for _, w := range t.bpe.pre.split(text, nil) {
		out = t.encodeWord(out, w)
	}
	return out
}
