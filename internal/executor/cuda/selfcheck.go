package cuda

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// The tensor-core prefill and the tiled decode kernels are the fast
// paths; the CUDA-core kernels are the plain ones. At start the executor
// runs both on random data of its model's shape and types and keeps a
// fast kernel only where it runs and agrees with the plain one (run 1 on
// an H200 checked the plain kernels' speed, not yet the fast ones':
// docs/gpu.md). The choice is a kernelSet the executor owns and never
// changes: the Device holds none.

// kernelSet is which attention kernels an executor runs.
type kernelSet struct {
	flash bool // the tensor-core prefill kernel (else the CUDA-core one)
	tiled bool // the tiled decode kernel (else the untiled one)
	// flashTokens and plainTokens are how many tokens a prefill item
	// takes with each prefill kernel (its query rows, tokens × the query
	// heads of a KV head, are one block's): plainTokens is what fits the
	// GPU's shared memory (limits.go), 0 when nothing does.
	flashTokens, plainTokens int
	note                     string // why a fast kernel is off, or unchecked
}

// prefillTokens is how many tokens a prefill item takes.
func (k kernelSet) prefillTokens() int {
	if k.flash {
		return k.flashTokens
	}
	return k.plainTokens
}

// String names the attention kernels, and why a fast one is off.
func (k kernelSet) String() string {
	p, dec := "tensor-core prefill", "tiled decode"
	if !k.flash {
		p = "CUDA-core prefill"
	}
	if !k.tiled {
		dec = "untiled decode"
	}
	s := p + ", " + dec + " attention"
	if k.note != "" {
		s += " (" + strings.TrimSuffix(k.note, "; ") + ")"
	}
	return s
}

// selfCheckLimit bounds each of the check's waits on the GPU (its kernels
// take milliseconds): a fast kernel that hangs ends start-up with an
// error instead of hanging it.
const selfCheckLimit = 20 * time.Second

// check is one comparison of a fast kernel with its plain counterpart.
type check struct {
	name   string
	decode bool // decode attention (else prefill)
	splits int  // decode's context splits
	bound  float64
	on     func(*kernelSet) *bool // the set's switch for this kernel
}

// attnChecks are the checks a set takes: each fast kernel in it that has
// a plain counterpart to compare with.
func attnChecks(k kernelSet) []check {
	var cs []check
	if k.flash && k.plainTokens > 0 {
		cs = append(cs, check{name: "tensor-core prefill", bound: 4e-3, on: func(k *kernelSet) *bool { return &k.flash }})
	}
	if k.tiled {
		for _, splits := range []int{1, 4} {
			cs = append(cs, check{name: fmt.Sprintf("tiled decode (%d splits)", splits), decode: true, splits: splits, bound: 1e-4,
				on: func(k *kernelSet) *bool { return &k.tiled }})
		}
	}
	return cs
}

// kernelProbe runs one check's kernel from a set on the check's random
// inputs, waits for it and returns its output: the device's, or a fake.
type kernelProbe interface {
	run(c check, ks kernelSet) ([]float32, error)
}

// chooseKernels runs the checks from base, each wait bounded by limit:
// a fast kernel that fails to launch, or differs from the plain one
// beyond the check's bound (roundOut: the output type's rounding), is
// turned off; a plain kernel that cannot run leaves the fast one
// unchecked. A sticky fault or a hang ends the check with an error that
// says the context is dead.
func chooseKernels(p kernelProbe, checks []check, base kernelSet, roundOut float64, limit time.Duration) (kernelSet, error) {
	ks := base
	for _, c := range checks {
		if !*c.on(&ks) {
			continue // already off (the other splits' check)
		}
		plainSet := ks
		*c.on(&plainSet) = false
		var fast, plain []float32
		err := within(limit, c.name, func() (err error) { fast, err = p.run(c, ks); return err })
		if err != nil {
			if dead(err) {
				return ks, fmt.Errorf("check the %s kernel: %w (the GPU's context is dead: every later call on it fails; restart the process)", c.name, err)
			}
			*c.on(&ks) = false
			ks.note += fmt.Sprintf("%s failed to run (%v): not used; ", c.name, err)
			continue
		}
		err = within(limit, c.name+"'s plain counterpart", func() (err error) { plain, err = p.run(c, plainSet); return err })
		if err != nil {
			if dead(err) {
				return ks, fmt.Errorf("check the %s kernel's plain counterpart: %w (the GPU's context is dead: every later call on it fails; restart the process)", c.name, err)
			}
			ks.note += fmt.Sprintf("%s not checked: the plain kernel failed (%v); ", c.name, err)
			continue
		}
		if worst, scale, ok := agree(fast, plain, max(c.bound, roundOut)); !ok {
			*c.on(&ks) = false
			ks.note += fmt.Sprintf("%s differs from the plain kernel (%.3g of %.3g): not used; ", c.name, worst, scale)
		}
	}
	return ks, nil
}

// agree compares a with b relative to b's largest value (NaN fails).
func agree(a, b []float32, bound float64) (worst, scale float64, ok bool) {
	if len(a) != len(b) {
		return math.Inf(1), 0, false
	}
	for i := range a {
		scale = max(scale, math.Abs(float64(b[i])))
		worst = max(worst, math.Abs(float64(a[i])-float64(b[i])))
	}
	return worst, scale, scale > 0 && worst <= bound*scale
}

// roundingOf is the relative rounding of one value stored as dt.
func roundingOf(dt cuda.DType) float64 {
	switch dt {
	case cuda.F16:
		return 1.0 / (1 << 10)
	case cuda.BF16:
		return 1.0 / (1 << 7)
	}
	return 0
}

// probeOpener makes a check's inputs for shape s and activation type dt
// (prefill items of per tokens) and a function that frees them.
type probeOpener func(s attnShape, dt cuda.DType, per int) (kernelProbe, func(), error)

// selfCheck chooses the attention kernels for shape s with activations
// of type dt: the model's, whose variants are the ones that run.
func (d *Device) selfCheck(s attnShape, dt cuda.DType) (kernelSet, error) {
	return checkKernels(kernelsFor(d.Info, s), s, dt, d.openAttnProbe, selfCheckLimit)
}

// checkKernels runs shape s's checks from base (kernelsFor) on inputs
// from open, each wait bounded by limit.
func checkKernels(base kernelSet, s attnShape, dt cuda.DType, open probeOpener, limit time.Duration) (kernelSet, error) {
	checks := attnChecks(base)
	if len(checks) == 0 {
		return base, nil
	}
	var (
		p     kernelProbe
		close func()
	)
	err := within(limit, "make the kernel check's inputs", func() (err error) { p, close, err = open(s, dt, base.plainTokens); return err })
	if err != nil {
		if dead(err) {
			return base, fmt.Errorf("check the attention kernels: %w (the GPU's context is dead: every later call on it fails; restart the process)", err)
		}
		return base, fmt.Errorf("check the attention kernels: %w", err)
	}
	ks, err := chooseKernels(p, checks, base, roundingOf(dt), limit)
	if !dead(err) {
		close()
	}
	return ks, err
}
