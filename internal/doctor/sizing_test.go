package doctor

import (
	"strings"
	"testing"
)

// sizedBy diagnoses w with the defaults moved by sets (name=value each).
func sizedBy(t *testing.T, w *Window, sets ...string) *Report {
	t.Helper()
	th := DefaultThresholds()
	for _, s := range sets {
		if err := th.SetText(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := th.Validate(); err != nil {
		t.Fatal(err)
	}
	return NewDiagnoser(th, Hints{}).Diagnose(w, nil)
}

// change is the value of the finding's change to flag, "" for none.
func change(f Finding, flag string) string {
	for _, c := range f.Changes {
		if c.Flag == flag {
			return c.Value
		}
	}
	return ""
}

// TestSizingFollowsThresholds: each recommendation is sized by the
// threshold table's factors, not by a literal: the same window with one
// factor moved recommends a change moved by it (the defaults' values are
// the ones TestRecommendationsComputeFromEvidence checks).
func TestSizingFollowsThresholds(t *testing.T) {
	capped := healthy()
	capped.maxSeqs, capped.running, capped.waiting, capped.kv, capped.busy = 4, constant(4), constant(10), constant(0.05), 0.99
	kv := healthy()
	kv.kv, kv.waiting, kv.running, kv.busy = constant(0.95), constant(6), constant(8), 0.99
	compute := healthy()
	compute.busy, compute.waiting, compute.running, compute.steps, compute.prompt, compute.gen, compute.success = 0.99, constant(5), constant(20), 20, 150000, 100, 100
	storm := healthy()
	storm.preempt, storm.kv, storm.running = 2, constant(0.95), constant(8)
	decode := healthy()
	decode.running = func(i int) float64 { return float64(4 + 10*i) }
	decode.itl = func(i int) float64 { return 0.004 + 0.0005*float64(4+10*i) }
	aborts := healthy()
	aborts.aborts = 1
	host := healthy()
	host.busy, host.host, host.running, host.waiting, host.maxSeqs = 0.2, 0.78, constant(256), constant(20), 256
	for _, tc := range []struct {
		name, finding, flag string
		w                   *Window
		sets                []string
		def, moved          string
	}{
		// ⌈1.25 × 14⌉ = 18; ⌈1.5 × 14⌉ = 21 (both under the KV and fill limits).
		{"cap_headroom", "concurrency-cap", "--max-num-seqs", capped.window(), []string{"cap_headroom=1.5"}, "18", "21"},
		// seqs_raise sets concurrency-cap's floor: 6 × 4 = 24 over ⌈1.25 × 14⌉.
		{"seqs_raise (cap)", "concurrency-cap", "--max-num-seqs", capped.window(), []string{"seqs_raise=6"}, "18", "24"},
		{"seqs_raise (host)", "host-bound", "--max-num-seqs", host.window(), []string{"seqs_raise=1.5"}, "512", "384"},
		// (8 + 6) / 8 = 1.75× the 1000 blocks of 2 MiB, or at most 1.5×.
		{"kv_grow_max", "kv-capacity-bound", "--kv-cache-memory-bytes", kv.window(), []string{"kv_grow_max=1.5"}, "3500M", "3000M"},
		{"kv_grow_min", "kv-capacity-bound", "--kv-cache-memory-bytes", kv.window(), []string{"kv_grow_min=2.5", "kv_grow_max=4"}, "3500M", "5000M"},
		{"budget_raise", "compute-bound", "--max-num-batched-tokens", compute.window(), []string{"budget_raise=1.5"}, "16384", "12288"},
		// Nothing waits: the storm's own least growth, 1.5× or 2× the 1000 blocks of 2 MiB.
		{"kv_grow_evicting", "preemption-storm", "--kv-cache-memory-bytes", storm.window(), []string{"kv_grow_evicting=2"}, "3000M", "4000M"},
		// The fitted ITL kept at 1.25× or 2× the narrowest batch's allows more running.
		{"itl_target", "decode-bound", "--max-num-seqs", decode.window(), []string{"itl_target=2"}, "14", "31"},
		// A p99 of at most a second: ⌈2 × p99⌉ or ⌈4 × p99⌉ seconds.
		{"client_timeout_p99", "client-timeouts", "client timeout", aborts.window(), []string{"client_timeout_p99=4"}, "≥ 2s", "≥ 4s"},
		// 8 running: 0.75 × 8 = 6, or 0.5 × 8 = 4.
		{"storm_seqs_share", "preemption-storm", "--max-num-seqs", storm.window(), []string{"storm_seqs_share=0.5"}, "6", "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := change(find(t, sizedBy(t, tc.w), tc.finding), tc.flag); got != tc.def {
				t.Errorf("defaults: %s %s, want %s", tc.flag, got, tc.def)
			}
			if got := change(find(t, sizedBy(t, tc.w, tc.sets...), tc.finding), tc.flag); got != tc.moved {
				t.Errorf("%v: %s %s, want %s", tc.sets, tc.flag, got, tc.moved)
			}
		})
	}
	// scale_out_min: the replicas a scale-out names, and applies.
	f := find(t, sizedBy(t, compute.window(), "scale_out_min=7"), "compute-bound")
	if !strings.Contains(f.Changes[0].Why, "scale out to 7 replicas") {
		t.Errorf("scale_out_min 7: %q", f.Changes[0].Why)
	}
	rc := ReplicaConfig{Replicas: 1}
	f.apply(&rc)
	if rc.Replicas != 7 {
		t.Errorf("scale_out_min 7 applies %d replicas", rc.Replicas)
	}
}

// TestSizingThresholdsRefused: a factor that would advise the opposite of
// its change, a fraction of a replica and bands out of order are refused
// by name.
func TestSizingThresholdsRefused(t *testing.T) {
	for _, set := range []string{"budget_raise=0.5", "seqs_raise=0", "cap_headroom=0.9", "kv_grow_min=0.8", "kv_grow_max=1.1", "kv_grow_evicting=0.5",
		"itl_target=0.9", "client_timeout_p99=0.5", "storm_seqs_share=1", "storm_seqs_share=0", "scale_out_min=1.5", "scale_out_min=0",
		"kv_full=0.85", "kv_full=1.2", "slo_attained_low=0.995", "slo_attained=1.5", "slo_attained_low=0",
		"budget_read_share=15", "budget_read_share=0", "host_gap=1.5", "host_gap=0"} {
		th := DefaultThresholds()
		if err := th.SetText(set); err != nil {
			continue // refused at once (a negative, say)
		}
		name, _, _ := strings.Cut(set, "=")
		if err := th.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming %s", set, err, name)
		}
	}
	th := DefaultThresholds()
	th.KVWatermark, th.KVFull = 0.99, 1 // kv_full moved with the watermark
	if err := th.Validate(); err != nil {
		t.Error(err)
	}
}
