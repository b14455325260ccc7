package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BLASLt is cuBLASLt, opened by path: it is seldom on the loader's path
// (CUDA's toolkit keeps it under its own lib directory, Python's wheels
// under site-packages/nvidia/cublas/lib).
type BLASLt struct {
	api     *BLASLtAPI
	Path    string
	Version int // cublasLtGetVersion: major·10000 + minor·100 + patch
	handle  LtHandle
}

// BLASLtCandidates lists where cuBLASLt is looked for when no file is
// named: the loader's own path first, then dirs (a caller's places, such
// as $CUDA_HOME/lib64; glob patterns allowed), CUDA toolkits (newest
// first) and Python environments' wheels.
func BLASLtCandidates(dirs []string) []string {
	names := []string{"libcublasLt.so.13", "libcublasLt.so.12"}
	var out []string
	out = append(out, names...)
	glob := func(pattern string) []string {
		m, _ := filepath.Glob(pattern)
		slices.SortFunc(m, func(a, b string) int { return strings.Compare(b, a) }) // newest version first
		return m
	}
	var places []string
	places = append(places, dirs...)
	places = append(places, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib")
	places = append(places, glob("/usr/local/cuda-*/targets/*-linux/lib")...)
	places = append(places, glob("/usr/local/cuda-*/lib64")...)
	for _, site := range []string{"/usr/local/lib/python3*/dist-packages", "/usr/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/opt/*/.venv/lib/python3*/site-packages", "/opt/conda/lib/python3*/site-packages"} {
		places = append(places, glob(filepath.Join(site, "nvidia/cublas/lib"))...)
		places = append(places, glob(filepath.Join(site, "nvidia/cu13/lib"))...)
	}
	places = append(places, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64")
	var dirs2 []string
	for _, d := range places {
		if strings.ContainsAny(d, "*?[") {
			dirs2 = append(dirs2, glob(d)...)
		} else {
			dirs2 = append(dirs2, d)
		}
	}
	for _, d := range dirs2 {
		for _, n := range names {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err == nil && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// OpenBLASLt opens cuBLASLt from path, or from the first of
// BLASLtCandidates(dirs) that loads when path is empty, and makes its
// handle on the context's thread (call it inside Do).
func OpenBLASLt(c *Context, path string, dirs []string) (*BLASLt, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	cands := []string{path}
	if path == "" {
		cands = BLASLtCandidates(dirs)
	}
	var errs []error
	for _, p := range cands {
		b, err := openBLASLt(c, p)
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	if path != "" {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("no cuBLASLt found (name its file, e.g. GLASSBOX_CUBLAS=/usr/local/cuda/lib64/libcublasLt.so.13): %w", errors.Join(errs...))
}

func openBLASLt(c *Context, path string) (*BLASLt, error) {
	lib, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	api := new(BLASLtAPI)
	if err := lib.bind(api); err != nil {
		return nil, err
	}
	return NewBLASLt(c, api, path)
}

// NewBLASLt makes a cuBLASLt handle from api's functions (OpenBLASLt's
// from the library at path, or a test's fake) on the context's thread
// (call it inside Do).
func NewBLASLt(c *Context, api *BLASLtAPI, path string) (*BLASLt, error) {
	if err := unbound(api); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b := &BLASLt{api: api, Path: path, Version: int(api.GetVersion())}
	if err := blasCheck("cublasLtCreate", api.Create(&b.handle)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Close releases the handle (inside Do).
func (b *BLASLt) Close() { b.api.Destroy(b.handle) }

// VersionString is the library's version as "13.1.0".
func (b *BLASLt) VersionString() string {
	return fmt.Sprintf("%d.%d.%d", b.Version/10000, b.Version/100%100, b.Version%100)
}

func blasCheck(op string, r LtStatus) error {
	if r == 0 {
		return nil
	}
	names := map[LtStatus]string{1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH", 11: "MAPPING_ERROR",
		13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED", 16: "LICENSE_ERROR"}
	return fmt.Errorf("%s: CUBLAS_STATUS_%s (%d)", op, names[r], r)
}

// DType is an element type, with CUDA's cudaDataType values.
type DType int

// The element types glassbox's GEMMs take.
const (
	F32  DType = 0
	F16  DType = 2
	BF16 DType = 14
)

// Size is the element's size in bytes.
func (t DType) Size() int {
	if t == F32 {
		return 4
	}
	return 2
}

func (t DType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("dtype %d", int(t))
}

// Constants of cuBLASLt's API.
const (
	computeF32       = 68 // CUBLAS_COMPUTE_32F
	descTransA       = 3  // CUBLASLT_MATMUL_DESC_TRANSA
	opT              = 1  // CUBLAS_OP_T
	prefMaxWorkspace = 1  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
)

// GEMM is a planned product Y[n×out] (+)= X[n×in] · W[out×in]ᵀ, every
// matrix row-major: a linear layer over n tokens. X and W have type In
// (W is the weight, as stored), Y type Out, accumulation in f32.
type GEMM struct {
	b                   *BLASLt
	N, In, OutF         int
	desc                LtMatmulDesc
	la, lb, lc          LtMatrixLayout
	algo                HeuristicResult // the heuristic's first choice
	alpha, beta0, beta1 float32
}

// Plan prepares a GEMM for n tokens (inside Do); workspace is the most
// scratch memory its algorithm may use.
func (b *BLASLt) Plan(in, out DType, n, inF, outF int, workspace int64) (*GEMM, error) {
	g := &GEMM{b: b, N: n, In: inF, OutF: outF, alpha: 1, beta1: 1}
	api := b.api
	fail := func(err error) (*GEMM, error) {
		g.Destroy()
		return nil, fmt.Errorf("plan a %s GEMM of %d×%d by %d×%d: %w", in, n, inF, outF, inF, err)
	}
	if err := blasCheck("cublasLtMatmulDescCreate", api.MatmulDescCreate(&g.desc, computeF32, int32(F32))); err != nil {
		return fail(err)
	}
	t := int32(opT)
	if err := blasCheck("cublasLtMatmulDescSetAttribute", api.MatmulDescSetAttribute(g.desc, descTransA, &t, 4)); err != nil {
		return fail(err)
	}
	// Column-major view: W is in×out (ld in) taken transposed, X in×n
	// (ld in), Y out×n (ld out).
	for _, l := range []struct {
		dst        *LtMatrixLayout
		t          DType
		rows, cols int
	}{{&g.la, in, inF, outF}, {&g.lb, in, inF, n}, {&g.lc, out, outF, n}} {
		if err := blasCheck("cublasLtMatrixLayoutCreate", api.MatrixLayoutCreate(l.dst, int32(l.t), uint64(l.rows), uint64(l.cols), int64(l.rows))); err != nil {
			return fail(err)
		}
	}
	var pref LtMatmulPreference
	if err := blasCheck("cublasLtMatmulPreferenceCreate", api.PreferenceCreate(&pref)); err != nil {
		return fail(err)
	}
	defer api.PreferenceDestroy(pref)
	ws := uint64(workspace)
	if err := blasCheck("cublasLtMatmulPreferenceSetAttribute", api.PreferenceSetAttribute(pref, prefMaxWorkspace, &ws, 8)); err != nil {
		return fail(err)
	}
	var found int32
	if err := blasCheck("cublasLtMatmulAlgoGetHeuristic", api.AlgoGetHeuristic(b.handle, g.desc, g.la, g.lb, g.lc, g.lc, pref, 1, &g.algo, &found)); err != nil {
		return fail(err)
	}
	if found < 1 || g.algo.State != 0 {
		return fail(errors.New("cuBLASLt has no algorithm for it"))
	}
	if g.Workspace() > workspace {
		return fail(fmt.Errorf("cuBLASLt's algorithm needs %d bytes of workspace, above the %d allowed", g.Workspace(), workspace))
	}
	return g, nil
}

// Workspace is the scratch memory the chosen algorithm needs.
func (g *GEMM) Workspace() int64 { return int64(g.algo.WorkspaceSize) }

// Run queues Y = X·Wᵀ, or with accumulate Y += X·Wᵀ, on s; ws is
// scratch of at least the workspace given to Plan.
func (g *GEMM) Run(s *Stream, w, x, y Ptr, accumulate bool, ws Ptr, wsBytes int64) error {
	beta := &g.beta0
	if accumulate {
		beta = &g.beta1
	}
	r := g.b.api.Matmul(g.b.handle, g.desc, &g.alpha, w, g.la, x, g.lb, beta, y, g.lc, y, g.lc, &g.algo.Algo, ws, uint64(wsBytes), s.h)
	return blasCheck("cublasLtMatmul", r)
}

// Destroy releases the plan.
func (g *GEMM) Destroy() {
	api := g.b.api
	for _, l := range []LtMatrixLayout{g.la, g.lb, g.lc} {
		if l != 0 {
			api.MatrixLayoutDestroy(l)
		}
	}
	if g.desc != 0 {
		api.MatmulDescDestroy(g.desc)
	}
}
