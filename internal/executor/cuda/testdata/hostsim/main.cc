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

int main(int argc, char** argv) {
  if (argc != 2) sim_fail(2, "usage: hostsim JOB < inputs > outputs");
  const char* job = argv[1];
  if (!strcmp(job, "sample")) job_sample();
  else sim_fail(2, "no job %s", job);
  return 0;
}
