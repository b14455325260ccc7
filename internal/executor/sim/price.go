package sim

import (
	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
)

// priced is b as the cost model reads it: each sequence's tokens computed,
// its position and prompt, whether it samples. The cost model knows no
// engine; this is the executor's side of that seam. The slice is scratch,
// reused by every step.
func (e *Executor) priced(b *engine.Batch) []costmodel.Seq {
	e.seqs = e.seqs[:0]
	for i := range b.Seqs {
		s := &b.Seqs[i]
		e.seqs = append(e.seqs, costmodel.Seq{Tokens: len(s.Tokens), Pos: s.Pos, NumPrompt: s.NumPrompt, Sample: s.Sample})
	}
	return e.seqs
}
