package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/glassbox-llm/glassbox/internal/reftest"
)

func shared(t testing.TB) string { t.Helper(); return reftest.Path(t) }

func sample(t testing.TB) []byte {
	t.Helper()
	w := NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"llama.block_count", uint32(2)},
		{"llama.rope.freq_base", float32(10000)},
		{"general.flag", true},
		{"x.i64", int64(-5)},
		{"x.f64", 2.5},
		{"tokenizer.ggml.tokens", []string{"<s>", "</s>", "▁a"}},
		{"tokenizer.ggml.scores", []float32{0, 0, -1.5}},
		{"tokenizer.ggml.token_type", []int32{3, 3, 1}},
		{"x.bools", []bool{true, false}},
	} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	f32 := make([]byte, 4*8*2)
	for i := range f32 {
		f32[i] = byte(i)
	}
	if err := w.AddTensor("a", F32, []int64{8, 2}, f32); err != nil {
		t.Fatal(err)
	}
	q := make([]byte, 34*2)
	q[0] = 7
	if err := w.AddTensor("b", Q8_0, []int64{64}, q); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	b := sample(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.KV) != 10 || len(f.Tensors) != 2 {
		t.Fatalf("version %d, %d KVs, %d tensors", f.Version, len(f.KV), len(f.Tensors))
	}
	if s, _ := f.String("general.architecture"); s != "llama" {
		t.Errorf("architecture %q", s)
	}
	if n, _ := f.Uint("llama.block_count"); n != 2 {
		t.Errorf("block_count %d", n)
	}
	if v, _ := f.Float("llama.rope.freq_base"); v != 10000 {
		t.Errorf("freq_base %v", v)
	}
	kv, _ := f.Get("tokenizer.ggml.tokens")
	if diff := cmp.Diff([]string{"<s>", "</s>", "▁a"}, kv.Value); diff != "" {
		t.Errorf("tokens: %s", diff)
	}
	kv, _ = f.Get("tokenizer.ggml.scores")
	if diff := cmp.Diff([]float32{0, 0, -1.5}, kv.Value); diff != "" {
		t.Errorf("scores: %s", diff)
	}
	a, _ := f.Tensor("a")
	if a.Size != 64 || a.Elements() != 16 || f.TensorData(a)[5] != 5 {
		t.Errorf("tensor a: %+v", a)
	}
	bt, _ := f.Tensor("b")
	if bt.Type != Q8_0 || bt.Size != 68 || bt.Offset%int64(f.Alignment) != 0 || f.TensorData(bt)[0] != 7 {
		t.Errorf("tensor b: %+v", bt)
	}
}

func TestEveryTruncationIsAnError(t *testing.T) {
	b := sample(t)
	for n := range len(b) - 1 {
		if _, err := Parse(b[:n]); err == nil {
			// Cutting only trailing alignment padding of the last tensor is
			// still a whole file; anything shorter than the data is not.
			f, _ := Parse(b)
			last := f.Tensors[len(f.Tensors)-1]
			if int64(n) < f.DataOffset+last.Offset+last.Size {
				t.Fatalf("a file cut to %d of %d bytes parsed without error", n, len(b))
			}
		}
	}
}

func TestHostileHeaders(t *testing.T) {
	good := sample(t)
	cases := map[string]func([]byte){
		"bad magic":     func(b []byte) { b[0] = 'X' },
		"version 9":     func(b []byte) { b[4] = 9 },
		"huge counts":   func(b []byte) { copy(b[8:16], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}) },
		"huge kv count": func(b []byte) { copy(b[16:24], []byte{0, 0, 0, 0, 0, 0, 1, 0}) },
	}
	for name, corrupt := range cases {
		b := append([]byte(nil), good...)
		corrupt(b)
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	// A tensor whose offset points past the end.
	w := NewWriter()
	w.AddTensor("t", F32, []int64{4}, make([]byte, 16))
	var buf bytes.Buffer
	w.WriteTo(&buf)
	b := buf.Bytes()
	off := bytes.Index(b, []byte{'t'}) + 1 + 4 + 8 + 4 // name, n_dims, dim, type
	b[off+1] = 0x10                                    // offset += 4096
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("out-of-range offset: %v", err)
	}
}

func TestReferenceFiles(t *testing.T) {
	dir := shared(t)
	f, err := Open(filepath.Join(dir, "models", "stories260K", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if arch, _ := f.String("general.architecture"); arch != "llama" || len(f.Tensors) != 48 {
		t.Errorf("stories260K: architecture %q, %d tensors; want llama, 48", arch, len(f.Tensors))
	}
	for _, name := range []string{"F32", "F16", "Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q5_K", "Q6_K"} {
		typ, _ := ParseTensorType(name)
		g, err := Open(filepath.Join(dir, "testdata", "reference", "tiny-qwen2."+name+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		q, ok := g.Tensor("blk.0.attn_q.weight")
		if !ok || q.Type != typ || len(g.TensorData(q)) != int(q.Size) {
			t.Errorf("tiny-qwen2.%s: attn_q %+v", name, q)
		}
		g.Close()
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Parse(b)
		if err != nil {
			return
		}
		for i := range g.Tensors {
			_ = g.TensorData(&g.Tensors[i]) // must be in range
		}
	})
}

// TestEveryValueTypeRoundTrips writes a scalar and an array of every type.
func TestEveryValueTypeRoundTrips(t *testing.T) {
	values := map[string]any{
		"u8": uint8(7), "i8": int8(-7), "u16": uint16(700), "i16": int16(-700), "u32": uint32(7e6), "i32": int32(-7e6),
		"f32": float32(0.5), "u64": uint64(7e12), "i64": int64(-7e12), "f64": 0.25, "b": true, "s": "x",
		"au8": []uint8{1, 2}, "ai8": []int8{-1, 2}, "au16": []uint16{1, 65535}, "ai16": []int16{-1, 2}, "au32": []uint32{1, 4e9},
		"ai32": []int32{-1, 2}, "af32": []float32{0.5, -1}, "au64": []uint64{1, 1 << 60}, "ai64": []int64{-1, 1 << 60},
		"af64": []float64{0.125, -2}, "ab": []bool{true, false}, "as": []string{"a", ""},
	}
	w := NewWriter()
	for k, v := range values {
		if err := w.AddKV(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range values {
		kv, _ := f.Get(k)
		if diff := cmp.Diff(want, kv.Value); diff != "" {
			t.Errorf("%s: %s", k, diff)
		}
	}
}

// TestReadInMemory checks that the in-memory load sees the same file as the
// mapping, and that a missing or corrupt file is an error for both.
func TestReadInMemory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(path, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ReadInMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(a.Tensors) != len(b.Tensors) || len(a.Tensors) == 0 {
		t.Fatalf("tensors: mapped %d, in memory %d", len(a.Tensors), len(b.Tensors))
	}
	for i := range a.Tensors {
		if !bytes.Equal(a.TensorData(&a.Tensors[i]), b.TensorData(&b.Tensors[i])) {
			t.Errorf("tensor %s differs", a.Tensors[i].Name)
		}
	}
	if _, err := ReadInMemory(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file: no error")
	}
	if err := os.WriteFile(path, []byte("GGUF\x03\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInMemory(path); err == nil {
		t.Error("truncated file: no error")
	}
}
