// Paged decode attention, tiled: a block of four warps takes one
// sequence's KV head (and one split of its context) and walks the keys in
// tiles of 64 staged in shared memory, so that every K/V byte is read
// from memory once for all the query heads of the group, with wide loads
// from many blocks in flight; the online softmax runs per tile.
#pragma once
#include "common.cuh"

#define DT 64 // keys a tile

template <int D>
struct __attribute__((aligned(16))) DecodeShared {
  u16 k[DT][D + 8], v[DT][D + 8];
  float q[MAXG][D + 8]; // two halves of D/2, each padded by 4
  float s[MAXG][DT + 4];
  float fac[MAXG], l[MAXG], m[MAXG];
  float part[MAXG][D]; // D = 64: the second half's accumulators
};

// decode2<D>: grid (kvHeads, seqs, splits), block 128; arguments as
// decode's.
template <int D, typename T>
DEV void decode2(const float* q, int qs, const int* qrow, const int* ctx, const int* tables, const int* maxbp, const u16* kc, const u16* vc,
                 T* out, float* po, float* pm, float* pl, int G, int kvheads, int B, float scale) {
  typedef typename KVOf<T>::type KV;
  __shared__ DecodeShared<D> sh;
  int kvh = blockIdx.x, s = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  int n = ctx[s];
  int chunk = ((n + splits - 1) / splits + DT - 1) / DT * DT;
  int from = split * chunk, to = imin(n, from + chunk);
  int Hq = kvheads * G;
  const float* qp = q + (long)qrow[s] * qs + (long)kvh * G * D;
  for (int x = tid; x < G * D; x += 128) {
    int g = x / D, d = x % D;
    sh.q[g][(d / (D / 2)) * (D / 2 + 4) + d % (D / 2)] = qp[x] * scale;
  }
  // Softmax state: warp w keeps heads w and w+4.
  float m0 = neg_inf(), m1 = neg_inf(), l0 = 0, l1 = 0;
  // PV: D = 128, thread tid owns dim tid over all keys; D = 64, dim tid
  // % 64 over the tile's half tid / 64 of the keys.
  int dim = tid % D, khalf = D == 128 ? 0 : tid / 64, kper = D == 128 ? DT : DT / 2;
  float acc[MAXG];
#pragma unroll
  for (int g = 0; g < MAXG; g++) acc[g] = 0;
  const int* table = tables + (long)s * *maxbp;
  for (int base = from; base < to; base += DT) {
    __syncthreads();
    for (int c = tid; c < DT * (D / 8); c += 128) {
      int key = c / (D / 8), part = c % (D / 8), j = base + key;
      u32x4* kd = (u32x4*)&sh.k[key][part * 8];
      u32x4* vd = (u32x4*)&sh.v[key][part * 8];
      if (j < to) {
        long at = (((long)table[j / B] * kvheads + kvh) * B + j % B) * D + part * 8;
        *kd = *(const u32x4*)(kc + at);
        *vd = *(const u32x4*)(vc + at);
      } else {
        kd->x = kd->y = kd->z = kd->w = 0;
        vd->x = vd->y = vd->z = vd->w = 0;
      }
    }
    __syncthreads();
    // Scores: thread pair (t, h) takes key t's half h for every head.
    {
      int t = tid >> 1, h = tid & 1;
      float kf[D / 2];
#pragma unroll
      for (int i = 0; i < D / 2; i += 8) load_halves<8, KV>(&sh.k[t][h * (D / 2) + i], kf + i);
#pragma unroll
      for (int g = 0; g < MAXG; g++) {
        if (g < G) {
          const float* qg = &sh.q[g][h * (D / 2 + 4)];
          float dot = 0;
#pragma unroll
          for (int i = 0; i < D / 2; i++) dot += qg[i] * kf[i];
          dot += shfl_xor(dot, 1);
          if (h == 0) sh.s[g][t] = base + t < to ? dot : neg_inf();
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 2; k++) {
      int g = warp + 4 * k;
      if (g < G) {
        float& m = k ? m1 : m0;
        float& l = k ? l1 : l0;
        float a = sh.s[g][lane], b = sh.s[g][lane + 32];
        float mx = __builtin_fmaxf(a, b);
        for (int o = 16; o > 0; o >>= 1) mx = __builtin_fmaxf(mx, shfl_xor(mx, o));
        float mn = __builtin_fmaxf(m, mx);
        float pa = expf_(a - mn), pb = expf_(b - mn);
        sh.s[g][lane] = pa;
        sh.s[g][lane + 32] = pb;
        float sum = pa + pb;
        for (int o = 16; o > 0; o >>= 1) sum += shfl_xor(sum, o);
        float f = expf_(m - mn);
        l = l * f + sum;
        m = mn;
        if (lane == 0) sh.fac[g] = f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < MAXG; g++)
      if (g < G) acc[g] *= sh.fac[g];
    for (int t = khalf * kper; t < (khalf + 1) * kper; t += 4) {
      float v0 = half_to_f(KV(), sh.v[t][dim]), v1 = half_to_f(KV(), sh.v[t + 1][dim]), v2 = half_to_f(KV(), sh.v[t + 2][dim]),
            v3 = half_to_f(KV(), sh.v[t + 3][dim]);
#pragma unroll
      for (int g = 0; g < MAXG; g++) {
        if (g < G) {
          float4_ p = *(const float4_*)&sh.s[g][t];
          acc[g] += p.x * v0 + p.y * v1 + p.z * v2 + p.w * v3;
        }
      }
    }
  }
  __syncthreads();
  if (lane == 0) {
    if (warp < G) sh.l[warp] = l0, sh.m[warp] = m0;
    if (warp + 4 < G) sh.l[warp + 4] = l1, sh.m[warp + 4] = m1;
  }
  if (D == 64 && khalf == 1)
#pragma unroll
    for (int g = 0; g < MAXG; g++)
      if (g < G) sh.part[g][dim] = acc[g];
  __syncthreads();
  if (D == 64 && khalf == 1) return;
#pragma unroll
  for (int g = 0; g < MAXG; g++) {
    if (g >= G) continue;
    float a = acc[g] + (D == 64 ? sh.part[g][dim] : 0);
    float L = sh.l[g];
    int head = kvh * G + g;
    if (splits == 1) {
      store(out, ((long)qrow[s] * Hq + head) * D + dim, L > 0 ? a / L : 0);
    } else {
      long at = ((long)s * Hq + head) * splits + split;
      po[at * D + dim] = L > 0 ? a / L : 0;
      if (dim == 0) {
        pm[at] = sh.m[g];
        pl[at] = L;
      }
    }
  }
}

#define DECODE2(D, T, name)                                                                                                           \
  extern "C" __global__ void __launch_bounds__(128) name(const float* q, int qs, const int* qrow, const int* ctx, const int* tables, const int* maxb, const u16* kc, \
                                  const u16* vc, T* out, float* po, float* pm, float* pl, int G, int kvheads, int B, float scale) {    \
    decode2<D, T>(q, qs, qrow, ctx, tables, maxb, kc, vc, out, po, pm, pl, G, kvheads, B, scale);                                      \
  }
DECODE2(64, float, tdecode64_f32)
DECODE2(64, f16, tdecode64_f16)
DECODE2(64, bf16, tdecode64_bf16)
DECODE2(128, float, tdecode128_f32)
DECODE2(128, f16, tdecode128_f16)
DECODE2(128, bf16, tdecode128_bf16)
