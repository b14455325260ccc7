package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fromGo converts a caller's value into the evaluator's. Go maps have no
// order, so their keys are sorted; callers that care about key order pass
// a *Dict (FromJSON makes one).
func fromGo(v any, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("value nested deeper than %d", maxNesting)
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string, Undefined, *Dict, *namespace, *callable:
		return v, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		return x.Float64()
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			c, err := fromGo(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := NewDict()
		for _, k := range keys {
			c, err := fromGo(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			d.Set(k, c)
		}
		return d, nil
	}
	return fromReflect(reflect.ValueOf(v), depth)
}

// fromReflect handles the remaining integer kinds and typed slices and maps.
func fromReflect(rv reflect.Value, depth int) (any, error) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d out of range", u)
		}
		return int64(u), nil
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			c, err := fromGo(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return fromGo(m, depth)
	}
	return nil, fmt.Errorf("unsupported value of type %s", rv.Type())
}

// FromJSON decodes JSON into template values, keeping object key order
// (a tool's parameters render in the order the client sent them).
func FromJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decode json: trailing data")
	}
	return v, nil
}

func decodeJSON(dec *json.Decoder, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("nested deeper than %d", maxNesting)
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		if x == '[' {
			out := []any{}
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		d := NewDict()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeJSON(dec, depth+1)
			if err != nil {
				return nil, err
			}
			d.Set(k.(string), v)
		}
		_, err := dec.Token()
		return d, err
	case json.Number:
		return fromGo(x, depth)
	}
	return t, nil
}

// jsonOpts are tojson's keyword arguments, as transformers defines the
// filter: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys).
type jsonOpts struct {
	indent      string // "" with hasIndent false: one line
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
	maxLen      int
}

func newJSONOpts() jsonOpts { return jsonOpts{itemSep: ", ", keySep: ": "} }

func (o jsonOpts) write(b *strings.Builder, v any, level int, budget *int) error {
	*budget--
	if *budget < 0 || b.Len() > o.maxLen {
		return fmt.Errorf("tojson: %w: value too large", ErrLimit)
	}
	if level > maxNesting {
		return fmt.Errorf("tojson: nested deeper than %d", maxNesting)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pyFloat(x))
		}
	case string:
		if b.Len()+len(x) > o.maxLen {
			return fmt.Errorf("tojson: %w: value too large", ErrLimit)
		}
		o.writeString(b, x)
	case []any, tuple:
		items, _ := seq(x)
		return o.writeList(b, items, level, budget)
	case *Dict:
		return o.writeDict(b, x, level, budget)
	case *namespace:
		return o.writeDict(b, x.d, level, budget)
	case Undefined:
		return fmt.Errorf("tojson: %w", x.err())
	default:
		return fmt.Errorf("tojson: object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func (o jsonOpts) newline(b *strings.Builder, level int) {
	if o.hasIndent {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(o.indent, level))
	}
}

func (o jsonOpts) writeList(b *strings.Builder, items []any, level int, budget *int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, level+1)
		if err := o.write(b, it, level+1, budget); err != nil {
			return err
		}
	}
	o.newline(b, level)
	b.WriteByte(']')
	return nil
}

func (o jsonOpts) writeDict(b *strings.Builder, d *Dict, level int, budget *int) error {
	if d.Len() == 0 {
		b.WriteString("{}")
		return nil
	}
	keys := d.keys
	if o.sortKeys {
		keys = d.Keys()
		sort.Strings(keys)
	}
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, level+1)
		o.writeString(b, k)
		b.WriteString(o.keySep)
		if err := o.write(b, d.m[k], level+1, budget); err != nil {
			return err
		}
	}
	o.newline(b, level)
	b.WriteByte('}')
	return nil
}

// writeString escapes as Python's json module: control characters,
// quote and backslash; everything else stays as it is unless ensure_ascii.
func (o jsonOpts) writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case o.ensureASCII && r > 0x7e:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// runeLen is Python's len() of a str.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
