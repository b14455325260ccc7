// Sampling on the GPU, one block per logits row: structured outputs'
// token masks (and banned tokens, folded into the mask by the host),
// greedy (the first largest logit, as the CPU's Argmax), or a draw under
// temperature, top-k, min-p and top-p with a uniform number the host drew
// from the sequence's generator. top-k and top-p are thresholds found by
// radix search over the row (ties at a threshold are all kept, where the
// CPU keeps the lower ids), and the draw walks the candidates in id
// order (the CPU walks them by weight): the same distribution, not the
// same token for the same uniform number.
#pragma once
#include "common.cuh"

#define SAMPLE_THREADS 1024

// ordered maps a float to an unsigned key with the same order.
DEV u32 ordered(float x) {
  u32 b = __builtin_bit_cast(u32, x);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

DEV bool allowed(const u64* mask, int i) { return !mask || (mask[i >> 6] >> (i & 63)) & 1; }

// logprob is token i's under the masked logits: -inf for a masked token
// (a row with nothing allowed samples one).
DEV float logprob(const float* x, const u64* mask, int i, float lse) { return allowed(mask, i) ? x[i] - lse : neg_inf(); }

// sample: grid m rows, block SAMPLE_THREADS. Row r's parameters: temp (0:
// greedy), topk (0: off), topp (1: off), minp (0: off), u (the uniform
// number), maskrow (-1: no mask; else its row in masks, words u64 each).
// out gets the token and its logprob under the (masked) logits.
extern "C" __global__ void __launch_bounds__(1024) sample(const float* logits, int V, const float* temp, const int* topk, const float* topp, const float* minp,
                                  const float* u, const int* maskrow, const u64* masks, int words, int* out, float* outlp) {
  __shared__ float fs[32];
  __shared__ double ds[32];
  __shared__ int is[32];
  __shared__ u32 us[32];
  int r = blockIdx.x, tid = threadIdx.x, nth = blockDim.x;
  const float* x = logits + (long)r * V;
  const u64* mask = maskrow[r] >= 0 ? masks + (long)maskrow[r] * words : 0;
  // Max, the first index holding it, and the log-sum-exp.
  float mx = neg_inf();
  int arg = 0x7fffffff;
  for (int i = tid; i < V; i += nth) {
    float v = allowed(mask, i) ? x[i] : neg_inf();
    if (v > mx) mx = v, arg = i;
  }
  for (int m = 16; m > 0; m >>= 1) {
    float ov = shfl_xor(mx, m);
    int oi = shfl_xor(arg, m);
    if (ov > mx || (ov == mx && oi < arg)) mx = ov, arg = oi;
  }
  int lane = tid & 31, warp = tid >> 5, warps = nth >> 5;
  __syncthreads();
  if (lane == 0) fs[warp] = mx, is[warp] = arg;
  __syncthreads();
  mx = lane < warps ? fs[lane] : neg_inf();
  arg = lane < warps ? is[lane] : 0x7fffffff;
  for (int m = 16; m > 0; m >>= 1) {
    float ov = shfl_xor(mx, m);
    int oi = shfl_xor(arg, m);
    if (ov > mx || (ov == mx && oi < arg)) mx = ov, arg = oi;
  }
  // No allowed logit above -inf (every token masked, every logit NaN or
  // -inf): token 0, as the CPU's Argmax, never an index past the row.
  if (arg == 0x7fffffff) arg = 0;
  double se = 0;
  for (int i = tid; i < V; i += nth)
    if (allowed(mask, i)) se += expf_(x[i] - mx);
  se = block_sum(se, ds);
  float lse = mx + __nvvm_lg2_approx_f((float)se) * 0.6931471805599453f;
  float T = temp[r];
  int k = topk[r];
  if (T == 0 || k == 1) {
    if (tid == 0) out[r] = arg, outlp[r] = logprob(x, mask, arg, lse);
    return;
  }
  float inv = 1.0f / T;
  // top-k: the largest key with at least k logits at or above it.
  u32 kkey = 0;
  if (k > 0 && k < V) {
    for (int b = 31; b >= 0; b--) {
      u32 cand = kkey | (1u << b);
      double c = 0;
      for (int i = tid; i < V; i += nth)
        if (allowed(mask, i) && ordered(x[i]) >= cand) c += 1;
      if (block_sum(c, ds) >= k) kkey = cand;
    }
  }
  float mp = minp[r];
  // A candidate is allowed, at or above the top-k key, and weighs at
  // least min-p (the largest weighs 1).
#define WEIGHT(i) (allowed(mask, i) && ordered(x[i]) >= kkey ? expf_((x[i] - mx) * inv) : 0.0f)
#define CAND(w) ((w) > 0 && (w) >= mp)
  double total = 0;
  for (int i = tid; i < V; i += nth) {
    float w = WEIGHT(i);
    if (CAND(w)) total += w;
  }
  total = block_sum(total, ds);
  // top-p: the largest weight threshold whose candidates keep p of the mass.
  u32 pkey = 0;
  float p = topp[r];
  if (p < 1) {
    for (int b = 30; b >= 0; b--) {
      u32 cand = pkey | (1u << b);
      double s = 0;
      for (int i = tid; i < V; i += nth) {
        float w = WEIGHT(i);
        if (CAND(w) && __builtin_bit_cast(u32, w) >= cand) s += w;
      }
      if (block_sum(s, ds) >= p * total) pkey = cand;
    }
  }
#define KEPT(w) (CAND(w) && __builtin_bit_cast(u32, w) >= pkey)
  double kept = 0;
  for (int i = tid; i < V; i += nth) {
    float w = WEIGHT(i);
    if (KEPT(w)) kept += w;
  }
  kept = block_sum(kept, ds);
  // The draw: the first candidate, in id order, where the running sum
  // passes u·kept. Each thread scans its own run of ids.
  double target = (double)u[r] * kept;
  int per = (V + nth - 1) / nth, lo = tid * per, hi = imin(V, lo + per);
  double mine = 0;
  for (int i = lo; i < hi; i++) {
    float w = WEIGHT(i);
    if (KEPT(w)) mine += w;
  }
  // Exclusive prefix over threads (warp scan, then over warps).
  double incl = mine;
  for (int m = 1; m < 32; m <<= 1) {
    double o = __builtin_bit_cast(double, (u64)0);
    u64 bits = __builtin_bit_cast(u64, incl);
    int lo32 = __nvvm_shfl_sync_up_i32(0xffffffffu, (int)(u32)bits, m, 0), hi32 = __nvvm_shfl_sync_up_i32(0xffffffffu, (int)(u32)(bits >> 32), m, 0);
    o = __builtin_bit_cast(double, ((u64)(u32)hi32 << 32) | (u32)lo32);
    if (lane >= m) incl += o;
  }
  __syncthreads();
  if (lane == 31) ds[warp] = incl;
  __syncthreads();
  double before = incl - mine;
  for (int w = 0; w < warp; w++) before += ds[w];
  int found = 0x7fffffff, last = -1;
  if (before <= target && target < before + mine) {
    double acc = before;
    for (int i = lo; i < hi; i++) {
      float w = WEIGHT(i);
      if (!KEPT(w)) continue;
      acc += w;
      if (acc > target) {
        found = i;
        break;
      }
    }
  }
  for (int i = hi - 1; i >= lo; i--) {
    float w = WEIGHT(i);
    if (KEPT(w)) {
      last = i;
      break;
    }
  }
  // The lowest id found wins; rounding that left the sum short takes
  // the last candidate.
  for (int m = 16; m > 0; m >>= 1) {
    found = imin(found, shfl_xor(found, m));
    last = imax(last, shfl_xor(last, m));
  }
  __syncthreads();
  if (lane == 0) is[warp] = found, us[warp] = (u32)last;
  __syncthreads();
  found = lane < warps ? is[lane] : 0x7fffffff;
  last = lane < warps ? (int)us[lane] : -1;
  for (int m = 16; m > 0; m >>= 1) {
    found = imin(found, shfl_xor(found, m));
    last = imax(last, shfl_xor(last, m));
  }
  if (tid == 0) {
    int tok = found != 0x7fffffff ? found : last >= 0 ? last : arg;
    out[r] = tok;
    outlp[r] = logprob(x, mask, tok, lse);
  }
}
#undef WEIGHT
#undef CAND
#undef KEPT
