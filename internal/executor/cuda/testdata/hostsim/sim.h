// sim.h runs glassbox's CUDA kernels on the CPU, for tests: it spells what
// common.cuh takes from clang's CUDA mode (the keywords, threadIdx and its
// kin, the PTX conversions, the warp shuffles, __syncthreads) for a serial
// simulation of a thread block. Each CUDA thread is a coroutine (ucontext)
// that runs until it reaches a barrier: __syncthreads waits for the block,
// a shuffle for its warp (all 32 lanes: a lane that has left the kernel
// while the others shuffle is reported as the hang it is on a GPU). The
// blocks of a grid run one after the other.
//
// Every buffer a test hands a kernel comes from sim_alloc: its end is the
// end of a readable page, with 16 GiB of unmapped guard on either side, so
// a read or write past it stops the program with the buffer's name and the
// offset (exit status 3) instead of reading whatever lies there.
#pragma once
#define GLASSBOX_HOST 1

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define __global__
#define __device__
#define __shared__ static
#define __forceinline__
#define __launch_bounds__(n)

struct sim_dim3 {
  unsigned x, y, z;
};
static sim_dim3 threadIdx, blockIdx, blockDim, gridDim;

// ---- fatal errors and guarded buffers ----

static void sim_fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void sim_fail(int code, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "hostsim: %s\n", msg);
  fflush(stderr);
  _exit(code);
}

struct sim_buf {
  const char* name;
  char *base, *lo, *hi, *end; // the mapping, the buffer, the mapping's end
};
static sim_buf sim_bufs[64];
static int sim_nbufs;

static void* sim_alloc(const char* name, size_t bytes) {
  const size_t page = 4096, data = (bytes + page - 1) / page * page + page;
  size_t guard = (size_t)16 << 30;
  char* base = (char*)mmap(0, 2 * guard + data, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    guard = (size_t)1 << 30; // a small address space: shorter guards
    base = (char*)mmap(0, 2 * guard + data, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  if (base == MAP_FAILED || mprotect(base + guard, data, PROT_READ | PROT_WRITE) != 0) sim_fail(2, "map %zu bytes for %s", bytes, name);
  if (sim_nbufs == 64) sim_fail(2, "more than 64 buffers");
  // 16-byte aligned (the kernels' vector loads), ending within 15 bytes
  // of the guard.
  char* lo = base + guard + data - (bytes + 15) / 16 * 16;
  sim_bufs[sim_nbufs++] = sim_buf{name, base, lo, lo + bytes, base + 2 * guard + data};
  return lo;
}

static void sim_segv(int, siginfo_t* si, void*) {
  char* a = (char*)si->si_addr;
  for (int i = 0; i < sim_nbufs; i++) {
    sim_buf& b = sim_bufs[i];
    if (a < b.base || a >= b.end) continue;
    if (a >= b.hi) sim_fail(3, "out of bounds: %td bytes past the end of %s (%td bytes)", a - b.hi, b.name, b.hi - b.lo);
    sim_fail(3, "out of bounds: %td bytes before the start of %s (%td bytes)", b.lo - a, b.name, b.hi - b.lo);
  }
  sim_fail(3, "out of bounds: address %p is in no buffer", (void*)a);
}

// ---- conversions, as the PTX instructions round ----

static inline uint32_t sim_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static inline float sim_float(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

// h2f: cvt.f32.f16.
static inline float h2f(unsigned short h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return sim_float(s | 0x7f800000 | m << 13);
  if (e == 0) {
    float v = ldexpf((float)m, -24);
    return s ? -v : v;
  }
  return sim_float(s | (e + 112) << 23 | m << 13);
}

// f2h: cvt.rn.f16.f32: to nearest, ties to even; past the largest half
// (65504, up to 65519.99 rounding down to it) infinity.
static inline unsigned short f2h(float f) {
  uint32_t b = sim_bits(f), s = (b >> 16) & 0x8000;
  float a = fabsf(f);
  if (a != a) return 0x7fff;
  if (a >= 65520.0f) return (unsigned short)(s | 0x7c00);
  if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24
    float q = nearbyintf(a * 16777216.0f);
    return (unsigned short)(s | (uint32_t)q);
  }
  uint32_t ab = b & 0x7fffffff;
  uint32_t r = ab + 0xfff + ((ab >> 13) & 1); // round the 13 dropped bits to even
  return (unsigned short)(s | (((r >> 23) - 112) << 10) | ((r >> 13) & 1023));
}

// f2bf: cvt.rn.bf16.f32.
static inline unsigned short f2bf(float f) {
  uint32_t b = sim_bits(f);
  if ((b & 0x7fffffff) > 0x7f800000) return 0x7fff;
  return (unsigned short)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

static inline float __nvvm_ex2_approx_f(float x) { return exp2f(x); }
static inline float __nvvm_lg2_approx_f(float x) { return log2f(x); }

// ---- the block's threads ----

enum { SIM_READY, SIM_BLOCK, SIM_WARP, SIM_DONE };
enum { SIM_MAXT = 1024, SIM_STACK = 64 << 10 };

struct sim_thread {
  ucontext_t ctx;
  int state;
};
static sim_thread sim_threads[SIM_MAXT];
static char* sim_stacks;
static int sim_n, sim_cur;
static ucontext_t sim_main;
static uint32_t sim_slots[SIM_MAXT / 32][2][32];
static unsigned sim_gen[SIM_MAXT / 32];
static void (*sim_body)(void*);
static void* sim_arg;
static char* sim_shared;

static void sim_yield(int state) {
  sim_threads[sim_cur].state = state;
  swapcontext(&sim_threads[sim_cur].ctx, &sim_main);
}

static inline void __syncthreads() { sim_yield(SIM_BLOCK); }

// sim_exchange is one shuffle: this lane offers v and gets lane src's
// offer. Offers alternate between two slots by the warp's generation, so
// a lane that runs ahead to the next shuffle does not overwrite an offer
// a slower lane has still to read.
static uint32_t sim_exchange(uint32_t v, int src) {
  int w = sim_cur >> 5, lane = sim_cur & 31;
  unsigned g = sim_gen[w] & 1;
  sim_slots[w][g][lane] = v;
  sim_yield(SIM_WARP);
  return sim_slots[w][g][src & 31];
}

static inline int __nvvm_shfl_sync_bfly_i32(unsigned, int v, int m, int) { return (int)sim_exchange((uint32_t)v, (sim_cur & 31) ^ m); }
static inline float __nvvm_shfl_sync_bfly_f32(unsigned, float v, int m, int) { return sim_float(sim_exchange(sim_bits(v), (sim_cur & 31) ^ m)); }
static inline int __nvvm_shfl_sync_up_i32(unsigned, int v, int delta, int) {
  int lane = sim_cur & 31;
  uint32_t got = sim_exchange((uint32_t)v, lane - delta);
  return lane >= delta ? (int)got : v;
}

static void sim_trampoline() {
  sim_body(sim_arg);
  sim_threads[sim_cur].state = SIM_DONE; // uc_link returns to the scheduler
}

// sim_block runs one block to its end.
static void sim_block() {
  for (int t = 0; t < sim_n; t++) {
    sim_thread& th = sim_threads[t];
    getcontext(&th.ctx);
    th.ctx.uc_stack.ss_sp = sim_stacks + (size_t)t * SIM_STACK;
    th.ctx.uc_stack.ss_size = SIM_STACK;
    th.ctx.uc_link = &sim_main;
    makecontext(&th.ctx, sim_trampoline, 0);
    th.state = SIM_READY;
  }
  memset(sim_gen, 0, sizeof sim_gen);
  for (;;) {
    for (int t = 0; t < sim_n; t++) {
      if (sim_threads[t].state != SIM_READY) continue;
      sim_cur = t;
      threadIdx = sim_dim3{(unsigned)t, 0, 0};
      swapcontext(&sim_main, &sim_threads[t].ctx);
    }
    // Every thread waits or is done: release a warp whose lanes all wait
    // at a shuffle, else the block when every live thread waits at
    // __syncthreads.
    bool released = false;
    int live = 0, atBlock = 0;
    for (int w = 0; w * 32 < sim_n; w++) {
      int lanes = sim_n - w * 32 < 32 ? sim_n - w * 32 : 32, atWarp = 0;
      for (int l = 0; l < lanes; l++) atWarp += sim_threads[w * 32 + l].state == SIM_WARP;
      if (atWarp == lanes) {
        for (int l = 0; l < lanes; l++) sim_threads[w * 32 + l].state = SIM_READY;
        sim_gen[w]++;
        released = true;
      }
    }
    if (released) continue;
    for (int t = 0; t < sim_n; t++) {
      live += sim_threads[t].state != SIM_DONE;
      atBlock += sim_threads[t].state == SIM_BLOCK;
    }
    if (live == 0) return;
    if (atBlock == live) {
      for (int t = 0; t < sim_n; t++)
        if (sim_threads[t].state == SIM_BLOCK) sim_threads[t].state = SIM_READY;
      continue;
    }
    for (int t = 0; t < sim_n; t++)
      if (sim_threads[t].state == SIM_WARP)
        sim_fail(4, "deadlock in block (%u,%u,%u): thread %d waits at a warp shuffle that lanes of its warp never reach (they left the kernel or wait at __syncthreads)",
                 blockIdx.x, blockIdx.y, blockIdx.z, t);
    sim_fail(4, "deadlock in block (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z);
  }
}

// sim_launch runs f (a kernel call) over grid blocks of block.x threads
// with shared bytes of dynamic shared memory (DYNAMIC_SHARED), guarded as
// the buffers are.
template <class F>
static void sim_launch(sim_dim3 grid, unsigned threads, size_t shared, const F& f) {
  if (threads < 1 || threads > SIM_MAXT) sim_fail(2, "a block of %u threads", threads);
  if (!sim_stacks) {
    sim_stacks = (char*)mmap(0, (size_t)SIM_MAXT * SIM_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    static char alt[1 << 16];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, 0);
    struct sigaction sa = {};
    sa.sa_sigaction = sim_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
  }
  static char* shared_at;
  static size_t shared_size = (size_t)-1;
  if (shared != shared_size) shared_at = (char*)sim_alloc("dynamic shared memory", shared), shared_size = shared;
  sim_shared = shared_at;
  sim_body = [](void* p) { (*(const F*)p)(); };
  sim_arg = (void*)&f;
  sim_n = (int)threads;
  blockDim = sim_dim3{threads, 1, 1};
  gridDim = grid;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIdx = sim_dim3{x, y, z};
        sim_block();
      }
  sim_arg = 0;
}

#define DYNAMIC_SHARED(T, name) T* name = (T*)sim_shared
