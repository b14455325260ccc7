// glassbox's CUDA kernels, one translation unit: `go generate` compiles
// it to kernels.ptx with clang (gen.go), which the executor embeds.
#include "layer.cuh"
#include "attention.cuh"
#include "decode.cuh"
#include "sample.cuh"
#include "flash.cuh"
