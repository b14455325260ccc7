// Prefill attention on the tensor cores (FlashAttention-2's scheme with
// Ampere's mma.sync, which Hopper runs too): a block of four warps takes
// one item (up to 64 query rows: tokens × the query heads of one KV head)
// and walks the keys in tiles of 64 from the paged cache; each warp owns
// 16 rows, computes S = QKᵀ and O += PV with m16n8k16 products (in the
// cache's type, fp16 or bf16, fp32 accumulated) and keeps the online
// softmax in registers.
#pragma once
#include "common.cuh"

#define FT 64 // keys a tile, and query rows a block

DEV u32 smem_addr(const void* p) {
  u64 a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return (u32)a;
}

// mma16816 is C += A·B for a 16×16 A and a 16×8 B of the tag's type
// (fp16 or bf16), C in float.
DEV void mma16816(f16, float* c, const u32* a, const u32* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
DEV void mma16816(bf16, float* c, const u32* a, const u32* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ldsm4t loads four 8×8 16-bit matrices transposed: a B operand pair
// (two n-tiles of 8) of V stored row-major by key.
DEV void ldsm4t(u32* r, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <typename KV>
DEV u32 pack_h2(float lo, float hi) { return (u32)f_to_half(KV(), lo) | (u32)f_to_half(KV(), hi) << 16; }

DEV float ex2(float x) { return __nvvm_ex2_approx_f(x); }

// flash<D>: grid (items, kvHeads), block 128, dynamic shared memory
// 3·FT·(D+8) halves; items as prefill's (sequence, first row, tokens,
// first position).
template <int D, typename T>
DEV void flash(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, T* out,
               int G, int kvheads, int B, float scale) {
  constexpr int RS = D + 8;    // a row's halves in shared memory (padded: no bank conflicts)
  constexpr int KS = D / 16;   // k-steps of QKᵀ
  constexpr int DN = D / 8;    // n-tiles of O
  typedef typename KVOf<T>::type KV; // Q and P are rounded to it for the tensor cores
  DYNAMIC_SHARED(__attribute__((aligned(16))) u16, fsh);
  u16* Qs = fsh;
  u16* Ks = Qs + FT * RS;
  u16* Vs = Ks + FT * RS;
  const int* it = items + 4 * blockIdx.x;
  int s = it[0], row0 = it[1], nt = it[2], pos0 = it[3], kvh = blockIdx.y;
  int R = nt * G, Hq = kvheads * G, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  int gid = lane >> 2, t4 = lane & 3;
  // Q rows in the cache's type.
  for (int x = tid; x < FT * D; x += 128) {
    int r = x / D, d = x % D;
    float v = 0;
    if (r < R) v = q[(long)(row0 + r / G) * qs + (long)(kvh * G + r % G) * D + d];
    Qs[r * RS + d] = f_to_half(KV(), v);
  }
  __syncthreads();
  int r0 = warp * 16;
  u32 qa[KS][4];
#pragma unroll
  for (int k = 0; k < KS; k++) {
    const u16* base = Qs + (r0 + gid) * RS + k * 16 + 2 * t4;
    qa[k][0] = *(const u32*)base;
    qa[k][1] = *(const u32*)(base + 8 * RS);
    qa[k][2] = *(const u32*)(base + 8);
    qa[k][3] = *(const u32*)(base + 8 * RS + 8);
  }
  // The two rows this thread holds: their positions (a padding row sees
  // every key, so that its arithmetic stays finite; it is not written).
  int kend = pos0 + nt;
  int ra = r0 + gid, rb = ra + 8;
  int pa = ra < R ? pos0 + ra / G : kend - 1, pb = rb < R ? pos0 + rb / G : kend - 1;
  float o[DN][4];
#pragma unroll
  for (int n = 0; n < DN; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
  float ma = neg_inf(), mb = neg_inf(), la = 0, lb = 0;
  float sl2 = scale * 1.4426950408889634f;
  const int* table = tables + (long)s * maxb;
  for (int j0 = 0; j0 < kend; j0 += FT) {
    __syncthreads();
    for (int c = tid; c < FT * (D / 8); c += 128) {
      int key = c / (D / 8), part = c % (D / 8), j = j0 + key;
      u32x4* kd = (u32x4*)(Ks + key * RS + part * 8);
      u32x4* vd = (u32x4*)(Vs + key * RS + part * 8);
      if (j < kend) {
        long at = (((long)table[j / B] * kvheads + kvh) * B + j % B) * D + part * 8;
        *kd = *(const u32x4*)(kc + at);
        *vd = *(const u32x4*)(vc + at);
      } else {
        kd->x = kd->y = kd->z = kd->w = 0;
        vd->x = vd->y = vd->z = vd->w = 0;
      }
    }
    __syncthreads();
    // S = Q·Kᵀ for this warp's 16 rows and the tile's 64 keys.
    float sc[FT / 8][4];
#pragma unroll
    for (int n = 0; n < FT / 8; n++) {
      sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0;
#pragma unroll
      for (int k = 0; k < KS; k++) {
        const u16* kb = Ks + (n * 8 + gid) * RS + k * 16 + 2 * t4;
        u32 b[2] = {*(const u32*)kb, *(const u32*)(kb + 8)};
        mma16816(KV(), sc[n], qa[k], b);
      }
    }
    // Causal mask, scale, and the online softmax (rows a and b).
    float mxa = ma, mxb = mb;
#pragma unroll
    for (int n = 0; n < FT / 8; n++) {
#pragma unroll
      for (int e = 0; e < 2; e++) {
        int key = j0 + n * 8 + 2 * t4 + e;
        sc[n][e] = key <= pa ? sc[n][e] * sl2 : neg_inf();
        sc[n][2 + e] = key <= pb ? sc[n][2 + e] * sl2 : neg_inf();
        mxa = __builtin_fmaxf(mxa, sc[n][e]);
        mxb = __builtin_fmaxf(mxb, sc[n][2 + e]);
      }
    }
    mxa = __builtin_fmaxf(mxa, shfl_xor(mxa, 1));
    mxa = __builtin_fmaxf(mxa, shfl_xor(mxa, 2));
    mxb = __builtin_fmaxf(mxb, shfl_xor(mxb, 1));
    mxb = __builtin_fmaxf(mxb, shfl_xor(mxb, 2));
    float fa = ex2(ma - mxa), fb = ex2(mb - mxb);
    ma = mxa, mb = mxb;
    la *= fa, lb *= fb;
#pragma unroll
    for (int n = 0; n < DN; n++) o[n][0] *= fa, o[n][1] *= fa, o[n][2] *= fb, o[n][3] *= fb;
    u32 pa16[FT / 16][4];
#pragma unroll
    for (int n = 0; n < FT / 8; n++) {
      float p0 = ex2(sc[n][0] - ma), p1 = ex2(sc[n][1] - ma), p2 = ex2(sc[n][2] - mb), p3 = ex2(sc[n][3] - mb);
      la += p0 + p1, lb += p2 + p3;
      pa16[n / 2][(n & 1) * 2] = pack_h2<KV>(p0, p1);
      pa16[n / 2][(n & 1) * 2 + 1] = pack_h2<KV>(p2, p3);
    }
    // O += P·V: P's fragments are the A operand, V's come transposed.
#pragma unroll
    for (int k = 0; k < FT / 16; k++) {
#pragma unroll
      for (int n = 0; n < DN; n += 2) {
        int key = k * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dim = n * 8 + (lane >> 4) * 8;
        u32 b[4];
        ldsm4t(b, smem_addr(Vs + key * RS + dim));
        mma16816(KV(), o[n], pa16[k], b);
        mma16816(KV(), o[n + 1], pa16[k], b + 2);
      }
    }
  }
  la += shfl_xor(la, 1);
  la += shfl_xor(la, 2);
  lb += shfl_xor(lb, 1);
  lb += shfl_xor(lb, 2);
#pragma unroll
  for (int n = 0; n < DN; n++) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
      int dim = n * 8 + 2 * t4 + e;
      if (ra < R) store(out, ((long)(row0 + ra / G) * Hq + kvh * G + ra % G) * D + dim, o[n][e] / la);
      if (rb < R) store(out, ((long)(row0 + rb / G) * Hq + kvh * G + rb % G) * D + dim, o[n][2 + e] / lb);
    }
  }
}

#define FLASH(D, T, name)                                                                                                           \
  extern "C" __global__ void __launch_bounds__(128) name(const float* q, int qs, const int* items, const int* tables, int maxb, const u16* kc, const u16* vc, \
                                  T* out, int G, int kvheads, int B, float scale) {                                                  \
    flash<D, T>(q, qs, items, tables, maxb, kc, vc, out, G, kvheads, B, scale);                                                     \
  }
FLASH(64, float, flash64_f32)
FLASH(64, f16, flash64_f16)
FLASH(64, bf16, flash64_bf16)
FLASH(128, float, flash128_f32)
FLASH(128, f16, flash128_f16)
FLASH(128, bf16, flash128_bf16)
