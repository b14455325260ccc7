// Paged attention over the KV cache (per block and KV head, B tokens of d
// values, fp16 or bf16 as KVOf the output type): decode (one query token per sequence; the query heads of
// one KV head share every K/V read; the context split across blocks for
// long sequences, then combined) and prefill (a chunk of tokens against
// its cached prefix and itself, causal). Softmax(q·kᵀ/√d)·v in float.
#pragma once
#include "common.cuh"

#define MAXG 8 // query heads per KV head the decode kernel takes

// decode<D>: grid (kvHeads, seqs, splits), block 128: eight groups of 16
// lanes, each lane holding D/16 dims. Sequence s's query is row qrow[s]
// of q (row stride qs floats, heads of D), its context ctx[s] tokens
// reached through tables[s·maxb…], maxb read from device memory (*maxbp)
// so that a captured graph takes tables of any width. With splits = 1 the result goes to out
// (row qrow[s], Hq heads of D); else split z's normalised partial goes to
// po/pm/pl for decode_combine.
template <int D, typename T>
DEV void decode(const float* q, int qs, const int* qrow, const int* ctx, const int* tables, const int* maxbp, const u16* kc, const u16* vc,
                T* out, float* po, float* pm, float* pl, int G, int kvheads, int B, float scale) {
  constexpr int E = D / 16;
  typedef typename KVOf<T>::type KV;
  __shared__ float sm_m[8][MAXG], sm_l[8][MAXG];
  __shared__ float sm_acc[8][MAXG][D];
  int kvh = blockIdx.x, s = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  int grp = threadIdx.x >> 4, lane = threadIdx.x & 15;
  int n = ctx[s];
  int chunk = ((n + splits - 1) / splits + 7) & ~7;
  int from = split * chunk, to = imin(n, from + chunk);
  int Hq = kvheads * G;
  const float* qp = q + (long)qrow[s] * qs + (long)kvh * G * D + lane * E;
  float qr[MAXG][E], acc[MAXG][E], m[MAXG], l[MAXG];
#pragma unroll
  for (int g = 0; g < MAXG; g++) {
    m[g] = neg_inf();
    l[g] = 0;
#pragma unroll
    for (int e = 0; e < E; e++) {
      qr[g][e] = g < G ? qp[g * D + e] * scale : 0;
      acc[g][e] = 0;
    }
  }
  const int* table = tables + (long)s * *maxbp;
  // Every lane runs every iteration (the shuffles need the whole warp):
  // a group past the end computes on zeros and keeps its state.
  for (int base = from; base < to; base += 8) {
    int j = base + grp;
    bool valid = j < to;
    float kf[E], vf[E];
    if (valid) {
      long at = (((long)table[j / B] * kvheads + kvh) * B + j % B) * D + lane * E;
      load_halves<E, KV>(kc + at, kf);
      load_halves<E, KV>(vc + at, vf);
    } else {
#pragma unroll
      for (int e = 0; e < E; e++) kf[e] = vf[e] = 0;
    }
#pragma unroll
    for (int g = 0; g < MAXG; g++) {
      if (g < G) {
        float sc = 0;
#pragma unroll
        for (int e = 0; e < E; e++) sc += qr[g][e] * kf[e];
        for (int mk = 8; mk > 0; mk >>= 1) sc += shfl_xor(sc, mk);
        if (valid) {
          float mn = __builtin_fmaxf(m[g], sc);
          float r = expf_(m[g] - mn), p = expf_(sc - mn);
          l[g] = l[g] * r + p;
          m[g] = mn;
#pragma unroll
          for (int e = 0; e < E; e++) acc[g][e] = acc[g][e] * r + p * vf[e];
        }
      }
    }
  }
  // Merge the eight groups.
#pragma unroll
  for (int g = 0; g < MAXG; g++) {
    if (g < G) {
      if (lane == 0) {
        sm_m[grp][g] = m[g];
        sm_l[grp][g] = l[g];
      }
#pragma unroll
      for (int e = 0; e < E; e++) sm_acc[grp][g][lane * E + e] = acc[g][e];
    }
  }
  __syncthreads();
  for (int o = threadIdx.x; o < G * D; o += blockDim.x) {
    int g = o / D, dim = o % D;
    float M = neg_inf();
    for (int k = 0; k < 8; k++)
      if (sm_l[k][g] > 0) M = __builtin_fmaxf(M, sm_m[k][g]);
    float L = 0, A = 0;
    for (int k = 0; k < 8; k++) {
      if (sm_l[k][g] <= 0) continue;
      float w = expf_(sm_m[k][g] - M);
      L += w * sm_l[k][g];
      A += w * sm_acc[k][g][dim];
    }
    int head = kvh * G + g;
    if (splits == 1) {
      store(out, ((long)qrow[s] * Hq + head) * D + dim, L > 0 ? A / L : 0);
    } else {
      long at = ((long)s * Hq + head) * splits + split;
      po[at * D + dim] = L > 0 ? A / L : 0;
      if (dim == 0) {
        pm[at] = M;
        pl[at] = L;
      }
    }
  }
}

#define DECODE(D, T, name)                                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) name(const float* q, int qs, const int* qrow, const int* ctx, const int* tables, const int* maxb, const u16* kc, \
                                  const u16* vc, T* out, float* po, float* pm, float* pl, int G, int kvheads, int B, float scale) { \
    decode<D, T>(q, qs, qrow, ctx, tables, maxb, kc, vc, out, po, pm, pl, G, kvheads, B, scale);                                      \
  }
DECODE(64, float, decode64_f32)
DECODE(64, f16, decode64_f16)
DECODE(64, bf16, decode64_bf16)
DECODE(128, float, decode128_f32)
DECODE(128, f16, decode128_f16)
DECODE(128, bf16, decode128_bf16)

// decode_combine: grid (seqs, Hq), block D (rounded to a warp): the
// splits' partials of one head weighted by their softmax mass.
template <typename T>
DEV void decode_combine(const int* qrow, const float* po, const float* pm, const float* pl, T* out, int Hq, int D, int splits) {
  int s = blockIdx.x, head = blockIdx.y, dim = threadIdx.x;
  if (dim >= D) return;
  long at = ((long)s * Hq + head) * splits;
  float M = neg_inf();
  for (int k = 0; k < splits; k++)
    if (pl[at + k] > 0) M = __builtin_fmaxf(M, pm[at + k]);
  float L = 0, A = 0;
  for (int k = 0; k < splits; k++) {
    if (pl[at + k] <= 0) continue;
    float w = expf_(pm[at + k] - M) * pl[at + k];
    L += w;
    A += w * po[(at + k) * D + dim];
  }
  store(out, ((long)qrow[s] * Hq + head) * D + dim, L > 0 ? A / L : 0);
}
extern "C" __global__ void __launch_bounds__(128) decode_combine_f32(const int* r, const float* po, const float* pm, const float* pl, float* o, int Hq, int D, int sp) { decode_combine(r, po, pm, pl, o, Hq, D, sp); }
extern "C" __global__ void __launch_bounds__(128) decode_combine_f16(const int* r, const float* po, const float* pm, const float* pl, f16* o, int Hq, int D, int sp) { decode_combine(r, po, pm, pl, o, Hq, D, sp); }
extern "C" __global__ void __launch_bounds__(128) decode_combine_bf16(const int* r, const float* po, const float* pm, const float* pl, bf16* o, int Hq, int D, int sp) { decode_combine(r, po, pm, pl, o, Hq, D, sp); }

// prefill: grid (items, kvHeads), block 128, dynamic shared memory
// prefillShared(D, R). Item i is items[4i…]: the sequence, the batch row
// of its first query token, the tokens (at most R/G) and the position of
// the first; every query row (token × query head of this KV head) attends
// keys [0, its position]. Any head dim; tiles of 32 keys.
#define KT 32
template <typename T>
DEV void prefill(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, T* out,
                 int G, int kvheads, int B, int D, float scale) {
  DYNAMIC_SHARED(float, sh);
  typedef typename KVOf<T>::type KV;
  const int* it = items + 4 * blockIdx.x;
  int s = it[0], row0 = it[1], nt = it[2], pos0 = it[3], kvh = blockIdx.y;
  int R = nt * G, Hq = kvheads * G, tid = threadIdx.x, nth = blockDim.x;
  float* Qs = sh;                      // [R][D]
  float* Os = Qs + R * D;              // [R][D]
  float* Ks = Os + R * D;              // [KT][D+1]
  float* Vs = Ks + KT * (D + 1);       // [KT][D]
  float* S = Vs + KT * D;              // [R][KT+1]
  float* rm = S + R * (KT + 1);        // [R] running max
  float* rl = rm + R;                  // [R] running sum
  float* rs = rl + R;                  // [R] this tile's rescale
  for (int x = tid; x < R * D; x += nth) {
    int r = x / D, d = x % D, tk = r / G, g = r % G;
    Qs[x] = q[(long)(row0 + tk) * qs + (long)(kvh * G + g) * D + d] * scale;
    Os[x] = 0;
  }
  for (int r = tid; r < R; r += nth) {
    rm[r] = neg_inf();
    rl[r] = 0;
  }
  const int* table = tables + (long)s * maxb;
  int kend = pos0 + nt;
  for (int j0 = 0; j0 < kend; j0 += KT) {
    __syncthreads();
    for (int x = tid; x < KT * D; x += nth) {
      int j = x / D, d = x % D, key = j0 + j;
      float kv = 0, vv = 0;
      if (key < kend) {
        long at = (((long)table[key / B] * kvheads + kvh) * B + key % B) * D + d;
        kv = half_to_f(KV(), kc[at]);
        vv = half_to_f(KV(), vc[at]);
      }
      Ks[j * (D + 1) + d] = kv;
      Vs[j * D + d] = vv;
    }
    __syncthreads();
    for (int x = tid; x < R * KT; x += nth) {
      int r = x / KT, j = x % KT, key = j0 + j;
      float sc = neg_inf();
      if (key <= pos0 + r / G) {
        sc = 0;
        for (int d = 0; d < D; d++) sc += Qs[r * D + d] * Ks[j * (D + 1) + d];
      }
      S[r * (KT + 1) + j] = sc;
    }
    __syncthreads();
    for (int r = tid; r < R; r += nth) {
      float mx = rm[r];
      for (int j = 0; j < KT; j++) mx = __builtin_fmaxf(mx, S[r * (KT + 1) + j]);
      float scl = expf_(rm[r] - mx), sum = 0;
      for (int j = 0; j < KT; j++) {
        float sc = S[r * (KT + 1) + j];
        float p = sc == neg_inf() ? 0 : expf_(sc - mx);
        S[r * (KT + 1) + j] = p;
        sum += p;
      }
      rl[r] = rl[r] * scl + sum;
      rm[r] = mx;
      rs[r] = scl;
    }
    __syncthreads();
    for (int x = tid; x < R * D; x += nth) {
      int r = x / D, d = x % D;
      float a = Os[x] * rs[r];
      for (int j = 0; j < KT; j++) a += S[r * (KT + 1) + j] * Vs[j * D + d];
      Os[x] = a;
    }
  }
  __syncthreads();
  for (int x = tid; x < R * D; x += nth) {
    int r = x / D, d = x % D, tk = r / G, g = r % G;
    store(out, ((long)(row0 + tk) * Hq + kvh * G + g) * D + d, rl[r] > 0 ? Os[x] / rl[r] : 0);
  }
}
extern "C" __global__ void __launch_bounds__(128) prefill_f32(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, float* out, int G, int kvheads, int B, int D, float scale) { prefill(q, qs, items, tables, maxb, kc, vc, out, G, kvheads, B, D, scale); }
extern "C" __global__ void __launch_bounds__(128) prefill_f16(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, f16* out, int G, int kvheads, int B, int D, float scale) { prefill(q, qs, items, tables, maxb, kc, vc, out, G, kvheads, B, D, scale); }
extern "C" __global__ void __launch_bounds__(128) prefill_bf16(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, bf16* out, int G, int kvheads, int B, int D, float scale) { prefill(q, qs, items, tables, maxb, kc, vc, out, G, kvheads, B, D, scale); }
