package sched

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-llm/glassbox/internal/kvcache"
)

var update = flag.Bool("update", false, "rewrite the golden scripts in testdata with the current output")

// TestScripts runs the step-by-step scripts in testdata. Each case is a
// command, a "----" line and the expected output, ended by a blank line;
// -update rewrites the expectations so reviewers read the diff.
//
// Commands:
//
//	config blocks=N block_size=N max_seqs=N budget=N prefix=on|off [max_loras=N] [lookahead=N max_len=N] [host=N]
//	add ID prompt=N max=N [prio=N] [base=N] [lora=N]   (prompt tokens base, base+1, ...)
//	draft ID N                               (N draft tokens 2000, 2001, ... to verify next step)
//	step [ID=A ...]                          (plan, then "execute": every sampled sequence gets a token, finished at max;
//	                                          a drafted one first keeps A of its scheduled drafts, default all)
//	finish ID                                (abort)
//	loaded ID                                (its load from the offload tier is done)
//	stored N                                 (the N oldest stores to the offload tier are done)
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

type harness struct {
	s    *Scheduler
	kv   *kvcache.Manager
	seqs map[int]*Seq
	max  map[int]int
	step int
	plan Plan
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h harness
	var out strings.Builder
	cases := strings.Split(strings.TrimRight(string(data), "\n")+"\n", "\n\n")
	for _, c := range cases {
		cmd, want, ok := strings.Cut(c+"\n", "\n----\n")
		if !ok {
			t.Fatalf("%s: case without ----: %q", file, c)
		}
		got := h.run(t, strings.TrimSpace(cmd))
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
}

func args(fields []string) map[string]int {
	m := map[string]int{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch v {
		case "on":
			m[k] = 1
		case "off":
			m[k] = 0
		default:
			n, _ := strconv.Atoi(v)
			m[k] = n
		}
	}
	return m
}

func (h *harness) run(t *testing.T, cmd string) string {
	f := strings.Fields(cmd)
	switch f[0] {
	case "config":
		a := args(f[1:])
		var err error
		h.kv, err = kvcache.New(kvcache.Config{NumBlocks: a["blocks"], BlockSize: a["block_size"], EnablePrefixCaching: a["prefix"] == 1,
			HostBlocks: a["host"]})
		if err != nil {
			t.Fatal(err)
		}
		h.s, err = New(Config{MaxNumSeqs: a["max_seqs"], MaxNumBatchedTokens: a["budget"], MaxLoRAs: a["max_loras"], Lookahead: a["lookahead"], MaxModelLen: a["max_len"]}, h.kv)
		if err != nil {
			t.Fatal(err)
		}
		h.seqs, h.max = map[int]*Seq{}, map[int]int{}
		return "ok"
	case "add":
		id, _ := strconv.Atoi(f[1])
		a := args(f[2:])
		q := &Seq{ID: id, NumPrompt: a["prompt"], Priority: a["prio"], LoRA: a["lora"]}
		for i := range a["prompt"] {
			q.Tokens = append(q.Tokens, a["base"]+i)
		}
		h.seqs[id], h.max[id] = q, a["max"]
		h.s.Add(q)
		return h.state()
	case "draft":
		id, _ := strconv.Atoi(f[1])
		n, _ := strconv.Atoi(f[2])
		q := h.seqs[id]
		q.Spec = q.Spec[:0]
		for i := range n {
			q.Spec = append(q.Spec, 2000+i)
		}
		return h.state()
	case "finish":
		id, _ := strconv.Atoi(f[1])
		h.s.Finish(h.seqs[id])
		return h.state()
	case "step":
		return h.doStep(args(f[1:]))
	case "loaded":
		id, _ := strconv.Atoi(f[1])
		h.s.LoadDone(h.seqs[id])
		return h.state()
	case "stored":
		n, _ := strconv.Atoi(f[1])
		h.kv.CompleteStores(n)
		return h.state()
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

func (h *harness) doStep(accept map[string]int) string {
	h.step++
	h.s.Schedule(&h.plan)
	p := &h.plan
	var b strings.Builder
	fmt.Fprintf(&b, "step %d: %d tokens", h.step, p.NumTokens)
	if len(p.Preempted) > 0 {
		fmt.Fprintf(&b, ", preempted %v", ids(p.Preempted))
	}
	if len(p.Admitted) > 0 {
		fmt.Fprintf(&b, ", admitted %v", ids(p.Admitted))
	}
	if p.PrefixQueries > 0 {
		fmt.Fprintf(&b, ", prefix hits %d/%d", p.PrefixHits, p.PrefixQueries)
	}
	if len(p.Loads) > 0 {
		fmt.Fprintf(&b, ", loading %v", ids(p.Loads))
	}
	if p.ExternalQueries > 0 {
		fmt.Fprintf(&b, ", offload hits %d/%d", p.ExternalHits, p.ExternalQueries)
	}
	if p.Deferred > 0 {
		fmt.Fprintf(&b, ", deferred %d (max-loras)", p.Deferred)
	}
	b.WriteString("\n")
	for _, sc := range p.Seqs {
		q := sc.Seq
		kind := "prefill"
		if q.NumComputed == len(q.Tokens)-1 && len(q.Tokens) > q.NumPrompt {
			kind = "decode"
		}
		if sc.NumSpec > 0 {
			kind = fmt.Sprintf("verify %d drafts", sc.NumSpec)
		}
		fmt.Fprintf(&b, "  seq %d %s [%d,%d) blocks=%v", q.ID, kind, q.NumComputed, q.NumComputed+sc.NumNew, q.BlockTable())
		h.s.Computed(sc)
		if sc.NumSpec > 0 {
			a, ok := accept[strconv.Itoa(q.ID)]
			if !ok {
				a = sc.NumSpec
			}
			h.s.Rejected(q, sc.NumSpec-a)
			q.Tokens = append(q.Tokens, q.Spec[:a]...)
			fmt.Fprintf(&b, " accepted %d", a)
		}
		q.Spec = q.Spec[:0]
		if sc.Sample {
			q.Tokens = append(q.Tokens, 1000+h.step)
			b.WriteString(" +token")
			if len(q.Tokens)-q.NumPrompt >= h.max[q.ID] {
				h.s.Finish(q)
				b.WriteString(" finished")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(h.state())
	return b.String()
}

func (h *harness) state() string {
	s := fmt.Sprintf("running=%v waiting=%v kv: free=%d/%d cached=%d usage=%.2f",
		ids(h.s.running), ids(h.s.waiting), h.kv.NumFree(), h.kv.NumBlocks(), h.kv.NumCached(), h.kv.Usage())
	if h.kv.HostBlocks() > 0 {
		storing, loading, held := h.kv.HostState()
		s += fmt.Sprintf(" loading=%v host: held=%d/%d storing=%d read=%d", ids(h.s.loading), held, h.kv.HostBlocks(), storing, loading)
	}
	return s
}

func ids(qs []*Seq) []int {
	out := make([]int, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.ID)
	}
	return slices.Clip(out)
}
