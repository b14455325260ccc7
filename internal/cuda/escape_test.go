package cuda

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOutParametersOnTheHeap compiles this package as the GPU build does
// (linux/amd64, purego) with the compiler's escape analysis printed, and
// checks that every variable whose address the package takes (&v, and
// &v[i] of a slice it made) lives on the heap. Such an address goes to
// C as an out-parameter or a buffer: on a goroutine's stack it would move
// when the stack grows, and the driver would write into freed memory
// (issue 42's defect 5: a helper that converted the pointer to a uintptr
// hid it from //go:uintptrescapes, and the compiler kept these on the
// stack).
func TestOutParametersOnTheHeap(t *testing.T) {
	// It compiles the package's sources: a test binary run elsewhere (on
	// a GPU machine, without Go: scripts/gpu-check.sh) has neither.
	goTool, err := exec.LookPath("go")
	if _, statErr := os.Stat("escape_test.go"); err != nil || statErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: the go command and internal/cuda's sources are needed (%v, %v)", err, statErr)
		}
		t.Skipf("SKIPPED: this test compiles internal/cuda's sources with the go command, and this run has no go command or is not in the package's directory (%v, %v)", err, statErr)
	}
	cmd := exec.Command(goTool, "build", "-gcflags=-m", ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	// "./memory.go:18:6: moved to heap: p", "./driver.go:136:14:
	// make([]byte, 256) escapes to heap".
	diag := regexp.MustCompile(`(?m)^\./([^:]+\.go):(\d+):(\d+): (moved to heap: \w+|.* escapes to heap)$`)
	onHeap := map[string]bool{}
	for _, m := range diag.FindAllStringSubmatch(string(out), -1) {
		onHeap[m[1]+":"+m[2]+":"+m[3]] = true
	}

	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", "amd64", false
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(".", name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			u, ok := n.(*ast.UnaryExpr)
			if !ok || u.Op != token.AND {
				return true
			}
			where, what := addressed(u.X)
			if !where.IsValid() {
				return true
			}
			checked++
			p := fset.Position(where)
			if !onHeap[p.Filename+":"+strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column)] {
				t.Errorf("%s: &%s: %s stays on the stack (go build -gcflags=-m says no 'moved to heap' or 'escapes to heap' at %s:%d:%d)",
					fset.Position(u.Pos()), exprString(u.X), what, p.Filename, p.Line, p.Column)
			}
			return true
		})
	}
	if checked < 20 {
		t.Errorf("only %d addresses taken in the package: the test no longer finds the out-parameters", checked)
	}
}

// addressed is where the compiler reports on the memory &x points into:
// a local variable's declaration ("moved to heap"), or, for an element
// of a slice the function made, the make or the literal ("escapes to
// heap"). It is invalid for what lives elsewhere already (a field
// through a pointer, a package variable).
func addressed(x ast.Expr) (token.Pos, string) {
	switch x := x.(type) {
	case *ast.ParenExpr:
		return addressed(x.X)
	case *ast.Ident:
		if x.Obj == nil || x.Obj.Kind != ast.Var {
			return token.NoPos, ""
		}
		if id := declIdent(x.Obj); id != nil {
			return id.Pos(), "variable " + x.Name
		}
	case *ast.SelectorExpr:
		// &v.f of a struct variable v (not through a pointer): v's.
		id, ok := x.X.(*ast.Ident)
		if !ok || id.Obj == nil || id.Obj.Kind != ast.Var || !isStructValue(id.Obj) {
			return token.NoPos, ""
		}
		if decl := declIdent(id.Obj); decl != nil {
			return decl.Pos(), "variable " + id.Name
		}
	case *ast.IndexExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok || id.Obj == nil || id.Obj.Kind != ast.Var {
			return token.NoPos, ""
		}
		switch rhs := declValue(id.Obj).(type) {
		case *ast.CallExpr:
			if fn, ok := rhs.Fun.(*ast.Ident); ok && fn.Name == "make" {
				return rhs.Lparen, "the slice " + id.Name + " makes" // the compiler's position of a call
			}
		case *ast.CompositeLit:
			return rhs.Lbrace, "the literal " + id.Name + " holds"
		}
	}
	return token.NoPos, ""
}

// isStructValue says whether a variable is declared as a struct value
// (var v T{…} with a non-pointer type, or v := T{…}), not a pointer.
func isStructValue(o *ast.Object) bool {
	if spec, ok := o.Decl.(*ast.ValueSpec); ok && spec.Type != nil {
		_, ptr := spec.Type.(*ast.StarExpr)
		return !ptr && len(spec.Values) == 0
	}
	_, lit := declValue(o).(*ast.CompositeLit)
	return lit
}

// declIdent is the identifier that declares a local variable or a
// parameter; nil for a package-level one.
func declIdent(o *ast.Object) *ast.Ident {
	switch d := o.Decl.(type) {
	case *ast.ValueSpec:
		for _, n := range d.Names {
			if n.Name == o.Name {
				return n
			}
		}
	case *ast.AssignStmt:
		for _, l := range d.Lhs {
			if n, ok := l.(*ast.Ident); ok && n.Name == o.Name {
				return n
			}
		}
	case *ast.Field:
		for _, n := range d.Names {
			if n.Name == o.Name {
				return n
			}
		}
	}
	return nil
}

// declValue is the expression a variable is declared with (x := make(…)),
// or nil.
func declValue(o *ast.Object) ast.Expr {
	switch d := o.Decl.(type) {
	case *ast.ValueSpec:
		for i, n := range d.Names {
			if n.Name == o.Name && i < len(d.Values) {
				return d.Values[i]
			}
		}
	case *ast.AssignStmt:
		for i, l := range d.Lhs {
			if n, ok := l.(*ast.Ident); ok && n.Name == o.Name && i < len(d.Rhs) {
				return d.Rhs[i]
			}
		}
	}
	return nil
}

func exprString(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return exprString(x.X) + "[…]"
	case *ast.ParenExpr:
		return exprString(x.X)
	}
	return "…"
}
