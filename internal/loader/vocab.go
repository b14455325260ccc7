package loader

import (
	"bufio"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-llm/glassbox/internal/jinja"
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

// Kind names the tokenizer's algorithm (for banners).
func (v *Vocab) Kind() string { return v.t.Kind() }

// TokenBytes hides control tokens from generated text, as vLLM's
// skip_special_tokens does.
func (v *Vocab) TokenBytes(id int) []byte {
	if v.t.IsSpecial(id) {
		return nil
	}
	return v.t.TokenBytes(id)
}

// Chat renders conversations with the model's chat template (ChatML when
// it has none, or one that does not parse), with the tokenizer's BOS and
// EOS strings as bos_token and eos_token.
type Chat struct {
	chat     *jinja.Chat
	bos, eos string
}

func newChat(tok *tokenizer.Tokenizer, log *slog.Logger) *Chat {
	c := &Chat{chat: jinja.NewChat(tok.ChatTemplate(), log)}
	if tok.BOS() >= 0 {
		c.bos = tok.TokenString(tok.BOS())
	}
	if tok.EOS() >= 0 {
		c.eos = tok.TokenString(tok.EOS())
	}
	return c
}

// Render renders msgs, with the request's tools (nil: none), and opens the
// assistant's turn.
func (c *Chat) Render(msgs []jinja.Message, tools []any) (string, error) {
	return c.chat.Render(msgs, jinja.ChatOptions{AddGenerationPrompt: true, BOS: c.bos, EOS: c.eos, Tools: tools})
}

// Template is the model's chat template, "" when it has none usable
// (requests then get ChatML).
func (c *Chat) Template() string { return c.chat.Source() }

// MemAvailable reads MemAvailable from /proc/meminfo, or 0 where it cannot.
func MemAvailable() int64 {
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
