package model

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/gguf"
)

// nameTracer writes the phases as a nested string: "a[b c]".
type nameTracer struct {
	b     strings.Builder
	depth int
	fresh bool // the last thing written opened a phase
}

func (n *nameTracer) Begin(name string) {
	if n.b.Len() > 0 && !n.fresh {
		n.b.WriteByte(' ')
	}
	n.b.WriteString(name)
	n.b.WriteByte('[')
	n.depth++
	n.fresh = true
}

func (n *nameTracer) End() {
	n.depth--
	n.b.WriteByte(']')
	n.fresh = false
}

// TestForwardTracesItsPhases: a traced forward pass names each phase in
// order, nested (a layer's phases inside it, the MLP's matmuls inside
// it), and computes the same logits as an untraced one.
func TestForwardTracesItsPhases(t *testing.T) {
	shape, _ := LookupShape("tiny")
	var buf bytes.Buffer
	if err := WriteRandom(&buf, RandomSpec{Shape: shape, Type: gguf.F32, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	seqs := []Seq{{Tokens: []int{1, 2, 3, 4}, BlockTable: []int{0}, LogitsFrom: 3}, {Tokens: []int{9}, Pos: 5, BlockTable: []int{1}}}
	run := func(tr Tracer) []float32 {
		r := NewRunner(w, 4, 16, 2)
		defer r.Close()
		r.Trace = tr
		if err := r.Forward(seqs); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(r.Logits)
	}
	plain := run(nil)
	tr := &nameTracer{}
	traced := run(tr)
	if !slices.Equal(plain, traced) {
		t.Error("tracing changed the logits")
	}
	layer := "[attn_norm[] qkv_proj[] rope_kv_write[] attention[] o_proj[] ffn_norm[] mlp[gate_up_proj[] silu_mul[] down_proj[]]]"
	want := "embed[] layer 0" + layer + " layer 1" + layer + " lm_head[]"
	if got := tr.b.String(); got != want || tr.depth != 0 {
		t.Errorf("phases\n%s\nwant\n%s (depth left %d)", got, want, tr.depth)
	}
}
