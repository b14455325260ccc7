package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/tokenizer"
)

// Vocab is the model's tokenizer as the server uses it: completion prompts
// get the model's BOS and may contain special tokens; chat prompts come
// from the template, which writes its own BOS.
type Vocab struct{ t *tokenizer.Tokenizer }

func (v *Vocab) Encode(text string) []int     { return v.t.Encode(text, true, true) }
func (v *Vocab) EncodeChat(text string) []int { return v.t.Encode(text, false, true) }
func (v *Vocab) Decode(ids []int) string      { return v.t.Decode(ids, true) }
func (v *Vocab) TokenString(id int) string    { return v.t.TokenString(id) }
func (v *Vocab) VocabSize() int               { return v.t.VocabSize() }

// TokenBytes hides control tokens from generated text, as vLLM's
// skip_special_tokens does.
func (v *Vocab) TokenBytes(id int) []byte {
	if v.t.IsSpecial(id) {
		return nil
	}
	return v.t.TokenBytes(id)
}

// memAvailable reads MemAvailable from /proc/meminfo, or 0.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
