package cuda

// The kernels are CUDA C compiled to PTX by Debian's clang 14, with no
// CUDA SDK: clang's own CUDA mode, device code only, sm_80's PTX (7.0),
// which the driver compiles for the GPU it runs on (Ampere, Hopper and
// later). kernels.ptx is committed; .ci/run checks that regenerating it
// changes nothing.
//go:generate clang -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -O3 -Xclang -target-feature -Xclang +ptx70 -S kernels/kernels.cu -o kernels.ptx
