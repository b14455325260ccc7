// The elementwise stages of a layer: embedding lookup, RMSNorm with the
// residual add, the q/k/v epilogue (biases, qwen3's q/k norms, RoPE, the
// write into the paged KV cache), SiLU·mul, and Q8_0 dequantisation at
// load. Each follows the CPU executor's arithmetic (internal/model).
#pragma once
#include "common.cuh"

// embed: x[t] = table[tokens[t]] as float; grid n, any block.
template <typename T>
DEV void embed(const T* table, const int* tokens, float* x, int H) {
  long row = (long)tokens[blockIdx.x] * H;
  float* out = x + (long)blockIdx.x * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) out[i] = load(table, row + i);
}
extern "C" __global__ void __launch_bounds__(256) embed_f32(const float* t, const int* tok, float* x, int H) { embed(t, tok, x, H); }
extern "C" __global__ void __launch_bounds__(256) embed_f16(const f16* t, const int* tok, float* x, int H) { embed(t, tok, x, H); }
extern "C" __global__ void __launch_bounds__(256) embed_bf16(const bf16* t, const int* tok, float* x, int H) { embed(t, tok, x, H); }

// rmsnorm: for output row i (grid m), its input row r = rows[i] (rows
// null: r = i) of the residual stream x gets delta's row added, times
// dscale[r] (delta null: nothing; dscale null: 1; with writeback the sum
// is stored back into x), and out's row i = rmsnorm(x[r]) · w, in the next
// GEMM's type. As ggml: the mean square summed in double, scale =
// 1/sqrtf(mean + eps), then (x·scale)·w.
template <typename T>
DEV void rmsnorm(float* x, const float* delta, const float* dscale, const int* rows, const float* w, T* out, int H, float eps, int writeback) {
  __shared__ double scratch[32];
  int r = rows ? rows[blockIdx.x] : blockIdx.x;
  float* xr = x + (long)r * H;
  const float* dr = delta ? delta + (long)r * H : 0;
  float ds = dscale ? dscale[r] : 1.0f;
  double sum = 0;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (dr) {
      v += dr[i] * ds;
      if (writeback) xr[i] = v;
    }
    sum += (double)v * v;
  }
  sum = block_sum(sum, scratch);
  float scale = 1.0f / __builtin_sqrtf((float)(sum / H) + eps);
  T* o = out + (long)blockIdx.x * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (dr && !writeback) v += dr[i] * ds;
    store(o, i, v * scale * w[i]);
  }
}
#define RMSNORM(T, name)                                                                                                            \
  extern "C" __global__ void __launch_bounds__(1024) name(float* x, const float* d, const float* ds, const int* rows, const float* w, T* o, \
                                                          int H, float eps, int wb) {                                               \
    rmsnorm(x, d, ds, rows, w, o, H, eps, wb);                                                                                      \
  }
RMSNORM(float, rmsnorm_f32)
RMSNORM(f16, rmsnorm_f16)
RMSNORM(bf16, rmsnorm_bf16)

// qkv_rope finishes one head of one token (grid: n tokens × heads +
// 2·kvHeads; block: the head dim rounded up to a warp) of the fused QKV
// product (rows of qd + 2·kvd floats): the bias, for q and k heads the
// qwen3 norm (qnorm null: none) and RoPE from the cos/sin table, then q
// stays in place (float) and k, v go into the cache (of type KV) at the
// token's slot (block·B + offset). The cache holds, per block and KV
// head, B tokens of d values.
template <typename KV>
DEV void qkv_rope(float* qkv, const float* bias, const float* qnorm, const float* knorm, const float* rope, const int* pos, const int* slots,
                  u16* kc, u16* vc, int heads, int kvheads, int d, int ropeDims, int neox, int B, float eps) {
  __shared__ float head[1024];
  __shared__ double scratch[32];
  int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
  int qd = heads * d, kvd = kvheads * d, stride = qd + 2 * kvd;
  int kind = h < heads ? 0 : h < heads + kvheads ? 1 : 2; // q, k, v
  int off = kind == 0 ? h * d : kind == 1 ? qd + (h - heads) * d : qd + kvd + (h - heads - kvheads) * d;
  float* x = qkv + (long)t * stride + off;
  float v = 0;
  if (i < d) {
    v = x[i];
    if (bias) v += bias[off + i];
  }
  const float* norm = kind == 0 ? qnorm : kind == 1 ? knorm : 0;
  if (norm) {
    double sum = block_sum((double)v * v, scratch);
    float scale = 1.0f / __builtin_sqrtf((float)(sum / d) + eps);
    if (i < d) v = v * scale * norm[i];
  }
  if (kind < 2) {
    if (i < d) head[i] = v;
    __syncthreads();
    if (i < ropeDims) {
      // Pair (a, b): adjacent dims for llama, halves for neox.
      int half = ropeDims / 2, p, a;
      if (neox) {
        p = i < half ? i : i - half;
        a = i < half;
      } else {
        p = i / 2;
        a = (i & 1) == 0;
      }
      const float* cs = rope + ((long)pos[t] * half + p) * 2;
      float c = cs[0], s = cs[1];
      int partner = neox ? (a ? i + half : i - half) : (a ? i + 1 : i - 1);
      float other = head[partner];
      v = a ? v * c - other * s : other * s + v * c;
    }
  }
  if (i >= d) return;
  if (kind == 0) {
    x[i] = v;
    return;
  }
  int slot = slots[t], kh = kind == 1 ? h - heads : h - heads - kvheads;
  long at = (((long)(slot / B) * kvheads + kh) * B + slot % B) * d + i;
  (kind == 1 ? kc : vc)[at] = f_to_half(KV(), v);
}
// qkv_rope_T writes the cache of a model of activation type T.
#define QKV_ROPE(T, name)                                                                                                           \
  extern "C" __global__ void __launch_bounds__(1024) name(float* qkv, const float* bias, const float* qnorm, const float* knorm,    \
                                                          const float* rope, const int* pos, const int* slots, u16* kc, u16* vc,     \
                                                          int heads, int kvheads, int d, int ropeDims, int neox, int B, float eps) { \
    qkv_rope<KVOf<T>::type>(qkv, bias, qnorm, knorm, rope, pos, slots, kc, vc, heads, kvheads, d, ropeDims, neox, B, eps);        \
  }
QKV_ROPE(float, qkv_rope_f32)
QKV_ROPE(f16, qkv_rope_f16)
QKV_ROPE(bf16, qkv_rope_bf16)

DEV float silu_times(const float* row, int F, int i) {
  float g = row[i], u = row[F + i];
  return g / (1.0f + expf_(-g)) * u;
}

// silu_mul: out[t][i] = silu(g)·u for the fused gate/up product's rows
// [g (F) | u (F)]; grid (n, ceil(F/256)), block 256.
template <typename T>
DEV void silu_mul(const float* gu, T* out, int F) {
  int i = blockIdx.y * blockDim.x + threadIdx.x, t = blockIdx.x;
  if (i >= F) return;
  store(out, (long)t * F + i, silu_times(gu + (long)t * 2 * F, F, i));
}
extern "C" __global__ void __launch_bounds__(256) silu_mul_f32(const float* gu, float* o, int F) { silu_mul(gu, o, F); }
extern "C" __global__ void __launch_bounds__(256) silu_mul_bf16(const float* gu, bf16* o, int F) { silu_mul(gu, o, F); }

// silu_mul_f16 is silu_mul into fp16, whose range (±65504) SiLU·up
// passes on a model's outlier channels (inf there, then NaN everywhere
// after the next norm): one block (of 1024 threads) a token row, which
// it divides by the power of two 2^k that brings its largest value
// within range, k ≥ 0 the least that does (0, no change, for almost every
// row; a power of two loses no precision). scale[t] gets 2^k: the next
// rmsnorm multiplies the down projection's row t by it (fp32 there).
// A row already holding inf or NaN is left as it is.
extern "C" __global__ void __launch_bounds__(1024) silu_mul_f16(const float* gu, f16* out, float* scale, int F) {
  __shared__ float scratch[32];
  int t = blockIdx.x;
  const float* row = gu + (long)t * 2 * F;
  float m = 0;
  for (int i = threadIdx.x; i < F; i += blockDim.x) m = __builtin_fmaxf(m, __builtin_fabsf(silu_times(row, F, i)));
  m = block_max(m, scratch);
  int k = 0;
  if (m > 65504.0f && m <= 3.4028234663852886e38f) {
    u32 b = __builtin_bit_cast(u32, m * (1.0f / 65504.0f));
    k = (int)((b >> 23) & 255) - 127 + ((b & 0x7fffff) != 0); // ⌈log2(m/65504)⌉
  }
  float inv = __builtin_bit_cast(float, (u32)(127 - k) << 23);
  f16* o = out + (long)t * F;
  for (int i = threadIdx.x; i < F; i += blockDim.x) store(o, i, silu_times(row, F, i) * inv);
  if (threadIdx.x == 0) scale[t] = __builtin_bit_cast(float, (u32)(127 + k) << 23);
}

// dequant_q8_0: GGUF's Q8_0 blocks (an fp16 scale, then 32 int8) to fp16;
// one thread per element.
extern "C" __global__ void __launch_bounds__(256) dequant_q8_0(const u8* q, u16* out, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u8* b = q + (i / 32) * 34;
  u16 d = (u16)b[0] | (u16)b[1] << 8;
  out[i] = f2h(h2f(d) * (float)(i8)b[2 + i % 32]);
}

// convert: n elements from one float type to another (weights of a
// mixed file to the model's one GEMM type); types: 0 f32, 1 f16, 2 bf16.
extern "C" __global__ void __launch_bounds__(256) convert(const void* src, int st, void* dst, int dt, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = st == 0 ? load((const float*)src, i) : st == 1 ? load((const f16*)src, i) : load((const bf16*)src, i);
  if (dt == 0) store((float*)dst, i, v);
  else if (dt == 1) store((f16*)dst, i, v);
  else store((bf16*)dst, i, v);
}

// fill_random: n values of a float type (0 f32, 1 f16, 2 bf16), uniform
// with standard deviation scale, from a hash of (seed, index): random
// weights for benchmarks, made on the device instead of uploaded.
extern "C" __global__ void __launch_bounds__(256) fill_random(void* p, int dt, long n, u64 seed, float scale) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u64 x = (u64)i * 0x9E3779B97F4A7C15ull ^ seed;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  float u = (float)(x >> 40) * (1.0f / 16777216.0f);
  float v = (2 * u - 1) * scale * 1.7320508f;
  if (dt == 0) store((float*)p, i, v);
  else if (dt == 1) store((f16*)p, i, v);
  else store((bf16*)p, i, v);
}
