// The Go declarations of the assembly's functions, from the `// func`
// comment each kernel writes above its TEXT line.

package main

import (
	"bytes"
	"fmt"
	gofmt "go/format"
	"regexp"
	"slices"
	"strings"
)

var (
	funcLine = regexp.MustCompile(`(?m)^// func (\w+)(\(.*)$`)
	textLine = regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\)`)
)

// declarations writes name, a Go file of package tensor declaring every
// function the assembly files define, in their order, with the assembly's
// build constraint (asm_amd64.go: amd64 && !purego). A TEXT symbol without
// its `// func` comment, or a comment without its symbol, is an error: the
// declarations would not match what go vet checks against the assembly.
func declarations(name string, asm ...[]byte) ([]byte, error) {
	arch := strings.TrimSuffix(strings.TrimPrefix(name, "asm_"), ".go")
	var decls bytes.Buffer
	for _, a := range asm {
		var texts, funcs []string
		for _, m := range textLine.FindAllSubmatch(a, -1) {
			texts = append(texts, string(m[1]))
		}
		for _, m := range funcLine.FindAllSubmatch(a, -1) {
			funcs = append(funcs, string(m[1]))
			fmt.Fprintf(&decls, "\n//go:noescape\nfunc %s%s\n", m[1], m[2])
		}
		if !slices.Equal(texts, funcs) {
			return nil, fmt.Errorf("declare %s: TEXT symbols %v, // func comments %v", name, texts, funcs)
		}
	}
	var src bytes.Buffer
	fmt.Fprintf(&src, "%s\n\n//go:build %s && !purego\n\n// The declarations of the functions in the %s assembly.\n\npackage tensor\n", generated, arch, arch)
	if bytes.Contains(decls.Bytes(), []byte("unsafe.")) {
		src.WriteString("\nimport \"unsafe\"\n")
	}
	src.Write(decls.Bytes())
	out, err := gofmt.Source(src.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", name, err)
	}
	return out, nil
}
