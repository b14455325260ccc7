package kvcache

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden scripts in testdata with the current output")

// TestScripts runs the block manager's step-by-step scripts in testdata:
// each case is a command, a "----" line and the expected output, ended by
// a blank line; -update rewrites the expectations.
//
// Commands:
//
//	config blocks=N block_size=N host=N [prefix=off]
//	seq ID len=N [base=N]     (a sequence of tokens base, base+1, ...)
//	lookup ID                 (GPU prefix hit, then the host tier's continuation)
//	alloc ID new=N            (Allocate with the GPU prefix hit and N more tokens)
//	load ID                   (StartLoad of the host tier's continuation)
//	endload ID
//	cache ID upto=N           (Cache: the first N tokens are computed)
//	free ID
//	stored N                  (CompleteStores(N))
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			h := &scriptHarness{t: t}
			var out strings.Builder
			for _, c := range strings.Split(strings.TrimRight(string(data), "\n")+"\n", "\n\n") {
				cmd, want, ok := strings.Cut(c+"\n", "\n----\n")
				if !ok {
					t.Fatalf("%s: case without ----: %q", file, c)
				}
				got := h.run(strings.TrimSpace(cmd))
				if h.m != nil {
					if err := cmpErr(h.m.check(h.all()), h.m.checkHost(h.all())); err != nil {
						t.Fatalf("%s: after %s: %v", file, cmd, err)
					}
				}
				if !*update && strings.TrimSpace(want) != got {
					t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", file, cmd, got, strings.TrimSpace(want))
				}
				fmt.Fprintf(&out, "%s\n----\n%s\n\n", strings.TrimSpace(cmd), got)
			}
			if *update {
				if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type scriptHarness struct {
	t      *testing.T
	m      *Manager
	seqs   map[string]*Seq
	tokens map[string][]int
	order  []string
}

func (h *scriptHarness) all() []*Seq {
	out := make([]*Seq, 0, len(h.order))
	for _, id := range h.order {
		out = append(out, h.seqs[id])
	}
	return out
}

func scriptArgs(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func (h *scriptHarness) num(a map[string]string, k string) int {
	if a[k] == "" {
		return 0
	}
	n, err := strconv.Atoi(a[k])
	if err != nil {
		h.t.Fatalf("%s=%q: %v", k, a[k], err)
	}
	return n
}

func (h *scriptHarness) run(cmd string) string {
	f := strings.Fields(cmd)
	a := scriptArgs(f[1:])
	switch f[0] {
	case "config":
		var err error
		h.m, err = New(Config{NumBlocks: h.num(a, "blocks"), BlockSize: h.num(a, "block_size"), HostBlocks: h.num(a, "host"),
			EnablePrefixCaching: a["prefix"] != "off"})
		if err != nil {
			return "error: " + err.Error()
		}
		h.seqs, h.tokens, h.order = map[string]*Seq{}, map[string][]int{}, nil
		return h.state()
	case "seq":
		h.seqs[f[1]], h.tokens[f[1]] = &Seq{}, seqTokens(h.num(a, "len"), h.num(a, "base"))
		h.order = append(h.order, f[1])
		return h.state()
	case "stored":
		n, _ := strconv.Atoi(f[1])
		h.m.CompleteStores(n)
		return h.state()
	}
	s, toks := h.seqs[f[1]], h.tokens[f[1]]
	if s == nil {
		h.t.Fatalf("%s: no sequence %s", cmd, f[1])
	}
	switch f[0] {
	case "lookup":
		gpu := h.m.LookupPrefix(s, toks)
		return fmt.Sprintf("gpu=%d host=%d", gpu, h.m.LookupHost(s, toks, gpu))
	case "alloc":
		gpu := h.m.LookupPrefix(s, toks)
		if !h.m.Allocate(s, toks, gpu, h.num(a, "new")) {
			return "no room\n" + h.state()
		}
		return fmt.Sprintf("hit %d, table %v\n%s", gpu, s.BlockTable(), h.state())
	case "load":
		gpu := h.m.LookupPrefix(s, toks)
		host := h.m.LookupHost(s, toks, gpu)
		if host == 0 {
			return "nothing to load\n" + h.state()
		}
		if !h.m.StartLoad(s, toks, gpu, host) {
			return "no room\n" + h.state()
		}
		return fmt.Sprintf("hit %d, loading %d, table %v\n%s", gpu, host, s.BlockTable(), h.state())
	case "endload":
		h.m.EndLoad(s)
		return h.state()
	case "cache":
		h.m.Cache(s, toks, h.num(a, "upto"))
		return h.state()
	case "free":
		h.m.Free(s)
		return h.state()
	}
	h.t.Fatalf("unknown command %q", cmd)
	return ""
}

func (h *scriptHarness) state() string {
	m := h.m
	storing, loading, held := m.HostState()
	ops, failures := m.TakeStores()
	return fmt.Sprintf("gpu: free=%d/%d cached=%d host: held=%d/%d storing=%d loading=%d; stores started %v, failed %d",
		m.NumFree(), m.NumBlocks(), m.NumCached(), held, m.HostBlocks(), storing, loading, ops, failures)
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
