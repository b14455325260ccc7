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
// null: r = i) of the residual stream x gets delta's row added (delta
// null: nothing; with writeback the sum is stored back into x), and out's
// row i = rmsnorm(x[r]) · w, in the next GEMM's type. As ggml: the mean
// square summed in double, scale = 1/sqrtf(mean + eps), then (x·scale)·w.
template <typename T>
DEV void rmsnorm(float* x, const float* delta, const int* rows, const float* w, T* out, int H, float eps, int writeback) {
  __shared__ double scratch[32];
  int r = rows ? rows[blockIdx.x] : blockIdx.x;
  float* xr = x + (long)r * H;
  const float* dr = delta ? delta + (long)r * H : 0;
  double sum = 0;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (dr) {
      v += dr[i];
      if (writeback) xr[i] = v;
    }
    sum += (double)v * v;
  }
  sum = block_sum(sum, scratch);
  float scale = 1.0f / __builtin_sqrtf((float)(sum / H) + eps);
  T* o = out + (long)blockIdx.x * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (dr && !writeback) v += dr[i];
    store(o, i, v * scale * w[i]);
  }
}
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_f32(float* x, const float* d, const int* rows, const float* w, float* o, int H, float eps, int wb) { rmsnorm(x, d, rows, w, o, H, eps, wb); }
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_f16(float* x, const float* d, const int* rows, const float* w, f16* o, int H, float eps, int wb) { rmsnorm(x, d, rows, w, o, H, eps, wb); }
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_bf16(float* x, const float* d, const int* rows, const float* w, bf16* o, int H, float eps, int wb) { rmsnorm(x, d, rows, w, o, H, eps, wb); }

// qkv_rope finishes one head of one token (grid: n tokens × heads +
// 2·kvHeads; block: the head dim rounded up to a warp) of the fused QKV
// product (rows of qd + 2·kvd floats): the bias, for q and k heads the
// qwen3 norm (qnorm null: none) and RoPE from the cos/sin table, then q
// stays in place (float) and k, v go into the fp16 cache at the token's
// slot (block·B + offset). The cache holds, per block and KV head, B
// tokens of d values.
extern "C" __global__ void __launch_bounds__(1024) qkv_rope(float* qkv, const float* bias, const float* qnorm, const float* knorm, const float* rope,
                                    const int* pos, const int* slots, u16* kc, u16* vc, int heads, int kvheads, int d,
                                    int ropeDims, int neox, int B, float eps) {
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
  (kind == 1 ? kc : vc)[at] = f2h(v);
}

// silu_mul: out[t][i] = silu(g)·u for the fused gate/up product's rows
// [g (F) | u (F)]; grid (n, ceil(F/256)), block 256.
template <typename T>
DEV void silu_mul(const float* gu, T* out, int F) {
  int i = blockIdx.y * blockDim.x + threadIdx.x, t = blockIdx.x;
  if (i >= F) return;
  float g = gu[(long)t * 2 * F + i], u = gu[(long)t * 2 * F + F + i];
  store(out, (long)t * F + i, g / (1.0f + expf_(-g)) * u);
}
extern "C" __global__ void __launch_bounds__(256) silu_mul_f32(const float* gu, float* o, int F) { silu_mul(gu, o, F); }
extern "C" __global__ void __launch_bounds__(256) silu_mul_f16(const float* gu, f16* o, int F) { silu_mul(gu, o, F); }
extern "C" __global__ void __launch_bounds__(256) silu_mul_bf16(const float* gu, bf16* o, int F) { silu_mul(gu, o, F); }

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
