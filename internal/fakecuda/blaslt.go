package fakecuda

import (
	"github.com/glassbox-llm/glassbox/internal/cuda"
)

// cuBLASLt's statuses the fake answers with (cublas_api.h's values).
const (
	ltSuccess      cuda.LtStatus = 0
	ltInvalidValue cuda.LtStatus = 7
)

// BLASLt is the board's cuBLASLt, for cuda.NewBLASLt: its objects are
// counted as live until destroyed, its heuristic proposes one algorithm
// needing Config.WorkspaceSize of workspace, and its GEMMs are recorded
// as ops ("cublasLtMatmul") with their stream, their matrices and
// workspace checked to be live device memory.
func (g *GPU) BLASLt() *cuda.BLASLtAPI {
	create := func(kind string) func(h *uintptr) cuda.LtStatus {
		return func(h *uintptr) cuda.LtStatus {
			g.mu.Lock()
			defer g.mu.Unlock()
			*h = g.handle()
			g.lt[*h] = kind
			return ltSuccess
		}
	}
	destroy := func(kind string, h uintptr) cuda.LtStatus {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.lt[h] != kind {
			g.fault("destroy %s %#x, which is not a live one", kind, h)
			return ltInvalidValue
		}
		delete(g.lt, h)
		return ltSuccess
	}
	live := func(kind string, h uintptr) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.lt[h] == kind
	}
	handle, desc, layout, pref := create("cuBLASLt handles"), create("matmul descriptors"), create("matrix layouts"), create("matmul preferences")
	return &cuda.BLASLtAPI{
		Create:     func(h *cuda.LtHandle) cuda.LtStatus { return handle((*uintptr)(h)) },
		Destroy:    func(h cuda.LtHandle) cuda.LtStatus { return destroy("cuBLASLt handles", uintptr(h)) },
		GetVersion: func() uint64 { return 130100 },
		MatmulDescCreate: func(d *cuda.LtMatmulDesc, _, _ int32) cuda.LtStatus {
			return desc((*uintptr)(d))
		},
		MatmulDescSetAttribute: func(d cuda.LtMatmulDesc, _ int32, _ *int32, _ uint64) cuda.LtStatus {
			if !live("matmul descriptors", uintptr(d)) {
				return ltInvalidValue
			}
			return ltSuccess
		},
		MatmulDescDestroy: func(d cuda.LtMatmulDesc) cuda.LtStatus { return destroy("matmul descriptors", uintptr(d)) },
		MatrixLayoutCreate: func(l *cuda.LtMatrixLayout, _ int32, rows, cols uint64, ld int64) cuda.LtStatus {
			if rows == 0 || cols == 0 || ld < int64(rows) {
				return ltInvalidValue
			}
			return layout((*uintptr)(l))
		},
		MatrixLayoutDestroy: func(l cuda.LtMatrixLayout) cuda.LtStatus { return destroy("matrix layouts", uintptr(l)) },
		PreferenceCreate:    func(p *cuda.LtMatmulPreference) cuda.LtStatus { return pref((*uintptr)(p)) },
		PreferenceSetAttribute: func(p cuda.LtMatmulPreference, _ int32, _ *uint64, _ uint64) cuda.LtStatus {
			if !live("matmul preferences", uintptr(p)) {
				return ltInvalidValue
			}
			return ltSuccess
		},
		PreferenceDestroy: func(p cuda.LtMatmulPreference) cuda.LtStatus { return destroy("matmul preferences", uintptr(p)) },
		AlgoGetHeuristic: func(h cuda.LtHandle, d cuda.LtMatmulDesc, a, b, c, _ cuda.LtMatrixLayout, p cuda.LtMatmulPreference,
			requested int32, results *cuda.HeuristicResult, found *int32) cuda.LtStatus {
			if requested < 1 || !live("cuBLASLt handles", uintptr(h)) || !live("matmul descriptors", uintptr(d)) ||
				!live("matrix layouts", uintptr(a)) || !live("matrix layouts", uintptr(b)) || !live("matrix layouts", uintptr(c)) ||
				!live("matmul preferences", uintptr(p)) {
				return ltInvalidValue
			}
			*results = cuda.HeuristicResult{WorkspaceSize: g.cfg.WorkspaceSize, WavesCount: 1}
			results.Algo.Data[0] = 0xa160 // any algorithm id
			*found = 1
			return ltSuccess
		},
		Matmul: func(h cuda.LtHandle, d cuda.LtMatmulDesc, _ *float32, a cuda.Ptr, _ cuda.LtMatrixLayout, b cuda.Ptr, _ cuda.LtMatrixLayout,
			_ *float32, c cuda.Ptr, _ cuda.LtMatrixLayout, dst cuda.Ptr, _ cuda.LtMatrixLayout, algo *cuda.MatmulAlgo,
			ws cuda.Ptr, wsBytes uint64, s cuda.CUstream) cuda.LtStatus {
			if !live("cuBLASLt handles", uintptr(h)) || !live("matmul descriptors", uintptr(d)) || algo == nil || algo.Data[0] != 0xa160 {
				return ltInvalidValue
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if !g.onStream("cublasLtMatmul", s) {
				return ltInvalidValue
			}
			uses := []use{{"cublasLtMatmul A", a}, {"cublasLtMatmul B", b}, {"cublasLtMatmul C", c}, {"cublasLtMatmul D", dst}}
			if wsBytes < g.cfg.WorkspaceSize {
				g.fault("cublasLtMatmul with %d bytes of workspace; its algorithm needs %d", wsBytes, g.cfg.WorkspaceSize)
			}
			if wsBytes > 0 {
				uses = append(uses, use{"cublasLtMatmul workspace", ws})
			}
			g.queue("cublasLtMatmul", s, uses)
			g.record(Op{Call: "cublasLtMatmul", Stream: s, Dst: dst})
			return ltSuccess
		},
	}
}
