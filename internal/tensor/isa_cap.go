//go:build amd64 && !purego && noavx512

package tensor

// maxISA caps the kernel set: with the noavx512 build tag an AVX-512
// machine runs (and tests) the AVX2 kernels and layouts, e.g.
// go test -tags noavx512 ./internal/model for the reference logits.
const maxISA = isaAVX2
