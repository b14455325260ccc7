package inferenceperf

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// keyChecker walks a configuration's YAML against the Go types that read
// it, before they do: a key no type knows is an error naming its path and
// line (yaml's own KnownFields names a Go type and skips what custom
// unmarshalers decode), and every key's line is kept for the checks that
// follow.
type keyChecker struct {
	lines  map[string]int // "load.stages[0].rate" → line
	visits int            // nodes walked, bounded: aliases could make it exponential
}

func (k *keyChecker) walk(n *yaml.Node, t reflect.Type, path string) error {
	if k.visits++; k.visits > 1_000_000 {
		return &keyError{line: n.Line, path: path, msg: "the document is too large (or aliases repeat too much of it)"}
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return k.walk(n.Content[0], t, path)
	}
	if path != "" {
		k.lines[path] = n.Line
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if t == reflect.TypeFor[Length]() {
		if n.Kind == yaml.MappingNode {
			return k.walk(n, reflect.TypeFor[Distribution](), path)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder reports the type
		}
		known := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			f, ok := known[key]
			if !ok {
				names := make([]string, 0, len(known))
				for name := range known {
					names = append(names, name)
				}
				slices.Sort(names)
				where := "the top level"
				if path != "" {
					where = path
				}
				return &keyError{line: n.Content[i].Line, path: join(path, key),
					msg: fmt.Sprintf("unknown key (inference-perf's %s has %s)", where, strings.Join(names, ", "))}
			}
			if err := k.walk(val, f.Type, join(path, key)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, e := range n.Content {
			if err := k.walk(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := k.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps a struct's YAML keys to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		out[tag] = f
	}
	return out
}

// keyError is a configuration error at a key.
type keyError struct {
	line int
	path string
	msg  string
}

func (e *keyError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.line, e.path, e.msg)
	}
	return e.path + ": " + e.msg
}

// at makes an error about the key at path, with its line when known.
func (c *Config) at(path, format string, args ...any) error {
	return &keyError{line: c.lines[path], path: path, msg: fmt.Sprintf(format, args...)}
}
