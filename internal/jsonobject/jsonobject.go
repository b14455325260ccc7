// Package jsonobject is a JSON object whose keys keep the order they were
// written in: the result files of bench (vLLM's --save-result) and of
// inference-perf's reports list their keys in their tools' order, and a Go
// map or struct cannot say that once for both. It imports nothing of
// glassbox's.
package jsonobject

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Field is one key and its value.
//
// It is an alias of an unnamed struct, not a named type, so that the
// packages writing reports can spell a field {"key", value} without keys:
// go vet's composites check flags unkeyed literals of another package's
// named struct types, and an unnamed struct is nobody's.
type Field = struct {
	Key   string
	Value any
}

// Object marshals its fields in order, as {"key":value,...}; an empty or
// nil Object is {}. A key written twice is written twice: the caller's
// order is the file's.
type Object []Field

// MarshalJSON writes the fields in order; a value that does not marshal
// is an error naming its key.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key) // a string always marshals
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", f.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
