package grammar

import (
	"testing"
)

// TestLazy: free text passes, the trigger may arrive split over tokens,
// the grammar then holds the output until it is complete, and the output
// is free again after it; a token that completes the trigger and runs on
// where the grammar does not leaves that call free.
func TestLazy(t *testing.T) {
	pieces := []string{"<to", "ol>", `{"a":`, "1", "2", "}", "</t>", "hi", "<tool>x", " ", ""}
	v := NewVocab(len(pieces), func(id int) []byte { return []byte(pieces[id]) }, []int{len(pieces) - 1})
	g, err := Parse(Spec{Kind: KindJSON, Text: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, Suffix: "</t>", Trigger: "<tool>"})
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(g, v)
	id := func(p string) int {
		for i, x := range pieces {
			if x == p {
				return i
			}
		}
		t.Fatalf("no piece %q", p)
		return -1
	}
	mask := make([]uint64, v.MaskWords())
	allowed := func(l *Lazy, p string) bool {
		l.FillMask(mask)
		i := id(p)
		return mask[i/64]&(1<<(i%64)) != 0
	}
	l := c.NewLazy("<tool>")
	for _, p := range []string{"hi", "<to", "ol>"} {
		if !allowed(l, p) || !l.Accept(id(p)) {
			t.Fatalf("free text %q refused", p)
		}
	}
	if _, free := l.Trigger(); free || allowed(l, "hi") || !allowed(l, `{"a":`) {
		t.Fatal("after the trigger, the grammar does not hold the output")
	}
	for _, p := range []string{`{"a":`, "1", "2", "}", "</t>"} {
		if !allowed(l, p) || !l.Accept(id(p)) {
			t.Fatalf("the call's %q refused", p)
		}
	}
	if _, free := l.Trigger(); !free || !allowed(l, "hi") || !allowed(l, "") {
		t.Fatal("after the call, the output is not free")
	}
	l = c.NewLazy("<tool>")
	if !l.Accept(id("<tool>x")) {
		t.Fatal("a token that completes the trigger and runs on is refused")
	}
	if _, free := l.Trigger(); !free {
		t.Error("a call whose start breaks the grammar is held to it")
	}
	if !l.Accept(id("")) || l.Accept(id("hi")) {
		t.Error("after the end of the sequence, more is accepted")
	}
}
