package layering

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// architectureDoc is the newcomer's map of the house, from here.
const architectureDoc = "../../docs/architecture.md"

// docName is how the errors name it.
const docName = "docs/architecture.md"

// docRow is one row of a table in docs/architecture.md that names a Go
// file and the declarations in it: `Type.Method`, a function, a type.
type docRow struct {
	line  int
	file  string
	names []string
}

var (
	// goFile is a backticked repository path of a Go file.
	goFile = regexp.MustCompile("`((?:internal|cmd)/[A-Za-z0-9_./-]+\\.go)`")
	// backticked is each backticked name in a table's functions column.
	backticked = regexp.MustCompile("`([^`]+)`")
)

// docRows are the rows whose second cell is a Go file, with the
// declarations their third cell names, and every Go file the doc names
// anywhere with the line it is on.
func docRows(t *testing.T) (rows []docRow, files map[string]int) {
	t.Helper()
	f, err := os.Open(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files = map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, m := range goFile.FindAllStringSubmatch(line, -1) {
			if _, ok := files[m[1]]; !ok {
				files[m[1]] = n
			}
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(strings.TrimSpace(line), "|") || len(cells) != 3 {
			continue
		}
		m := goFile.FindStringSubmatch(cells[1])
		if m == nil {
			continue
		}
		row := docRow{line: n, file: m[1]}
		for _, b := range backticked.FindAllStringSubmatch(cells[2], -1) {
			row.names = append(row.names, b[1])
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, files
}

// declared is every top-level name a Go file declares: functions, types,
// variables and constants by their names, methods as Type.Method.
func declared(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				out[d.Name.Name] = true
				continue
			}
			out[receiverName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// receiverName is T of a receiver T, *T, T[P] or *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestArchitectureNamesExist: every Go file docs/architecture.md names
// exists, and every function, method and type its tables name is declared
// in the file the row names (parsed with go/parser): a request's path,
// file by file, and where the doctor's parts live stay true as the code
// moves. Rename them in the doc when you rename them in the code.
func TestArchitectureNamesExist(t *testing.T) {
	rows, files := docRows(t)
	// The tables are there: a doc that lost them would pass vacuously.
	if len(rows) < 20 {
		t.Fatalf("%s: %d table rows name a Go file and its functions, want the request's path and the doctor's parts (20 or more)", docName, len(rows))
	}
	root := filepath.Join("..", "..")
	for file, line := range files {
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			t.Errorf("%s:%d names %s, which does not exist", docName, line, file)
		}
	}
	decls := map[string]map[string]bool{}
	for _, r := range rows {
		path := filepath.Join(root, r.file)
		if _, err := os.Stat(path); err != nil {
			continue // reported above
		}
		if decls[r.file] == nil {
			decls[r.file] = declared(t, path)
		}
		if len(r.names) == 0 {
			t.Errorf("%s:%d names %s but no function in it", docName, r.line, r.file)
		}
		for _, n := range r.names {
			if !decls[r.file][n] {
				t.Errorf("%s:%d names %s in %s, which declares no such thing", docName, r.line, n, r.file)
			}
		}
	}
}
