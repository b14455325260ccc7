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
	Shape          stepShape          `json:"shape"`
	MoE            *stepMoE           `json:"moe,omitempty"`
	DCGM           stepDCGM           `json:"dcgm"`
}

// stepShape is what the model's shape gives every step: its weights (all,
// and one token's), one GPU's share of them, one token's KV on a GPU,
// and its attention: GQA or MLA's latent, sliding-window and chunked
// layers.
type stepShape struct {
	Params              float64 `json:"params"`
	ActiveParams        float64 `json:"active_params"`
	WeightBytesPerGPU   float64 `json:"weight_bytes_per_gpu"`
	KVBytesPerToken     int64   `json:"kv_bytes_per_token_per_gpu"`
	Attention           string  `json:"attention"`
	MLALatent           int     `json:"mla_latent_per_token_per_layer,omitempty"`
	SlidingWindow       int     `json:"sliding_window,omitempty"`
	SlidingWindowLayers int     `json:"sliding_window_layers,omitempty"`
	AttentionChunk      int     `json:"attention_chunk,omitempty"`
	ChunkedLayers       int     `json:"chunked_layers,omitempty"`
}

// stepMoE is what a mixture of experts' routed experts took of the step:
// the experts a MoE layer reads weights of (over all GPUs, and on the one
// that sets the pace), the tokens each multiplies, the busiest GPU's
// share of the routed tokens over the mean, the grouped GEMMs' time (in
// the gemm family), weights and FLOPs per GPU, the routing kernels' time
// (in overhead) and expert parallelism's exchange (all_to_all).
type stepMoE struct {
	Experts              int     `json:"experts"`
	TopK                 int     `json:"experts_per_token"`
	Layers               int     `json:"moe_layers"`
	SharedWidth          int     `json:"shared_expert_width,omitempty"`
	ExpertParallel       int     `json:"expert_parallel_size,omitempty"`
	ExpertsTouched       float64 `json:"experts_touched"`
	ExpertsTouchedPerGPU float64 `json:"experts_touched_per_gpu"`
	TokensPerExpert      float64 `json:"tokens_per_expert"`
	Imbalance            float64 `json:"imbalance"`
	ExpertGEMMMS         float64 `json:"expert_gemm_ms"`
	ExpertWeightBytes    float64 `json:"expert_weight_bytes_per_gpu"`
	ExpertFLOPs          float64 `json:"expert_flops_per_gpu"`
	RoutingMS            float64 `json:"routing_ms"`
	AllToAllMS           float64 `json:"all_to_all_ms"`
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
			"all_reduce": ms(c.AllReduce), "all_to_all": ms(c.AllToAll), "overhead": ms(c.Overhead)},
		Shape: shapeOf(&cm),
		DCGM: stepDCGM{GREngineActive: rd.EngineActive, SMActive: rd.SMActive, SMOccupancy: rd.SMOccupancy, TensorActive: rd.TensorActive,
			DRAMActive: rd.DRAMActive, PowerW: rd.Watts, SMClockMHz: rd.SMClockMHz, GPUUtil: rd.GPUUtil, MemCopyUtil: rd.CopyUtil}}
	r.Weights = cm.Model.WeightsName()
	if e := cm.Model.MoE; e != nil {
		r.MoE = &stepMoE{Experts: e.Experts, TopK: e.TopK, Layers: e.Layers, SharedWidth: e.SharedIntermediate,
			ExpertsTouched: c.MoE.Touched, ExpertsTouchedPerGPU: c.MoE.PerGPU, TokensPerExpert: c.MoE.TokensPerExpert,
			Imbalance: c.MoE.Imbalance, ExpertGEMMMS: ms(c.MoE.GEMM), ExpertWeightBytes: c.MoE.WeightBytes, ExpertFLOPs: c.MoE.FLOPs,
			RoutingMS: ms(c.MoE.Routing), AllToAllMS: ms(c.AllToAll)}
		if cm.EP > cm.TP || cm.EP == cm.TP && cm.EP > 0 {
			r.MoE.ExpertParallel = cm.EP
		}
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

// shapeOf is the shape's part of a step's price.
func shapeOf(cm *costmodel.Model) stepShape {
	m := &cm.Model
	s := stepShape{Params: m.Params, ActiveParams: m.ActiveParams(), WeightBytesPerGPU: costmodel.WeightBytesPerGPU(m, max(1, cm.TP), max(1, cm.TP, cm.EP)),
		KVBytesPerToken: m.KVBytesPerToken(cm.TP), Attention: "gqa",
		SlidingWindow: m.Window, SlidingWindowLayers: m.WindowLayers, AttentionChunk: m.Chunk, ChunkedLayers: m.ChunkLayers}
	if a := m.MLA; a != nil {
		s.Attention, s.MLALatent = "mla", a.KVLoRARank+a.QKRopeHeadDim
	}
	if s.ChunkedLayers == 0 {
		s.AttentionChunk = 0
	}
	return s
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
	for _, f := range []string{"gemm", "attention", "elementwise", "all_reduce", "all_to_all", "overhead"} {
		if v := r.Families[f]; v > 0 {
			fmt.Fprintf(tw, "%s\t%.3f\t%.1f%%\t\n", f, v, 100*v/r.DurationMS)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nPer GPU: %.3g FLOP, %.3g bytes read, %.3g written.\n", r.FLOPs, r.ReadBytes, r.WriteBytes)
	sh := &r.Shape
	fmt.Fprintf(w, "Model: %.4g weights (%.4g a token), %.3g GB of them a GPU; %d KV bytes a token a GPU (%s",
		sh.Params, sh.ActiveParams, sh.WeightBytesPerGPU/1e9, sh.KVBytesPerToken, sh.Attention)
	if sh.MLALatent > 0 {
		fmt.Fprintf(w, ": a latent of %d a layer", sh.MLALatent)
	}
	if sh.SlidingWindowLayers > 0 {
		fmt.Fprintf(w, "; %d layers see a window of %d", sh.SlidingWindowLayers, sh.SlidingWindow)
	}
	if sh.ChunkedLayers > 0 {
		fmt.Fprintf(w, "; %d layers their chunk of %d", sh.ChunkedLayers, sh.AttentionChunk)
	}
	fmt.Fprintln(w, ").")
	if e := r.MoE; e != nil {
		fmt.Fprintf(w, "Experts: %d of %d a token on %d layers; %.1f touched a layer (%.1f on the busiest GPU, %.1f tokens each, %.2f× the mean share): "+
			"%.3f ms of grouped GEMMs, %.3g bytes and %.3g FLOP a GPU; %.3f ms of routing",
			e.TopK, e.Experts, e.Layers, e.ExpertsTouched, e.ExpertsTouchedPerGPU, e.TokensPerExpert, e.Imbalance, e.ExpertGEMMMS, e.ExpertWeightBytes, e.ExpertFLOPs, e.RoutingMS)
		if e.AllToAllMS > 0 {
			fmt.Fprintf(w, ", %.3f ms exchanging tokens", e.AllToAllMS)
		}
		fmt.Fprintln(w, ".")
	}
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
