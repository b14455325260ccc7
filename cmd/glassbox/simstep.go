package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/glassbox-llm/glassbox/internal/costmodel"
	"github.com/glassbox-llm/glassbox/internal/engine"
	"github.com/glassbox-llm/glassbox/internal/executor/sim"
)

// stepResult is 'simulate step --json': one step's price by kernel
// family and what a steady stream of such steps reads on the simulated
// GPU's dcgm-exporter (ratios as DCGM writes them).
type stepResult struct {
	Hardware       string             `json:"hardware"`
	Model          string             `json:"model"`
	TensorParallel int                `json:"tensor_parallel_size"`
	Weights        string             `json:"weights"`
	KV             string             `json:"kv_cache_dtype"`
	DurationMS     float64            `json:"duration_ms"`
	HostMS         float64            `json:"host_ms"`
	Families       map[string]float64 `json:"families"` // ms
	FLOPs          float64            `json:"flops_per_gpu"`
	ReadBytes      float64            `json:"read_bytes_per_gpu"`
	WriteBytes     float64            `json:"write_bytes_per_gpu"`
	DCGM           stepDCGM           `json:"dcgm"`
}

type stepDCGM struct {
	GREngineActive float64 `json:"gr_engine_active"`
	SMActive       float64 `json:"sm_active"`
	SMOccupancy    float64 `json:"sm_occupancy"`
	TensorActive   float64 `json:"tensor_active"`
	DRAMActive     float64 `json:"dram_active"`
	PowerW         float64 `json:"power_w"`
	SMClockMHz     float64 `json:"sm_clock_mhz"`
	GPUUtil        float64 `json:"gpu_util"`
	MemCopyUtil    float64 `json:"mem_copy_util"`
}

// runSimulateStep runs 'glassbox simulate step': the price of one step of
// the given composition on a profile.
func runSimulateStep(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate step", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var e engineFlags
	e.register(fs)
	var decodes, prefills listFlag
	fs.Var(&decodes, "decode", "BxCTX: B sequences each decoding their CTX-th token (attending to CTX tokens of KV), e.g. 64x2048; repeatable")
	fs.Var(&prefills, "prefill", "N@POS: a chunk of N prompt tokens starting at position POS (attending to the POS cached before it), e.g. 1024@0; repeatable; the chunk's last token is sampled")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("simulate step: unexpected argument %q", fs.Arg(0))
	}
	e.visited(fs)
	b, err := stepBatch(decodes, prefills)
	if err != nil {
		return err
	}
	rc, err := e.replicaConfig()
	if err != nil {
		return err
	}
	cfg := rc.Sim
	cfg.Quantization, cfg.KVCacheDtype = rc.Quantization, rc.KVCacheDtype
	exec, err := sim.New(cfg)
	if err != nil {
		return err
	}
	cm, c := exec.CostModel(), exec.StepCost(b)
	host := c.Host + e.simHostOverhead
	if e.asyncScheduling {
		host = max(host-c.Duration, 0)
	}
	busy := c.Duration.Seconds() / (c.Duration + host).Seconds()
	rd := costmodel.Steady(&cm.HW, busy, c.Activity)
	ms := func(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1e3 }
	r := stepResult{Hardware: cm.HW.Name, Model: cm.Model.Name, TensorParallel: cm.TP, Weights: "bf16", KV: "bf16",
		DurationMS: ms(c.Duration), HostMS: ms(host), FLOPs: c.FLOPs, ReadBytes: c.ReadBytes, WriteBytes: c.WriteBytes,
		Families: map[string]float64{"gemm": ms(c.GEMM), "attention": ms(c.Attention), "elementwise": ms(c.Elementwise),
			"all_reduce": ms(c.AllReduce), "overhead": ms(c.Overhead)},
		DCGM: stepDCGM{GREngineActive: rd.EngineActive, SMActive: rd.SMActive, SMOccupancy: rd.SMOccupancy, TensorActive: rd.TensorActive,
			DRAMActive: rd.DRAMActive, PowerW: rd.Watts, SMClockMHz: rd.SMClockMHz, GPUUtil: rd.GPUUtil, MemCopyUtil: rd.CopyUtil}}
	if cm.Model.FP8 {
		r.Weights = "fp8"
	}
	if cm.Model.KVElementBytes() == 1 {
		r.KV = "fp8"
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeStep(stdout, &r, b, rd.Capped)
	return nil
}

// stepBatch is the step the --decode and --prefill specs describe.
func stepBatch(decodes, prefills []string) (*engine.Batch, error) {
	if len(decodes)+len(prefills) == 0 {
		return nil, errors.New("simulate step: give the step's work: --decode BxCTX and/or --prefill N@POS")
	}
	b := &engine.Batch{}
	add := func(n, pos, prompt int) {
		b.Seqs = append(b.Seqs, engine.SeqBatch{Seq: len(b.Seqs), Tokens: make([]int, n), Pos: pos, NumPrompt: prompt, Sample: true})
		b.NumTokens += n
	}
	for _, d := range decodes {
		bs, ctx, ok := strings.Cut(d, "x")
		nb, err1 := strconv.Atoi(bs)
		nctx, err2 := strconv.Atoi(ctx)
		if !ok || err1 != nil || err2 != nil || nb < 1 || nctx < 1 || nb > 1<<16 || nctx > 1<<24 {
			return nil, fmt.Errorf("--decode %q: want BxCTX with 1 ≤ B ≤ 65536 sequences and CTX ≥ 1 tokens of context, e.g. 64x2048", d)
		}
		for range nb {
			add(1, nctx-1, 1)
		}
	}
	for _, p := range prefills {
		ns, pos, ok := strings.Cut(p, "@")
		if !ok {
			ns, pos = p, "0"
		}
		n, err1 := strconv.Atoi(ns)
		np, err2 := strconv.Atoi(pos)
		if err1 != nil || err2 != nil || n < 1 || np < 0 || n > 1<<24 || np > 1<<24 {
			return nil, fmt.Errorf("--prefill %q: want N@POS with N ≥ 1 tokens at position POS ≥ 0, e.g. 1024@0", p)
		}
		add(n, np, np+n)
	}
	return b, nil
}

func writeStep(w io.Writer, r *stepResult, b *engine.Batch, capped bool) {
	fmt.Fprintf(w, "One step of %d tokens (%d sequences) of %s on %d× %s (%s weights, %s KV): %.3f ms on the GPU",
		b.NumTokens, len(b.Seqs), r.Model, r.TensorParallel, r.Hardware, r.Weights, r.KV, r.DurationMS)
	if r.HostMS > 0 {
		fmt.Fprintf(w, ", %.3f ms of host work after it", r.HostMS)
	}
	fmt.Fprintf(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel family\tms\tshare\t")
	for _, f := range []string{"gemm", "attention", "elementwise", "all_reduce", "overhead"} {
		if v := r.Families[f]; v > 0 {
			fmt.Fprintf(tw, "%s\t%.3f\t%.1f%%\t\n", f, v, 100*v/r.DurationMS)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nPer GPU: %.3g FLOP, %.3g bytes read, %.3g written.\n", r.FLOPs, r.ReadBytes, r.WriteBytes)
	d := r.DCGM
	fmt.Fprintf(w, "\ndcgm-exporter under a steady stream of such steps:\n")
	fmt.Fprintf(w, "  DCGM_FI_PROF_GR_ENGINE_ACTIVE   %.3f\n  DCGM_FI_PROF_SM_ACTIVE          %.3f\n  DCGM_FI_PROF_SM_OCCUPANCY       %.3f\n",
		d.GREngineActive, d.SMActive, d.SMOccupancy)
	fmt.Fprintf(w, "  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE %.3f\n  DCGM_FI_PROF_DRAM_ACTIVE        %.3f\n", d.TensorActive, d.DRAMActive)
	fmt.Fprintf(w, "  DCGM_FI_DEV_POWER_USAGE         %.0f W\n  DCGM_FI_DEV_SM_CLOCK            %.0f MHz", d.PowerW, d.SMClockMHz)
	if capped {
		fmt.Fprint(w, " (at the board's power limit: the clock falls)")
	}
	fmt.Fprintf(w, "\n  DCGM_FI_DEV_GPU_UTIL            %.0f (nvidia-smi's GPU-Util: 100 under any load that keeps a kernel running)\n", d.GPUUtil)
}
