package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
	"github.com/glassbox-llm/glassbox/internal/inferenceperf"
	"github.com/glassbox-llm/glassbox/internal/profiles"
	"github.com/glassbox-llm/glassbox/internal/replica"
	"github.com/glassbox-llm/glassbox/internal/simulate"
)

// Prediction is one run replayed with one calibration.
type Prediction struct {
	Run       *Run
	Predicted Metrics
	Requests  int
	Failed    int
	Virtual   time.Duration
	Wall      time.Duration

	lin linear // the replay's sensitivities, for the fit
}

// Terms are the coefficients a fit can move. By default it moves all but
// the GEMMs' weight-read factor: the GEMMs' terms (weight-read factor,
// efficiency) and the elementwise traffic stay as Vidur's kernel timings
// fix them where a GPU has them (costmodel's TestGEMMsMatchVidur holds the
// profiles to them); a GPU without them (the L40S) has its weight-read
// factor fitted to its runs, which on cached prompts are all decode. The
// frontend's finish stays BLIS's, since the per-token terms cannot be told
// from it when outputs have one length. The per-layer and per-step
// overheads are told apart by models of different depths.
var Terms = []string{"kv_read_factor", "step_overhead", "request_overhead", "all_reduce_latency", "layer_overhead", "weight_load_factor",
	"frontend_arrival", "frontend_per_token", "frontend_lag_steps", "frontend_stream"}

// The terms' indexes: the first gpuTerms move a step's GPU time.
const (
	termKV = iota
	termStep
	termSeq
	termAllReduce
	termLayer
	termWeightRead
	gpuTerms
	termArrival = iota - 1
	termPerToken
	termLag
	termStream
	numTerms
)

// vector is a calibration's fitted terms, seconds for times.
func vector(c profiles.Calibration) []float64 {
	return []float64{c.KVReadFactor, c.StepOverhead.Seconds(), c.RequestOverhead.Seconds(), c.AllReduceLatency.Seconds(),
		c.LayerOverhead.Seconds(), c.WeightLoadFactor, c.Frontend.Arrival.Seconds(), c.Frontend.PerToken.Seconds(), c.Frontend.LagSteps, c.Frontend.Stream.Seconds()}
}

func withVector(c profiles.Calibration, v []float64) profiles.Calibration {
	d := func(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
	c.KVReadFactor, c.WeightLoadFactor = v[termKV], v[termWeightRead]
	c.StepOverhead, c.RequestOverhead, c.AllReduceLatency, c.LayerOverhead = d(v[termStep]), d(v[termSeq]), d(v[termAllReduce]), d(v[termLayer])
	c.Frontend.Arrival, c.Frontend.PerToken, c.Frontend.LagSteps, c.Frontend.Stream = d(v[termArrival]), d(v[termPerToken]), v[termLag], d(v[termStream])
	return c
}

// lowerBounds keep a fit physical: the KV and weight reads are no faster
// than the bandwidth bound allows, and no overhead is negative.
var lowerBounds = []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0}

// meanLin is a replayed mean as an affine function of the terms, around
// the calibration it ran with: at + grad·(v − v0), in seconds.
type meanLin struct {
	at   float64
	grad []float64
}

// linear is a replay's means linearised: the whole run's TTFT and E2E,
// and each stage's.
type linear struct {
	v0                  []float64
	ttft, e2e           meanLin
	stageTTFT, stageE2E []meanLin
}

// Evaluate replays every run with calib.
func Evaluate(ctx context.Context, runs []Run, calib profiles.Calibration) ([]Prediction, error) {
	out := make([]Prediction, len(runs))
	for i := range runs {
		p, err := replay(ctx, &runs[i], calib)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", runs[i].Name, err)
		}
		out[i] = p
	}
	return out, nil
}

// step is one engine step of a replay: its span and its fitted terms'
// basis (what the step's time moves by per unit of each term).
type step struct {
	start, end time.Time
	basis      [gpuTerms]float64
}

func replay(ctx context.Context, r *Run, calib profiles.Calibration) (Prediction, error) {
	m, err := profiles.LookupModel(r.Server.Model)
	if err != nil {
		return Prediction{}, err
	}
	plan, err := inferenceperf.NewPlan(ctx, r.Load, simulate.Tokenizer(), r.Plan)
	if err != nil {
		return Prediction{}, err
	}
	var steps []step
	observe := func(start time.Time, c *costmodel.Cost) {
		s := step{start: start, end: start.Add(c.Duration + c.Host)}
		s.basis[termKV] = c.DecodeKVRead.Seconds()
		s.basis[termStep] = 1
		s.basis[termSeq] = float64(c.Seqs)
		if c.AllReduce > 0 {
			s.basis[termAllReduce] = 2 * float64(m.Layers)
		}
		s.basis[termLayer] = float64(m.Layers)
		if c.MemoryBound() && !m.FP8 {
			// The additive form's GEMMs take the weight read at the factor.
			s.basis[termWeightRead] = c.WeightRead.Seconds()
		}
		steps = append(steps, s)
	}
	res, err := simulate.Run(ctx, simulate.Config{Plan: plan, Replica: replica.Config{
		Sim: sim.Config{Hardware: r.Server.Hardware, Model: r.Server.Model, TensorParallel: r.Server.TensorParallel,
			Calib: &calib, Observe: observe},
		MaxNumSeqs: r.Server.MaxNumSeqs, MaxNumBatchedTokens: r.Server.MaxNumBatchedTokens, MaxModelLen: r.Server.MaxModelLen,
		BlockSize: replica.DefaultBlockSize, MaxQueuedRequests: replica.DefaultMaxQueuedRequests,
		GPUMemoryUtilization: r.Server.GPUMemoryUtilization, NoPrefixCaching: r.Server.NoPrefixCaching,
		KVOffloadingSize: r.Server.KVOffloadGiB,
	}})
	if err != nil {
		return Prediction{}, err
	}
	p := Prediction{Run: r, Virtual: res.Duration, Wall: res.Wall}
	var ttft, e2e, tpot []float64
	fe := res.Frontend
	cum := make([][gpuTerms]float64, len(steps)+1)
	ends := make([]time.Time, len(steps))
	for i, s := range steps {
		ends[i] = s.end
		for k := range gpuTerms {
			cum[i+1][k] = cum[i][k] + s.basis[k]
		}
	}
	// span sums the basis of the engine time from a to e (a step end).
	span := func(a, e time.Time) [gpuTerms]float64 {
		i := sort.Search(len(ends), func(j int) bool { return ends[j].After(a) })
		j := sort.Search(len(ends), func(j int) bool { return ends[j].After(e) }) - 1
		var out [gpuTerms]float64
		if i > j || i >= len(steps) {
			return out
		}
		s := steps[i]
		frac := 1.0
		if d := s.end.Sub(s.start); a.After(s.start) && d > 0 {
			frac = float64(s.end.Sub(a)) / float64(d)
		}
		for k := range gpuTerms {
			out[k] = frac*s.basis[k] + cum[j+1][k] - cum[i+1][k]
		}
		return out
	}
	at := func(e time.Time) int { // the step ending at e
		return sort.Search(len(ends), func(j int) bool { return !ends[j].Before(e) })
	}
	// sums[0] is the whole run's, sums[1+s] stage s's.
	type sums struct {
		n, ttft, e2e float64
		gT, gE       [numTerms]float64
	}
	stages := len(r.Load.Load.Stages)
	acc := make([]sums, 1+stages)
	for i, o := range res.Outputs {
		p.Requests++
		if !o.Success {
			p.Failed++
			continue
		}
		n := float64(o.OutputTokens)
		ttft = append(ttft, o.TTFT.Seconds())
		e2e = append(e2e, o.Latency.Seconds())
		if o.OutputTokens > 1 {
			tpot = append(tpot, (o.Latency-o.TTFT).Seconds()/(n-1))
		}
		tt := res.Tokens[i]
		a := o.Start.Add(fe.Arrival)
		bf, bl := span(a, tt.First), span(a, tt.Last)
		sf, sl := steps[min(at(tt.First), len(steps)-1)], steps[min(at(tt.Last), len(steps)-1)]
		var gT, gE [numTerms]float64
		for k := range gpuTerms {
			// The lag moves with the step it follows.
			gT[k] = bf[k] + fe.LagSteps*sf.basis[k]
			gE[k] = bl[k] + fe.LagSteps*sl.basis[k]
		}
		gT[termArrival], gE[termArrival] = 1, 1 // the arrival delays the first token and so the last
		gT[termPerToken], gE[termPerToken] = 1, n
		gT[termLag], gE[termLag] = tt.FirstStep.Seconds(), tt.LastStep.Seconds()
		// A token waits for the API server's work on the tokens it
		// handled back to back up to it, its own included.
		gT[termStream], gE[termStream] = float64(tt.FirstQueued), float64(tt.LastQueued)
		groups := []int{0}
		if o.Stage >= 0 && o.Stage < stages {
			groups = append(groups, 1+o.Stage)
		}
		for _, g := range groups {
			s := &acc[g]
			s.n++
			s.ttft += o.TTFT.Seconds()
			s.e2e += o.Latency.Seconds()
			for k := range numTerms {
				s.gT[k] += gT[k]
				s.gE[k] += gE[k]
			}
		}
	}
	if len(ttft) == 0 {
		return p, fmt.Errorf("every one of %d requests failed", p.Requests)
	}
	means := func(s *sums) (meanLin, meanLin) {
		t, e := meanLin{at: s.ttft / s.n, grad: make([]float64, numTerms)}, meanLin{at: s.e2e / s.n, grad: make([]float64, numTerms)}
		for k := range numTerms {
			t.grad[k], e.grad[k] = s.gT[k]/s.n, s.gE[k]/s.n
		}
		return t, e
	}
	lin := linear{v0: vector(calib)}
	lin.ttft, lin.e2e = means(&acc[0])
	p.Predicted = Metrics{TTFT: 1e3 * lin.ttft.at, TTFTP90: 1e3 * pct(ttft, 90), TTFTP99: 1e3 * pct(ttft, 99),
		E2E: 1e3 * lin.e2e.at, E2EP90: 1e3 * pct(e2e, 90), E2EP99: 1e3 * pct(e2e, 99), TPOT: 1e3 * mean(tpot)}
	if stages > 1 {
		for s := 1; s <= stages; s++ {
			if acc[s].n == 0 {
				return p, fmt.Errorf("stage %d: no request succeeded", s-1)
			}
			t, e := means(&acc[s])
			lin.stageTTFT, lin.stageE2E = append(lin.stageTTFT, t), append(lin.stageE2E, e)
			p.Predicted.Stages = append(p.Predicted.Stages, StageMetrics{TTFT: 1e3 * t.at, E2E: 1e3 * e.at})
		}
	}
	p.lin = lin
	return p, nil
}

// FitOptions bound a fit.
type FitOptions struct {
	Iterations int     // replay-and-refit rounds; default 4
	Prior      float64 // weight pulling each term toward its starting value; default 0.05
	// Terms names the terms to move (of Terms); the others keep their
	// starting values. Empty moves every one but weight_load_factor. A run
	// or two of one GPU cannot tell ten terms apart: fit the few they
	// measure.
	Terms    []string
	Progress func(round int, preds []Prediction)
}

// free is which of Terms o moves.
func (o FitOptions) free() ([]bool, error) {
	free := make([]bool, len(Terms))
	if len(o.Terms) == 0 {
		for k := range free {
			free[k] = k != termWeightRead
		}
		return free, nil
	}
	for _, name := range o.Terms {
		k := slices.Index(Terms, name)
		if k < 0 {
			return nil, fmt.Errorf("fit: unknown term %q (valid: %s)", name, strings.Join(Terms, ", "))
		}
		free[k] = true
	}
	return free, nil
}

// Fit moves start's Terms to minimise the runs' squared relative error of
// mean TTFT plus that of mean E2E (BLIS's objective; TPOT follows from the
// two). Each round linearises every run around its latest replay, solves
// by non-negative least squares above the lower bounds, and replays with
// the result; a round that does not lower the objective is walked back
// halfway (twice at most). It returns the fitted calibration and the
// replays with the starting and the fitted terms.
func Fit(ctx context.Context, runs []Run, start profiles.Calibration, o FitOptions) (profiles.Calibration, []Prediction, []Prediction, error) {
	if o.Iterations == 0 {
		o.Iterations = 4
	}
	if o.Prior == 0 {
		o.Prior = 0.05
	}
	free, err := o.free()
	if err != nil {
		return start, nil, nil, err
	}
	if free[termWeightRead] && start.GEMMOverlap > 1 {
		return start, nil, nil, errors.New("fit: weight_load_factor is fitted in the additive GEMM form only; this profile overlaps the read and the arithmetic (gemm_overlap > 1): fit it to a probe instead")
	}
	cur := start
	before, err := Evaluate(ctx, runs, cur)
	if err != nil {
		return cur, nil, nil, err
	}
	preds, best := before, objective(before)
	for round := 1; round <= o.Iterations; round++ {
		from := vector(cur)
		to := solve(preds, vector(start), o.Prior, free)
		improved := false
		for half := 0; half < 3 && !improved; half++ {
			cand := withVector(cur, to)
			next, err := Evaluate(ctx, runs, cand)
			if err != nil {
				return cur, before, nil, err
			}
			if j := objective(next); j < best {
				cur, preds, best, improved = cand, next, j, true
			}
			for k := range to {
				to[k] = (to[k] + from[k]) / 2
			}
		}
		if o.Progress != nil {
			o.Progress(round, preds)
		}
		if !improved {
			break // the next round would solve the same system from the same point
		}
	}
	return cur, before, preds, nil
}

// fitRow is one measured mean a fit matches, with its weight.
type fitRow struct {
	w, meas float64 // meas in seconds
	m       meanLin
}

// fitRows are what a replay is fitted on: each stage's mean TTFT and E2E
// where the run measured them (weighted so that a run counts once),
// else the whole run's.
func fitRows(p *Prediction) []fitRow {
	ms, l := p.Run.Measured, p.lin
	if n := len(ms.Stages); n > 0 && n == len(l.stageTTFT) {
		w := 1 / math.Sqrt(float64(n))
		var rows []fitRow
		for s := range n {
			rows = append(rows, fitRow{w, ms.Stages[s].TTFT / 1e3, l.stageTTFT[s]}, fitRow{w, ms.Stages[s].E2E / 1e3, l.stageE2E[s]})
		}
		return rows
	}
	return []fitRow{{1, ms.TTFT / 1e3, l.ttft}, {1, ms.E2E / 1e3, l.e2e}}
}

// objective is the fit's loss over replays, each relative error capped at
// 1 so that one overloaded replay cannot outweigh the rest.
func objective(preds []Prediction) float64 {
	j := 0.0
	for i := range preds {
		for _, r := range fitRows(&preds[i]) {
			if r.meas > 0 {
				e := r.m.at/r.meas - 1
				j += r.w * r.w * min(e*e, 1)
			}
		}
	}
	return j
}

// solve is one linearised least-squares step: rows are each run's means
// (fitRows) relative to the measured values, plus the prior rows. A
// replay far off (an overloaded queue, whose latency the linearisation
// cannot follow) is down-weighted as a Huber loss would, and each term's
// move is damped (Levenberg–Marquardt), so that the rounds converge.
func solve(preds []Prediction, prior []float64, weight float64, free []bool) []float64 {
	n := len(Terms)
	var A [][]float64
	var b []float64
	cur := preds[0].lin.v0
	colNorm := make([]float64, n)
	for i := range preds {
		l := preds[i].lin
		for _, row := range fitRows(&preds[i]) {
			if row.meas <= 0 {
				continue
			}
			w := row.w / max(1, math.Abs(row.m.at/row.meas-1)/huber)
			// at + grad·(v − v0) ≈ meas, divided by meas.
			r := make([]float64, n)
			c := row.m.at
			for k := range n {
				r[k] = w * row.m.grad[k] / row.meas
				c -= row.m.grad[k] * l.v0[k]
				colNorm[k] += r[k] * r[k]
			}
			A = append(A, r)
			b = append(b, w*(1-c/row.meas))
		}
	}
	for k := range n {
		scale := prior[k]
		if scale == 0 {
			continue
		}
		r := make([]float64, n)
		r[k] = weight / scale
		A = append(A, r)
		b = append(b, weight)
	}
	for k := range n {
		r := make([]float64, n)
		d := damping * math.Sqrt(colNorm[k])
		r[k] = d
		A = append(A, r)
		b = append(b, d*cur[k])
	}
	// v = lb + x with x ≥ 0; a term held fixed is moved to the right-hand
	// side at its current value, its column left empty.
	for i := range A {
		for k := range n {
			if free[k] {
				b[i] -= A[i][k] * lowerBounds[k]
			} else {
				b[i] -= A[i][k] * cur[k]
				A[i][k] = 0
			}
		}
	}
	x := nnls(A, b)
	v := make([]float64, n)
	for k := range n {
		v[k] = lowerBounds[k] + x[k]
		if !free[k] {
			v[k] = cur[k]
		}
	}
	return v
}

// huber is the relative error beyond which a row's weight falls off;
// damping scales the Levenberg–Marquardt rows.
const (
	huber   = 0.25
	damping = 0.3
)

// nnls solves min ‖Ax − b‖ subject to x ≥ 0 (Lawson and Hanson's active
// set method), for the handful of terms a fit has.
func nnls(A [][]float64, b []float64) []float64 {
	n := len(A[0])
	x := make([]float64, n)
	passive := make([]bool, n)
	grad := func() []float64 { // Aᵀ(b − Ax)
		g := make([]float64, n)
		for i, row := range A {
			r := b[i]
			for k := range n {
				r -= row[k] * x[k]
			}
			for k := range n {
				g[k] += row[k] * r
			}
		}
		return g
	}
	for iter := 0; iter < 10*n; iter++ {
		g := grad()
		best, at := 1e-12, -1
		for k := range n {
			if !passive[k] && g[k] > best {
				best, at = g[k], k
			}
		}
		if at < 0 {
			break
		}
		passive[at] = true
		for inner := 0; inner < 10*n; inner++ {
			z := lsq(A, b, passive)
			if allPositive(z, passive) {
				x = z
				break
			}
			alpha := 1.0
			for k := range n {
				if passive[k] && z[k] <= 0 {
					alpha = min(alpha, x[k]/(x[k]-z[k]))
				}
			}
			for k := range n {
				x[k] += alpha * (z[k] - x[k])
				if passive[k] && x[k] <= 1e-15 {
					passive[k], x[k] = false, 0
				}
			}
		}
	}
	return x
}

func allPositive(z []float64, passive []bool) bool {
	for k, p := range passive {
		if p && z[k] <= 0 {
			return false
		}
	}
	return true
}

// lsq solves the unconstrained least squares over the passive columns by
// the normal equations (the columns are few and scaled alike).
func lsq(A [][]float64, b []float64, passive []bool) []float64 {
	var cols []int
	for k, p := range passive {
		if p {
			cols = append(cols, k)
		}
	}
	m := len(cols)
	M := make([][]float64, m)
	for i := range M {
		M[i] = make([]float64, m+1)
	}
	for r, row := range A {
		for i, ci := range cols {
			for j, cj := range cols {
				M[i][j] += row[ci] * row[cj]
			}
			M[i][m] += row[ci] * b[r]
		}
	}
	// Gaussian elimination with partial pivoting.
	for c := range m {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(M[r][c]) > math.Abs(M[p][c]) {
				p = r
			}
		}
		M[c], M[p] = M[p], M[c]
		if math.Abs(M[c][c]) < 1e-300 {
			continue
		}
		for r := range m {
			if r != c {
				f := M[r][c] / M[c][c]
				for k := c; k <= m; k++ {
					M[r][k] -= f * M[c][k]
				}
			}
		}
	}
	z := make([]float64, len(passive))
	for i, ci := range cols {
		if M[i][i] != 0 {
			z[ci] = M[i][m] / M[i][i]
		}
	}
	return z
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// pct is numpy's linearly interpolated percentile.
func pct(x []float64, p float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (r-float64(lo))*(s[hi]-s[lo])
}
