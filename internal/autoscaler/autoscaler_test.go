package autoscaler

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// run asks every sync period with the metric metric(i) and applies the
// answer at once, returning the counts.
func run(t *testing.T, cfg Config, start, steps int, metric func(i, current int) float64) []int {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := start
	var out []int
	for i := range steps {
		n = a.Desired(t0.Add(time.Duration(i)*cfg.SyncPeriod), n, metric(i, n), true, true)
		out = append(out, n)
	}
	return out
}

// TestScaleUpIsRateLimited: a burst of 40 waiting with a target of 4
// wants 10 replicas, capped at the maximum of 8; the HPA's default policy
// lets one replica become 5 (four more) in the first period, then double.
func TestScaleUpIsRateLimited(t *testing.T) {
	got := run(t, Defaults(HPA), 1, 3, func(int, int) float64 { return 40 })
	if got[0] != 5 || got[1] != 8 || got[2] != 8 {
		t.Errorf("replicas %v, want 5, then the maximum 8", got)
	}
}

// TestToleranceHoldsTheCount: within 10 % of the target nothing moves.
func TestToleranceHoldsTheCount(t *testing.T) {
	got := run(t, Defaults(HPA), 4, 4, func(int, int) float64 { return 17 }) // 17 / (4 × 4) = 1.06
	for _, n := range got {
		if n != 4 {
			t.Fatalf("replicas %v, want 4 throughout", got)
		}
	}
	if got := run(t, Defaults(HPA), 4, 1, func(int, int) float64 { return 18 }); got[0] != 5 { // 1.125
		t.Errorf("replicas %v at 18 waiting, want 5", got)
	}
}

// TestScaleDownWaitsOutTheWindow: after the load goes, the count holds for
// the stabilisation window (300 s), then falls one pod a minute.
func TestScaleDownWaitsOutTheWindow(t *testing.T) {
	cfg := Defaults(HPA)
	got := run(t, cfg, 8, 60, func(i, _ int) float64 {
		if i < 2 {
			return 32
		}
		return 0
	})
	sync := cfg.SyncPeriod
	firstDrop := -1
	for i, n := range got {
		if n < 8 {
			firstDrop = i
			break
		}
	}
	if firstDrop < 0 || time.Duration(firstDrop)*sync < cfg.ScaleDownStabilization {
		t.Fatalf("replicas %v: dropped at sync %d, within the 300 s window", got, firstDrop)
	}
	for i := firstDrop + 1; i < len(got); i++ {
		if got[i] < got[i-1] && got[i-1]-got[i] > 1 {
			t.Errorf("replicas %v: fell by more than one at once", got)
		}
	}
	// One a minute: 8 → 1 takes seven minutes after the window.
	drops := 0
	for i := firstDrop; i < firstDrop+4 && i < len(got); i++ { // one minute of syncs
		if got[i] < 8-drops {
			drops++
		}
	}
	if drops != 1 {
		t.Errorf("replicas %v: %d drops in the first minute, want 1", got, drops)
	}
	if got[len(got)-1] != cfg.MinReplicas {
		t.Errorf("replicas %v, want the minimum at last", got)
	}
}

// TestKEDAScalesToAndFromZero: with minReplicas 0, KEDA starts one replica
// when the metric passes its activation threshold, and goes back to zero a
// cooldown period after the last active poll.
func TestKEDAScalesToAndFromZero(t *testing.T) {
	cfg := Defaults(KEDA)
	cfg.MinReplicas, cfg.CooldownPeriod = 0, time.Minute
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if n := a.Desired(at(0), 0, 0, true, true); n != 0 {
		t.Fatalf("idle at zero: %d", n)
	}
	if n := a.Desired(at(15), 0, 3, true, true); n != 1 {
		t.Fatalf("active at zero: %d, want 1", n)
	}
	if n := a.Desired(at(30), 1, 0, true, true); n != 1 {
		t.Fatalf("within the cooldown: %d, want 1", n)
	}
	if n := a.Desired(at(75), 1, 0, true, true); n != 0 {
		t.Errorf("a cooldown after the last active poll: %d, want 0", n)
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Kind = "vpa" },
		func(c *Config) { c.MinReplicas = 0 }, // the HPA's minimum is 1
		func(c *Config) { c.MaxReplicas = 0 },
		func(c *Config) { c.TargetWaitingPerReplica = 0 },
		func(c *Config) { c.SyncPeriod = 0 },
		func(c *Config) { c.ScaleDownStabilization = -time.Second },
	} {
		c := Defaults(HPA)
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}
