// Shared definitions of glassbox's CUDA kernels. They are compiled to PTX
// by clang without NVIDIA's headers (see gen.go), so the few things those
// headers give are spelled here: the CUDA keywords, half and bfloat16
// conversions as PTX instructions, warp shuffles as clang builtins.
//
// The same sources also compile for the CPU (GLASSBOX_HOST, defined by
// testdata/hostsim/sim.h, which spells those things for a serial
// simulation of a block): the kernels' index, bounds and range logic is
// tested there without a GPU.
#pragma once
#ifndef GLASSBOX_HOST
#include <__clang_cuda_builtin_vars.h>

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
// DYNAMIC_SHARED declares the block's dynamic shared memory (the launch's
// shared bytes) as an array name of T.
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif
#define DEV static __device__ inline __forceinline__

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char i8;

// Element types of weights and activations: float, and 16-bit floats
// held as their bits.
struct f16 { u16 v; };
struct bf16 { u16 v; };

#ifndef GLASSBOX_HOST
DEV float h2f(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
DEV u16 f2h(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
DEV u16 f2bf(float f) { u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
DEV float bf2f(u16 h) { return __builtin_bit_cast(float, (u32)h << 16); }

DEV float load(const float* p, long i) { return p[i]; }
DEV float load(const f16* p, long i) { return h2f(p[i].v); }
DEV float load(const bf16* p, long i) { return bf2f(p[i].v); }
DEV void store(float* p, long i, float v) { p[i] = v; }
DEV void store(f16* p, long i, float v) { p[i].v = f2h(v); }
DEV void store(bf16* p, long i, float v) { p[i].v = f2bf(v); }

DEV float expf_(float x) { return __nvvm_ex2_approx_f(x * 1.4426950408889634f); }
DEV float neg_inf() { return __builtin_bit_cast(float, 0xff800000u); }

DEV float shfl_xor(float v, int m) { return __nvvm_shfl_sync_bfly_f32(0xffffffffu, v, m, 31); }
DEV int shfl_xor(int v, int m) { return __nvvm_shfl_sync_bfly_i32(0xffffffffu, v, m, 31); }
DEV double shfl_xor(double v, int m) {
  u64 b = __builtin_bit_cast(u64, v);
  int lo = shfl_xor((int)(u32)b, m), hi = shfl_xor((int)(u32)(b >> 32), m);
  return __builtin_bit_cast(double, ((u64)(u32)hi << 32) | (u32)lo);
}

DEV double warp_sum(double v) {
  for (int m = 16; m > 0; m >>= 1) v += shfl_xor(v, m);
  return v;
}

// block_sum adds v over the block (blockDim.x a multiple of 32, at most
// 1024); every thread gets the total. scratch holds 32 doubles.
DEV double block_sum(double v, double* scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0;
  return warp_sum(v);
}

// block_max is v's largest over the block (NaN aside); every thread
// gets it. scratch holds 32 floats.
DEV float block_max(float v, float* scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int m = 16; m > 0; m >>= 1) v = __builtin_fmaxf(v, shfl_xor(v, m));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : neg_inf();
  for (int m = 16; m > 0; m >>= 1) v = __builtin_fmaxf(v, shfl_xor(v, m));
  return v;
}

DEV int imin(int a, int b) { return a < b ? a : b; }
DEV int imax(int a, int b) { return a > b ? a : b; }

// Vector words for 8- and 16-byte loads.
struct __attribute__((aligned(16))) u32x4 { u32 x, y, z, w; };
struct __attribute__((aligned(8))) u32x2 { u32 x, y; };
struct __attribute__((aligned(16))) float4_ { float x, y, z, w; };

// The KV cache's element type beside activations of type T: bf16 for a
// bf16 model (vLLM's "auto" keeps the model's type: bf16's range is
// float's), fp16 otherwise (fp32 caches are not built).
template <typename T>
struct KVOf {
  typedef f16 type;
};
template <>
struct KVOf<bf16> {
  typedef bf16 type;
};

// A 16-bit float of type KV (f16 or bf16, the tag's type), held as its
// bits, to and from float.
DEV float half_to_f(f16, u16 h) { return h2f(h); }
DEV float half_to_f(bf16, u16 h) { return bf2f(h); }
DEV u16 f_to_half(f16, float f) { return f2h(f); }
DEV u16 f_to_half(bf16, float f) { return f2bf(f); }

// load_halves reads N 16-bit floats of type KV (N = 4 or 8, aligned) as
// floats.
template <int N, typename KV>
DEV void load_halves(const u16* p, float* f) {
  u32 w[N / 2];
  if (N == 8) {
    u32x4 a = *(const u32x4*)p;
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w;
  } else {
    u32x2 a = *(const u32x2*)p;
    w[0] = a.x, w[1] = a.y;
  }
#pragma unroll
  for (int i = 0; i < N / 2; i++) {
    f[2 * i] = half_to_f(KV(), (u16)w[i]);
    f[2 * i + 1] = half_to_f(KV(), (u16)(w[i] >> 16));
  }
}
