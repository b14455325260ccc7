package main

import (
	"slices"
	"strings"
)

// listFlag collects every value a repeated flag is given (vLLM's
// nargs="+" flags; spaceLists splits the space-separated form).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// spaceLists rewrites "--name a b --next" as "--name=a --name=b --next"
// for the flags vLLM takes as space-separated lists.
func spaceLists(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if !strings.HasPrefix(a, "-") || !slices.Contains(names, name) {
			out = append(out, a)
			continue
		}
		n := 0
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			n++
			out = append(out, "--"+name+"="+args[i])
		}
		if n == 0 {
			out = append(out, a) // the flag package reports the missing value
		}
	}
	return out
}
