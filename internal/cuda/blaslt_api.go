package cuda

import "structs"

// cuBLASLt's types as cublasLt.h declares them.
type (
	LtStatus           int32   // cublasStatus_t: 0 is CUBLAS_STATUS_SUCCESS
	LtHandle           uintptr // cublasLtHandle_t
	LtMatmulDesc       uintptr // cublasLtMatmulDesc_t
	LtMatrixLayout     uintptr // cublasLtMatrixLayout_t
	LtMatmulPreference uintptr // cublasLtMatmulPreference_t
)

// MatmulAlgo is cublasLtMatmulAlgo_t: uint64_t data[8], opaque to its
// users.
type MatmulAlgo struct {
	_    structs.HostLayout
	Data [8]uint64
}

// HeuristicResult is cublasLtMatmulHeuristicResult_t, one algorithm
// cublasLtMatmulAlgoGetHeuristic proposes (TestCLayouts asserts its size
// and offsets against the header's).
type HeuristicResult struct {
	_             structs.HostLayout
	Algo          MatmulAlgo
	WorkspaceSize uint64   // size_t: the scratch memory the algorithm needs
	State         LtStatus // CUBLAS_STATUS_SUCCESS where the other fields are valid
	WavesCount    float32
	Reserved      [4]int32
}

// BLASLtAPI is the part of cuBLASLt glassbox calls, each field one C
// function typed as its prototype in cublasLt.h (see DriverAPI for the
// conventions). OpenBLASLt fills it from the library; a test fills it
// with Go functions.
type BLASLtAPI struct {
	Create     func(h *LtHandle) LtStatus `c:"cublasLtCreate"`
	Destroy    func(h LtHandle) LtStatus  `c:"cublasLtDestroy"`
	GetVersion func() uint64              `c:"cublasLtGetVersion"`

	MatmulDescCreate       func(d *LtMatmulDesc, compute int32, scale int32) LtStatus                 `c:"cublasLtMatmulDescCreate"`
	MatmulDescSetAttribute func(d LtMatmulDesc, attr int32, buf *int32, size uint64) LtStatus         `c:"cublasLtMatmulDescSetAttribute"`
	MatmulDescDestroy      func(d LtMatmulDesc) LtStatus                                              `c:"cublasLtMatmulDescDestroy"`
	MatrixLayoutCreate     func(l *LtMatrixLayout, dtype int32, rows, cols uint64, ld int64) LtStatus `c:"cublasLtMatrixLayoutCreate"`
	MatrixLayoutDestroy    func(l LtMatrixLayout) LtStatus                                            `c:"cublasLtMatrixLayoutDestroy"`
	PreferenceCreate       func(p *LtMatmulPreference) LtStatus                                       `c:"cublasLtMatmulPreferenceCreate"`
	PreferenceSetAttribute func(p LtMatmulPreference, attr int32, buf *uint64, size uint64) LtStatus  `c:"cublasLtMatmulPreferenceSetAttribute"`
	PreferenceDestroy      func(p LtMatmulPreference) LtStatus                                        `c:"cublasLtMatmulPreferenceDestroy"`

	// AlgoGetHeuristic writes up to requested results into results[0:]
	// and their count into *found.
	AlgoGetHeuristic func(h LtHandle, desc LtMatmulDesc, a, b, c, d LtMatrixLayout, pref LtMatmulPreference,
		requested int32, results *HeuristicResult, found *int32) LtStatus `c:"cublasLtMatmulAlgoGetHeuristic"`
	// Matmul computes D = alpha·op(A)·op(B) + beta·C; alpha and beta are
	// read on the host when it is called (or captured).
	Matmul func(h LtHandle, desc LtMatmulDesc, alpha *float32, a Ptr, la LtMatrixLayout, b Ptr, lb LtMatrixLayout,
		beta *float32, c Ptr, lc LtMatrixLayout, d Ptr, ld LtMatrixLayout, algo *MatmulAlgo,
		workspace Ptr, workspaceBytes uint64, s CUstream) LtStatus `c:"cublasLtMatmul"`
}
