// The host simulation's program: go test (hostsim_test.go) builds it and
// runs one job a process, the job named by argv[1], its inputs on stdin
// and its outputs on stdout as little-endian arrays, in the order the
// job's comment lists them.
#include "sim.h"

#include "attention.cuh"
#include "decode.cuh"
#include "layer.cuh"
#include "sample.cuh"

static void rd(void* p, size_t n) {
  if (n && fread(p, 1, n, stdin) != n) sim_fail(2, "short input");
}
static int geti() {
  int32_t v;
  rd(&v, 4);
  return v;
}
// in reads n values of T into a guarded buffer.
template <class T>
static T* in(const char* name, long n) {
  T* p = (T*)sim_alloc(name, n * sizeof(T));
  rd(p, n * sizeof(T));
  return p;
}
template <class T>
static T* buf(const char* name, long n) {
  T* p = (T*)sim_alloc(name, n * sizeof(T));
  memset(p, 0, n * sizeof(T));
  return p;
}
static void wr(const void* p, long n) { fwrite(p, 1, n, stdout); }

// sample: in V, m, words; logits[m·V] f32, temp[m] f32, topk[m] i32,
// topp[m] f32, minp[m] f32, u[m] f32, maskrow[m] i32, masks[m·words] u64;
// out tokens[m] i32, logprobs[m] f32.
static void job_sample() {
  int V = geti(), m = geti(), words = geti();
  float* logits = in<float>("logits", (long)m * V);
  float* temp = in<float>("temp", m);
  int* topk = in<int>("topk", m);
  float *topp = in<float>("topp", m), *minp = in<float>("minp", m), *u = in<float>("u", m);
  int* maskrow = in<int>("maskrow", m);
  u64* masks = in<u64>("masks", (long)m * words);
  int* tok = buf<int>("tokens", m);
  float* lp = buf<float>("logprobs", m);
  sim_launch(sim_dim3{(unsigned)m, 1, 1}, SAMPLE_THREADS, 0, [&] { sample(logits, V, temp, topk, topp, minp, u, maskrow, masks, words, tok, lp); });
  wr(tok, 4L * m);
  wr(lp, 4L * m);
}

// dsize is the bytes of one value of type dt (0 f32, 1 f16, 2 bf16).
static int dsize(int dt) { return dt == 0 ? 4 : 2; }

// silu: in dt, n, F; gu[n·2F] f32; out act[n·F] (dt), scale[n] f32 (f16:
// each row's divisor; else ones).
static void job_silu() {
  int dt = geti(), n = geti(), F = geti();
  float* gu = in<float>("gu", 2L * n * F);
  char* out = buf<char>("act", (long)n * F * dsize(dt));
  float* scale = buf<float>("scale", n);
  for (int i = 0; i < n; i++) scale[i] = 1;
  if (dt == 1) {
    sim_launch(sim_dim3{(unsigned)n, 1, 1}, 1024, 0, [&] { silu_mul_f16(gu, (f16*)out, scale, F); });
  } else {
    sim_launch(sim_dim3{(unsigned)n, (unsigned)((F + 255) / 256), 1}, 256, 0, [&] {
      if (dt == 0) silu_mul_f32(gu, (float*)out, F);
      else silu_mul_bf16(gu, (bf16*)out, F);
    });
  }
  wr(out, (long)n * F * dsize(dt));
  wr(scale, 4L * n);
}

// rmsnorm: in dt, n, H, m, writeback, eps (f32); x[n·H], delta[n·H],
// dscale[n], rows[m] (m = 0: none, n rows), w[H]; out out[rows·H] (dt),
// x[n·H].
static void job_rmsnorm() {
  int dt = geti(), n = geti(), H = geti(), m = geti(), wb = geti();
  float eps;
  rd(&eps, 4);
  float *x = in<float>("x", (long)n * H), *delta = in<float>("delta", (long)n * H), *ds = in<float>("dscale", n);
  int* rows = m ? in<int>("rows", m) : 0;
  float* w = in<float>("w", H);
  int outRows = m ? m : n;
  char* out = buf<char>("out", (long)outRows * H * dsize(dt));
  unsigned threads = H >= 1024 ? 1024 : (H + 31) / 32 * 32;
  sim_launch(sim_dim3{(unsigned)outRows, 1, 1}, threads, 0, [&] {
    if (dt == 0) rmsnorm_f32(x, delta, ds, rows, w, (float*)out, H, eps, wb);
    else if (dt == 1) rmsnorm_f16(x, delta, ds, rows, w, (f16*)out, H, eps, wb);
    else rmsnorm_bf16(x, delta, ds, rows, w, (bf16*)out, H, eps, wb);
  });
  wr(out, (long)outRows * H * dsize(dt));
  wr(x, 4L * n * H);
}

// qkv_rope: in dt, n, heads, kvheads, d, ropeDims, neox, B, blocks,
// maxPos; qkv[n·(heads+2kvheads)·d], rope[maxPos·ropeDims], pos[n],
// slots[n]; out qkv, kc and vc (blocks·kvheads·B·d 16-bit values each).
static void job_qkv_rope() {
  int dt = geti(), n = geti(), heads = geti(), kvh = geti(), d = geti(), rd_ = geti(), neox = geti(), B = geti(), blocks = geti(),
      maxPos = geti();
  long stride = (long)(heads + 2 * kvh) * d, cache = (long)blocks * kvh * B * d;
  float* qkv = in<float>("qkv", n * stride);
  float* rope = in<float>("rope", (long)maxPos * rd_);
  int *pos = in<int>("pos", n), *slots = in<int>("slots", n);
  u16 *kc = buf<u16>("kc", cache), *vc = buf<u16>("vc", cache);
  unsigned threads = (d + 31) / 32 * 32;
  sim_launch(sim_dim3{(unsigned)n, (unsigned)(heads + 2 * kvh), 1}, threads, 0, [&] {
    if (dt == 0) qkv_rope_f32(qkv, 0, 0, 0, rope, pos, slots, kc, vc, heads, kvh, d, rd_, neox, B, 1e-6f);
    else if (dt == 1) qkv_rope_f16(qkv, 0, 0, 0, rope, pos, slots, kc, vc, heads, kvh, d, rd_, neox, B, 1e-6f);
    else qkv_rope_bf16(qkv, 0, 0, 0, rope, pos, slots, kc, vc, heads, kvh, d, rd_, neox, B, 1e-6f);
  });
  wr(qkv, 4 * n * stride);
  wr(kc, 2 * cache);
  wr(vc, 2 * cache);
}

// attention: in kind (0 prefill, 1 decode, 2 tiled decode), dt, G,
// kvheads, B, D, rows (query rows of q), cache (16-bit values of each of
// K and V), scale (f32), then for prefill: nitems, maxb, shared bytes,
// items[4·nitems], tables[…]; for decode: nseq, splits, maxb, qrow[nseq],
// ctx[nseq], tables[nseq·maxb]; then q[rows·Hq·D], kc, vc; out
// out[rows·Hq·D] (dt).
static void job_attention() {
  int kind = geti(), dt = geti(), G = geti(), kvh = geti(), B = geti(), D = geti(), rows = geti(), cache = geti();
  float scale;
  rd(&scale, 4);
  int Hq = G * kvh, qs = Hq * D;
  int nitems = 0, maxb = 0, shared = 0, nseq = 0, splits = 1;
  int *items = 0, *tables = 0, *qrow = 0, *ctx = 0, *maxbp = 0;
  if (kind == 0) {
    nitems = geti(), maxb = geti(), shared = geti();
    items = in<int>("items", 4L * nitems);
    int nt = geti();
    tables = in<int>("tables", nt);
  } else {
    nseq = geti(), splits = geti(), maxb = geti();
    qrow = in<int>("qrow", nseq), ctx = in<int>("ctx", nseq), tables = in<int>("tables", (long)nseq * maxb);
    maxbp = buf<int>("maxb", 1);
    *maxbp = maxb;
  }
  float* q = in<float>("q", (long)rows * qs);
  u16 *kc = in<u16>("kc", cache), *vc = in<u16>("vc", cache);
  char* out = buf<char>("out", (long)rows * qs * dsize(dt));
  long parts = (long)nseq * Hq * splits;
  float *po = buf<float>("po", parts * D + 1), *pm = buf<float>("pm", parts + 1), *pl = buf<float>("pl", parts + 1);
  if (kind == 0) {
    sim_launch(sim_dim3{(unsigned)nitems, (unsigned)kvh, 1}, 128, shared, [&] {
      if (dt == 0) prefill_f32(q, qs, items, tables, maxb, kc, vc, (float*)out, G, kvh, B, D, scale);
      else if (dt == 1) prefill_f16(q, qs, items, tables, maxb, kc, vc, (f16*)out, G, kvh, B, D, scale);
      else prefill_bf16(q, qs, items, tables, maxb, kc, vc, (bf16*)out, G, kvh, B, D, scale);
    });
  } else {
    sim_launch(sim_dim3{(unsigned)kvh, (unsigned)nseq, (unsigned)splits}, 128, 0, [&] {
#define ARGS q, qs, qrow, ctx, tables, maxbp, kc, vc
#define PARTS po, pm, pl, G, kvh, B, scale
      bool tiled = kind == 2;
      if (D == 64 && dt == 0) tiled ? tdecode64_f32(ARGS, (float*)out, PARTS) : decode64_f32(ARGS, (float*)out, PARTS);
      else if (D == 64 && dt == 1) tiled ? tdecode64_f16(ARGS, (f16*)out, PARTS) : decode64_f16(ARGS, (f16*)out, PARTS);
      else if (D == 64) tiled ? tdecode64_bf16(ARGS, (bf16*)out, PARTS) : decode64_bf16(ARGS, (bf16*)out, PARTS);
      else if (dt == 0) tiled ? tdecode128_f32(ARGS, (float*)out, PARTS) : decode128_f32(ARGS, (float*)out, PARTS);
      else if (dt == 1) tiled ? tdecode128_f16(ARGS, (f16*)out, PARTS) : decode128_f16(ARGS, (f16*)out, PARTS);
      else tiled ? tdecode128_bf16(ARGS, (bf16*)out, PARTS) : decode128_bf16(ARGS, (bf16*)out, PARTS);
    });
    if (splits > 1) {
      sim_launch(sim_dim3{(unsigned)nseq, (unsigned)Hq, 1}, (D + 31) / 32 * 32, 0, [&] {
        if (dt == 0) decode_combine_f32(qrow, po, pm, pl, (float*)out, Hq, D, splits);
        else if (dt == 1) decode_combine_f16(qrow, po, pm, pl, (f16*)out, Hq, D, splits);
        else decode_combine_bf16(qrow, po, pm, pl, (bf16*)out, Hq, D, splits);
      });
    }
  }
  wr(out, (long)rows * qs * dsize(dt));
}

int main(int argc, char** argv) {
  if (argc != 2) sim_fail(2, "usage: hostsim JOB < inputs > outputs");
  const char* job = argv[1];
  if (!strcmp(job, "sample")) job_sample();
  else if (!strcmp(job, "silu")) job_silu();
  else if (!strcmp(job, "rmsnorm")) job_rmsnorm();
  else if (!strcmp(job, "qkv_rope")) job_qkv_rope();
  else if (!strcmp(job, "attention")) job_attention();
  else sim_fail(2, "no job %s", job);
  return 0;
}
