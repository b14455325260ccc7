//go:build amd64 && !purego && !noavx512

package tensor

// maxISA caps the kernel set (see isa_cap.go: the noavx512 build tag).
const maxISA = isaBF16
