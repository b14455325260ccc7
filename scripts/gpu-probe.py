#!/usr/bin/env python3
"""glassbox's GPU probe: measures what the simulator's hardware profile is fitted to, on the GPU it runs on.

Run where an NVIDIA GPU and PyTorch are (no glassbox needed there):

    python3 scripts/gpu-probe.py --out probe.json                # everything (a few minutes)
    python3 scripts/gpu-probe.py --sections steps,gpm --steps held-out --budget 150 --out probe.json

then fit a profile from it here:

    glassbox simulate calibrate --from-probe probe.json --output my-gpu.yaml
    glassbox simulate --sim-calibration my-gpu.yaml ...

What it measures, on a transformer of a known shape with random bf16 weights (--model, default llama-3.1-8b):
  gemm      every projection (qkv, o, gate_up, down, lm_head) at M = 1 … 8192 tokens through F.linear (cuBLAS, as
            vLLM's unquantised layers), weights rotated past the L2 so each call reads them; with --fp8 also FP8
            (e4m3, per-tensor scales, torch._scaled_mm) where the GPU has it;
  steps     whole engine steps (B sequences decoding at context ctx, and/or a prefill chunk of N tokens at
            position pos), each captured in a CUDA graph and replayed back to back, norms/RoPE/SiLU fused by
            torch.compile around the GEMMs (as vLLM V1 compiles all but attention), attention through SDPA with
            two real kernels (FlashAttention-2 and cuDNN): both times are kept and the faster is the step's;
  gpm       the GPU's own activity counters (NVML GPU Performance Monitoring: what dcgm-exporter's
            DCGM_FI_PROF_* fields read on Hopper) and NVML's power, clocks and utilisation under steady loads of
            those steps, back to back and with host gaps between them.

The output has the layout of the reference files in ../shared/reference/calibration/h200/ (h200-fused.json for
steps and gpm, h200-eager.json for gemm, h200-gaps.json for loads with gaps), so one reader takes both.
Sections are independent: one that fails is recorded under "errors" and the rest go on; no new section starts
after --budget seconds.
"""
import argparse
import json
import os
import sys
import time
import traceback

T0 = time.time()

SHAPES = {
    # name: layers, hidden, heads, kv heads, head dim, intermediate, vocabulary (config.json of each)
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256),
    "qwen3-14b": (40, 5120, 40, 8, 128, 17408, 151936),
    "llama-3.2-3b": (28, 3072, 24, 8, 128, 8192, 128256),
}

# Step compositions: (decode seqs, their context, prefill tokens, chunk position).
FIT_STEPS = [(0, 0, n, 0) for n in (128, 512, 2048, 8192)] + \
    [(b, c, 0, 0) for c in (512, 2048) for b in (1, 8, 32, 64, 128, 256)] + [(512, 512, 0, 0), (1024, 512, 0, 0)]
HELD_OUT_STEPS = [(b, 8192, 0, 0) for b in (1, 8, 32, 64)] + [(b, 32768, 0, 0) for b in (1, 4, 16)] + \
    [(0, 0, 1024, 0), (0, 0, 4096, 0), (0, 0, 2048, 6144), (0, 0, 512, 16384)] + \
    [(64, 2048, 512, 0), (64, 2048, 2048, 0), (256, 512, 1024, 0), (8, 8192, 4096, 0)]
CHECK_STEPS = [(1, 512, 0, 0), (64, 2048, 0, 0), (0, 0, 2048, 0)]  # fit steps again: board to board
EXTRA_STEPS = [(0, 0, 4096, 4096), (32, 4096, 2048, 0), (128, 8192, 0, 0), (16, 16384, 0, 0)]
# Steady loads for the counters: (label, decode seqs, context, prefill tokens).
LOADS = [("decode B=1 ctx=2048", 1, 2048, 0), ("decode B=16 ctx=2048", 16, 2048, 0),
         ("decode B=64 ctx=2048", 64, 2048, 0), ("decode B=256 ctx=2048", 256, 2048, 0),
         ("decode B=64 ctx=8192", 64, 8192, 0), ("prefill N=512", 0, 0, 512), ("prefill N=8192", 0, 0, 8192),
         ("mixed B=64 ctx=2048 N=1024", 64, 2048, 1024)]
GAP_FRACTIONS = (0.0, 0.05, 0.25, 1.0)  # host gap after each step, as a share of the step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="llama-3.1-8b", choices=sorted(SHAPES))
    ap.add_argument("--sections", default="bandwidth,gemm,steps,gpm,gaps")
    ap.add_argument("--steps", default="all", help="step sets in order: fit, held-out, check, extra or all (comma-separated)")
    ap.add_argument("--loads", default="all", help="'all' or comma-separated indexes into the load list")
    ap.add_argument("--fp8", action="store_true", help="also FP8 GEMMs (Hopper and later)")
    ap.add_argument("--budget", type=float, default=600, help="seconds after which no new section or step starts")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "probe.json"))
    a = ap.parse_args()
    Probe(a).run()


class Probe:
    def __init__(self, a):
        self.a = a
        self.res = {"meta": {"probe": "glassbox scripts/gpu-probe.py", "model": a.model}, "bandwidth": {}, "gemm": [],
                    "steps": [], "gpm": [], "loads": [], "errors": []}

    # ------------------------------------------------------------------ plumbing
    def left(self):
        return self.a.budget - (time.time() - T0)

    def save(self):
        self.res["meta"]["elapsed_s"] = round(time.time() - T0, 1)
        tmp = self.a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.res, f, indent=1)
        os.replace(tmp, self.a.out)

    def log(self, msg):
        print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)

    def section(self, name, fn):
        if self.left() < 10:
            self.res["errors"].append(f"{name}: not started, budget spent")
            self.log(f"skip {name}")
            return
        self.log(name)
        try:
            fn()
        except Exception as e:  # one section's failure must not lose the others
            self.res["errors"].append(f"{name}: {type(e).__name__}: {e}\n{traceback.format_exc()[-1200:]}")
            self.log(f"  {name} failed: {type(e).__name__}: {e}")
        self.save()

    def run(self):
        global torch, F, sdpa_kernel, SDPBackend, causal_lower_right
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import sdpa_kernel, SDPBackend
        from torch.nn.attention.bias import causal_lower_right
        torch.backends.cuda.matmul.allow_tf32 = False
        self.dev = torch.device("cuda")
        p = torch.cuda.get_device_properties(0)
        self.res["meta"].update({"gpu": p.name, "sms": p.multi_processor_count, "mem_bytes": p.total_memory,
                                 "cc": f"{p.major}.{p.minor}", "torch": torch.__version__, "cuda": torch.version.cuda,
                                 "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.nvml = NVML(self.res)
        secs = self.a.sections.split(",")
        known = {"bandwidth", "gemm", "steps", "gpm", "gaps"}
        if not set(secs) <= known:
            raise SystemExit(f"--sections: unknown {sorted(set(secs) - known)} (known: {sorted(known)})")
        if "bandwidth" in secs:
            self.section("bandwidth", self.bandwidth)
        self.model = None
        self.section("model", self.build)
        if self.model is None:
            self.save()
            return
        self.section("compile", lambda: self.time_step(8, 512, 0, 0, record=False))
        for sec in secs:
            if sec == "gemm":
                self.section("gemm", self.gemm)
            elif sec == "steps":
                self.section("steps", self.steps_section)
            elif sec in ("gpm", "gaps"):
                self.section(sec, lambda gaps=(sec == "gaps"): self.gpm(gaps=gaps))
        self.save()
        self.summary()

    def steps_section(self):
        sets = {"fit": FIT_STEPS, "held-out": HELD_OUT_STEPS, "check": CHECK_STEPS, "extra": EXTRA_STEPS}
        want = self.a.steps.split(",")
        steps = []
        for name in (list(sets) if "all" in want else want):
            if name not in sets:
                raise ValueError(f"--steps: unknown set {name!r} (fit, held-out, check, extra, all)")
            steps += [s for s in sets[name] if s not in steps]
        self.steps(steps)

    def summary(self):
        for s in self.res["steps"]:
            print(f"  B={s['decode_seqs']:5d} ctx={s['ctx']:6d} N={s['prefill_tokens']:5d}@{s['chunk_pos']:<6d} "
                  f"{s['median_ms']:9.3f} ms ({s['attention_kernel']}; fa2 {s.get('fa2_ms')} cudnn {s.get('cudnn_ms')})")
        for g in self.res["gpm"]:
            print(f"  gpm {g['load']:34s} {json.dumps(g.get('gpm'))} {json.dumps(g.get('nvml'))}")
        print("errors:", len(self.res["errors"]))
        for e in self.res["errors"]:
            print("  ", e.splitlines()[0][:300])

    # ------------------------------------------------------------------ timing
    def graph(self, fn):
        """fn captured in a CUDA graph after two warm-up calls on a side stream."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        return g

    def time_graph(self, g, reps):
        """Median of reps single replays between events, and the mean of reps replays back to back (ms)."""
        for _ in range(3):
            g.replay()
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in evs:
            a.record()
            g.replay()
            b.record()
        torch.cuda.synchronize()
        each = sorted(a.elapsed_time(b) for a, b in evs)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            g.replay()
        b.record()
        torch.cuda.synchronize()
        return each[len(each) // 2], a.elapsed_time(b) / reps

    # ------------------------------------------------------------------ sections
    def bandwidth(self):
        n = 2 << 30  # bytes of bf16
        x = torch.empty(n // 2, dtype=torch.bfloat16, device=self.dev).normal_()
        y = torch.empty_like(x)
        med, _ = self.time_graph(self.graph(lambda: torch.add(x, 1, out=y)), 10)
        self.res["bandwidth"]["add_read_plus_write_TBps"] = round(2 * n / (med / 1e3) / 1e12, 3)
        xv = x.view(-1, 8192)
        med, _ = self.time_graph(self.graph(lambda: xv.sum(dim=0)), 10)
        self.res["bandwidth"]["read_sum_TBps"] = round(n / (med / 1e3) / 1e12, 3)
        del x, y, xv
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=self.dev)
        b = torch.randn(8192, 8192, dtype=torch.bfloat16, device=self.dev)
        med, _ = self.time_graph(self.graph(lambda: a @ b), 10)
        self.res["bandwidth"]["bf16_gemm_8192_TFLOPs"] = round(2 * 8192 ** 3 / (med / 1e3) / 1e12, 1)
        del a, b
        torch.cuda.empty_cache()

    def build(self):
        self.model = Model(self.a.model, SHAPES[self.a.model], self.dev)
        self.res["meta"]["matmul_params"] = self.model.matmul_params()
        self.res["meta"]["kv_tokens"] = self.model.kv_tokens

    def gemm(self):
        m = self.model
        M_list = (1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
        for name, Ws in m.gemm_weights().items():
            for M in M_list:
                if self.left() < 5:
                    self.res["errors"].append("gemm: stopped, budget spent")
                    return
                x = torch.randn(M, Ws[0].shape[1], dtype=torch.bfloat16, device=self.dev)

                def f():
                    for w in Ws:
                        F.linear(x, w)
                med, _ = self.time_graph(self.graph(f), 10)
                per = med / len(Ws)
                N, K = Ws[0].shape
                self.res["gemm"].append({"model": m.name, "gemm": name, "dtype": "bf16", "M": M, "N": N, "K": K,
                                         "ms": round(per, 5), "TFLOPs": round(2 * M * N * K / (per / 1e3) / 1e12, 2),
                                         "weight_TBps": round(N * K * 2 / (per / 1e3) / 1e12, 3)})
                if self.a.fp8 and hasattr(torch, "float8_e4m3fn") and name != "lm_head":
                    self.fp8_gemm(name, Ws[0], M)
            torch.cuda.empty_cache()
            self.save()

    def fp8_gemm(self, name, W, M):
        one = torch.ones((), device=self.dev)
        N, K = W.shape
        w8 = W.to(torch.float8_e4m3fn)
        Mp = max(16, (M + 15) // 16 * 16)  # _scaled_mm wants a multiple of 16 rows
        x8 = torch.zeros(Mp, K, dtype=torch.bfloat16, device=self.dev).to(torch.float8_e4m3fn)
        try:
            med, _ = self.time_graph(self.graph(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one,
                                                                           out_dtype=torch.bfloat16)), 10)
        except Exception as e:
            self.res["errors"].append(f"fp8 gemm {name} M={M}: {type(e).__name__}: {str(e)[:200]}")
            return
        self.res["gemm"].append({"model": self.model.name, "gemm": name, "dtype": "fp8", "M": M, "N": N, "K": K,
                                 "ms": round(med, 5), "TFLOPs": round(2 * M * N * K / (med / 1e3) / 1e12, 2),
                                 "weight_TBps": round(N * K / (med / 1e3) / 1e12, 3)})

    def time_step(self, B, ctx, N, pos, record=True):
        """One step composition with both attention kernels; the faster is the step's time."""
        m = self.model
        if B * ctx + pos + N > m.kv_tokens:
            self.res["errors"].append(f"step B={B} ctx={ctx} N={N}@{pos}: more KV than the pool ({m.kv_tokens} tokens)")
            return
        row = {"model": m.name, "fused": True, "decode_seqs": B, "ctx": ctx if B else 1, "prefill_tokens": N,
               "chunk_pos": pos}
        best = None
        kernels = [("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                   ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
        for kname, backend in kernels:
            if kname == "efficient" and best is not None:
                break  # only where neither of the two ran
            try:
                g = self.graph(m.step(B, ctx, N, pos, backend))
                med, b2b = self.time_graph(g, 3)  # a first look, to size the repetitions
                reps = 15 if med < 30 else 8 if med < 120 else 4
                med, b2b = self.time_graph(g, reps)
                del g
            except Exception as e:
                row[kname + "_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                continue
            row[kname + "_ms"] = round(med, 4)
            if best is None or med < best[1]:
                best = (kname, med, b2b)
        torch.cuda.empty_cache()
        if best is None:
            self.res["errors"].append(f"step B={B} ctx={ctx} N={N}@{pos}: no attention kernel ran: {row}")
            return
        row.update({"attention_kernel": best[0], "median_ms": round(best[1], 4), "back_to_back_ms": round(best[2], 4)})
        if record:
            self.res["steps"].append(row)
            self.log(f"  B={B} ctx={ctx} N={N}@{pos}: {best[1]:.3f} ms ({best[0]}; fa2 {row.get('fa2_ms')} "
                     f"cudnn {row.get('cudnn_ms')})")
        return row

    def steps(self, steps):
        for B, ctx, N, pos in steps:
            if self.left() < 8:
                self.res["errors"].append(f"steps: stopped before B={B} ctx={ctx} N={N}@{pos}, budget spent")
                return
            self.time_step(B, ctx, N, pos)
            self.save()

    def gpm(self, gaps):
        if not self.nvml.ok:
            raise RuntimeError("no NVML: " + self.nvml.err)
        m = self.model
        if not gaps:
            time.sleep(1.0)
            s1 = self.nvml.sample()
            time.sleep(1.0)
            self.res["gpm"].append({"load": "idle", "gpm": self.nvml.metrics(s1, self.nvml.sample()), "nvml": self.nvml.now()})
        loads = LOADS if self.a.loads == "all" else [LOADS[int(i)] for i in self.a.loads.split(",")]
        if gaps:
            loads = [LOADS[0], LOADS[2]]
        for label, B, ctx, N in loads:
            for kname, backend in (("fa2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                if self.left() < 6:
                    self.res["errors"].append(f"gpm: stopped before {label}, budget spent")
                    return
                try:
                    g = self.graph(m.step(B, ctx, N, 0, backend))
                except Exception as e:
                    self.res["errors"].append(f"gpm {label} {kname}: {type(e).__name__}: {str(e)[:200]}")
                    continue
                _, step_ms = self.time_graph(g, 5)
                for frac in (GAP_FRACTIONS if gaps else (0.0,)):
                    row = self.load(g, step_ms, step_ms * frac / 1e3)
                    row.update({"load": label, "attention_kernel": kname, "B": B, "ctx": ctx, "N": N})
                    (self.res["loads"] if gaps else self.res["gpm"]).append(row)
                    self.log(f"  {label} {kname} gap {frac:.2f}: {json.dumps(row.get('gpm'))} {json.dumps(row.get('nvml'))}")
                del g
                torch.cuda.empty_cache()
                self.save()
                if gaps:
                    break  # the counters' relation to the busy share: one kernel is enough

    def load(self, g, step_ms, gap_s, seconds=1.5):
        """Replays g for about `seconds` (back to back, or with a host gap after each step) between two counter
        samples."""
        torch.cuda.synchronize()
        time.sleep(0.3)  # the previous load leaves the counters' window
        s1 = self.nvml.sample()
        t1 = time.time()
        now = None
        n = 0
        if gap_s == 0:
            n = max(1, int(seconds * 1e3 / step_ms))
            for _ in range(n):
                g.replay()
            time.sleep(max(0.0, t1 + 0.7 * seconds - time.time()))
            now = self.nvml.now()
            torch.cuda.synchronize()
        else:
            while time.time() - t1 < seconds:
                g.replay()
                torch.cuda.synchronize()
                n += 1
                time.sleep(gap_s)
                if now is None and time.time() - t1 > 0.6 * seconds:
                    now = self.nvml.now()
        el = time.time() - t1
        s2 = self.nvml.sample()
        return {"steps": n, "seconds": round(el, 3), "step_ms": round(step_ms, 4), "gap_ms": round(gap_s * 1e3, 4),
                "busy_share": round(min(1.0, n * step_ms / 1e3 / el), 3), "gpm": self.nvml.metrics(s1, s2), "nvml": now}


class Model:
    """A decoder of a real shape with random bf16 weights and a KV pool; step() builds one step's forward."""

    def __init__(self, name, shape, dev):
        self.name, self.dev = name, dev
        self.L, self.H, self.NH, self.NKV, self.D, self.I, self.V = shape
        free, _ = torch.cuda.mem_get_info()
        bf = torch.bfloat16

        def w(*s):
            return torch.empty(*s, dtype=bf, device=dev).normal_(0, 0.02)
        qkv = (self.NH + 2 * self.NKV) * self.D
        self.emb, self.head = w(self.V, self.H), w(self.V, self.H)
        self.layers = [{"qkv": w(qkv, self.H), "o": w(self.H, self.NH * self.D), "gu": w(2 * self.I, self.H),
                        "d": w(self.H, self.I), "n1": torch.ones(self.H, dtype=bf, device=dev),
                        "n2": torch.ones(self.H, dtype=bf, device=dev)} for _ in range(self.L)]
        self.nf = torch.ones(self.H, dtype=bf, device=dev)
        # The KV pool takes what is left but 20 GB (activations, graphs, the compiler), at most 540k tokens.
        free, _ = torch.cuda.mem_get_info()
        per_token = 2 * self.L * self.NKV * self.D * 2
        self.kv_tokens = int(max(0, min(540_000, (free - 20e9) / per_token)))
        per = self.kv_tokens * self.NKV * self.D
        self.k = [torch.empty(per, dtype=bf, device=dev).normal_() for _ in range(self.L)]
        self.v = [torch.empty(per, dtype=bf, device=dev).normal_() for _ in range(self.L)]
        inv = 1.0 / (500000 ** (torch.arange(0, self.D, 2, device=dev, dtype=torch.float32) / self.D))
        ang = torch.outer(torch.arange(0, 131072, device=dev, dtype=torch.float32), inv)
        self.cos, self.sin = ang.cos().to(bf), ang.sin().to(bf)
        self.pre, self.post = self.compile()

    def matmul_params(self):
        qkv = (self.NH + 2 * self.NKV) * self.D
        return self.L * (qkv * self.H + self.H * self.NH * self.D + 3 * self.I * self.H)

    def gemm_weights(self):
        """Each projection's weights in four layers (rotated so that L2 never holds one between calls), and the
        LM head."""
        out = {k: [self.layers[i][w] for i in range(min(4, self.L))]
               for k, w in (("qkv", "qkv"), ("o", "o"), ("gate_up", "gu"), ("down", "d"))}
        out["lm_head"] = [self.head]
        return out

    def compile(self):
        """The layer's halves around attention, compiled by Inductor: RMSNorm, RoPE, SiLU·mul and the residual adds
        fuse around cuBLAS GEMMs."""
        NH, NKV, D, eps, half = self.NH, self.NKV, self.D, 1e-5, self.D // 2

        def rms(x, w):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

        def rope(x, cos, sin):
            a, b = x[..., :half], x[..., half:]
            return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)

        def pre(x, n1, wqkv, cos, sin):
            T = x.shape[0]
            q, k, v = F.linear(rms(x, n1), wqkv).split([NH * D, NKV * D, NKV * D], -1)
            return rope(q.view(T, NH, D), cos, sin), rope(k.view(T, NKV, D), cos, sin), v.reshape(T, NKV, D)

        def post(x, a, wo, n2, wgu, wd):
            x = x + F.linear(a, wo)
            g, u = F.linear(rms(x, n2), wgu).chunk(2, -1)
            return x + F.linear(F.silu(g) * u, wd)
        self.rms = rms
        return (torch.compile(pre, dynamic=True, fullgraph=True), torch.compile(post, dynamic=True, fullgraph=True))

    def step(self, B, ctx, N, pos, backend):
        """A closure over static inputs: B sequences decoding their ctx-th token (attending to ctx keys), and a
        prefill chunk of N tokens at positions pos … pos+N−1 (attending to the pos before it too); every decode
        row and the chunk's last row are sampled (LM head and argmax on those rows only)."""
        dev, NH, NKV, D = self.dev, self.NH, self.NKV, self.D
        grp, T = NH // NKV, B + N
        ids = torch.randint(0, self.V, (T,), device=dev)
        posv = torch.cat([torch.full((B,), max(ctx - 1, 0), device=dev, dtype=torch.long),
                          torch.arange(pos, pos + N, device=dev, dtype=torch.long)])
        cos, sin = self.cos[posv][:, None, :], self.sin[posv][:, None, :]
        dk = [k[:B * NKV * ctx * D].view(B, NKV, ctx, D) for k in self.k]
        dv = [v[:B * NKV * ctx * D].view(B, NKV, ctx, D) for v in self.v]
        off, Lc = B * NKV * ctx * D, pos + N
        pk = [k[off:off + NKV * Lc * D].view(1, NKV, Lc, D) for k in self.k]
        pv = [v[off:off + NKV * Lc * D].view(1, NKV, Lc, D) for v in self.v]
        rows = torch.tensor(list(range(B)) + ([T - 1] if N else []), device=dev)
        mask = causal_lower_right(N, Lc) if N and pos else None

        def fwd():
            x = F.embedding(ids, self.emb)
            for li, w in enumerate(self.layers):
                q, k, v = self.pre(x, w["n1"], w["qkv"], cos, sin)
                outs = []
                if B:
                    dk[li][:, :, ctx - 1] = k[:B]
                    dv[li][:, :, ctx - 1] = v[:B]
                    # GQA decode: each KV head's query heads ride as its query rows (flash-decoding's packing)
                    with sdpa_kernel([backend]):
                        o = F.scaled_dot_product_attention(q[:B].view(B, NKV, grp, D), dk[li], dv[li])
                    outs.append(o.reshape(B, NH * D))
                if N:
                    pk[li][0, :, pos:] = k[B:].transpose(0, 1)
                    pv[li][0, :, pos:] = v[B:].transpose(0, 1)
                    qp = q[B:].transpose(0, 1).unsqueeze(0)
                    with sdpa_kernel([backend]):
                        if mask is None:
                            o = F.scaled_dot_product_attention(qp, pk[li], pv[li], is_causal=True, enable_gqa=True)
                        else:
                            # the lower-right causal mask takes no GQA: the KV heads are expanded (as the
                            # reference run did)
                            o = F.scaled_dot_product_attention(qp, pk[li].repeat_interleave(grp, 1),
                                                               pv[li].repeat_interleave(grp, 1), attn_mask=mask)
                    outs.append(o[0].transpose(0, 1).reshape(N, NH * D))
                a = outs[0] if len(outs) == 1 else torch.cat(outs)
                x = self.post(x, a, w["o"], w["n2"], w["gu"], w["d"])
            return torch.argmax(F.linear(self.rms(x[rows], self.nf), self.head), -1)
        return fwd


class NVML:
    """NVML through nvidia-ml-py: GPM samples (DCGM_FI_PROF_* on Hopper) and instantaneous power, clocks,
    utilisation."""
    IDS = {"graphics": 1, "sm_active": 2, "sm_occupancy": 3, "any_tensor": 5, "hmma_tensor": 7, "dram_bw": 10,
           "fp32": 12, "fp16": 13}

    def __init__(self, res):
        self.ok, self.err = False, ""
        try:
            import pynvml as nv
            self.nv = nv
            nv.nvmlInit()
            self.h = nv.nvmlDeviceGetHandleByIndex(0)
            res["meta"]["driver"] = nv.nvmlSystemGetDriverVersion()
            res["meta"]["power_limit_w"] = nv.nvmlDeviceGetEnforcedPowerLimit(self.h) / 1000
            try:
                res["meta"]["gpm_supported"] = bool(nv.nvmlGpmQueryDeviceSupport(self.h).isSupportedDevice)
            except Exception as e:
                res["meta"]["gpm_supported"] = f"error: {e}"
            self.ok = True
        except Exception as e:
            self.err = f"{type(e).__name__}: {e}"
            res["errors"].append("nvml: " + self.err)

    def sample(self):
        try:
            s = self.nv.nvmlGpmSampleAlloc()
            self.nv.nvmlGpmSampleGet(self.h, s)
            return s
        except Exception:
            return None

    def metrics(self, s1, s2):
        if s1 is None or s2 is None:
            return None
        nv = self.nv
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        names = list(self.IDS)
        mg.numMetrics = len(names)
        mg.sample1, mg.sample2 = s1, s2
        for i, n in enumerate(names):
            mg.metrics[i].metricId = self.IDS[n]
        try:
            nv.nvmlGpmMetricsGet(mg)
            return {n: (round(mg.metrics[i].value, 3) if mg.metrics[i].nvmlReturn == 0 else None)
                    for i, n in enumerate(names)}
        finally:
            nv.nvmlGpmSampleFree(s1)
            nv.nvmlGpmSampleFree(s2)

    def now(self):
        nv, h, r = self.nv, self.h, {}
        for k, fn in (("util_gpu", lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu),
                      ("util_mem", lambda: nv.nvmlDeviceGetUtilizationRates(h).memory),
                      ("power_w", lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000),
                      ("sm_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                      ("mem_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                      ("temp_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))):
            try:
                r[k] = fn()
            except Exception as e:
                r[k + "_err"] = str(e)[:100]
        return r


if __name__ == "__main__":
    sys.exit(main())
