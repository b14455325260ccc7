package jinja

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// arith applies + - * / // % ** with Python's rules. Integers are 64-bit
// here (Python's are unbounded): overflow is an error, not a wrong answer.
func (e *evaluator) arith(op string, l, r any) (any, error) {
	if u, ok := l.(Undefined); ok {
		return nil, u.err()
	}
	if u, ok := r.(Undefined); ok {
		return nil, u.err()
	}
	li, lf, lflt, lok := toNumber(l)
	ri, rf, rflt, rok := toNumber(r)
	if lok && rok {
		if lflt || rflt || op == "/" {
			return floatOp(op, lf, rf)
		}
		return intOp(op, li, ri)
	}
	switch op {
	case "+":
		return e.plus(l, r)
	case "*":
		if rok && !rflt {
			return e.repeat(l, ri)
		}
		if lok && !lflt {
			return e.repeat(r, li)
		}
	}
	return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

func (e *evaluator) plus(l, r any) (any, error) {
	switch x := l.(type) {
	case string:
		if y, ok := r.(string); ok {
			return x + y, e.checkSize(len(x) + len(y))
		}
		return nil, fmt.Errorf("can only concatenate str (not \"%s\") to str", typeName(r))
	case []any:
		if y, ok := r.([]any); ok {
			if err := e.checkSize(len(x) + len(y)); err != nil {
				return nil, err
			}
			return append(append(make([]any, 0, len(x)+len(y)), x...), y...), nil
		}
		return nil, fmt.Errorf("can only concatenate list (not \"%s\") to list", typeName(r))
	case tuple:
		if y, ok := r.(tuple); ok {
			if err := e.checkSize(len(x) + len(y)); err != nil {
				return nil, err
			}
			return tuple(append(append(make([]any, 0, len(x)+len(y)), x...), y...)), nil
		}
	}
	return nil, fmt.Errorf("unsupported operand type(s) for +: '%s' and '%s'", typeName(l), typeName(r))
}

func (e *evaluator) repeat(v any, n int64) (any, error) {
	n = max(n, 0)
	switch x := v.(type) {
	case string:
		if len(x) > 0 && n > int64(e.limits.MaxOutput/len(x)) {
			return nil, e.checkSize(e.limits.MaxOutput + 1)
		}
		return strings.Repeat(x, int(n)), e.checkSize(len(x) * int(n))
	case []any, tuple:
		items, _ := seq(x)
		if len(items) > 0 && n > int64(e.limits.MaxOutput/len(items)) {
			return nil, e.checkSize(e.limits.MaxOutput + 1)
		}
		if err := e.checkSize(len(items) * int(n)); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(items)*int(n))
		for range n {
			out = append(out, items...)
		}
		if _, ok := x.(tuple); ok {
			return tuple(out), nil
		}
		return out, nil
	}
	return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(v))
}

func floatOp(op string, a, b float64) (any, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, fmt.Errorf("float floor division by zero")
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, fmt.Errorf("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		return math.Pow(a, b), nil
	}
	return nil, fmt.Errorf("BUG: unknown operator %s", op)
}

var errOverflow = fmt.Errorf("integer overflow")

func intOp(op string, a, b int64) (any, error) {
	switch op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			return nil, errOverflow
		}
		return s, nil
	case "-":
		d := a - b
		if (d < a) != (b > 0) {
			return nil, errOverflow
		}
		return d, nil
	case "*":
		hi, lo := bits.Mul64(uint64(abs64(a)), uint64(abs64(b)))
		if hi != 0 || lo > math.MaxInt64 || a == math.MinInt64 || b == math.MinInt64 {
			return nil, errOverflow
		}
		if (a < 0) != (b < 0) {
			return -int64(lo), nil
		}
		return int64(lo), nil
	case "//", "%":
		if b == 0 {
			return nil, fmt.Errorf("integer division or modulo by zero")
		}
		if a == math.MinInt64 && b == -1 {
			return nil, errOverflow
		}
		q, m := a/b, a%b
		if m != 0 && (m < 0) != (b < 0) {
			q--
			m += b
		}
		if op == "//" {
			return q, nil
		}
		return m, nil
	case "**":
		if b < 0 {
			return math.Pow(float64(a), float64(b)), nil
		}
		switch {
		case a == 1 || b == 0:
			return int64(1), nil
		case a == 0:
			return int64(0), nil
		case a == -1 && b%2 == 0:
			return int64(1), nil
		case a == -1:
			return int64(-1), nil
		}
		// |a| >= 2 overflows within 63 multiplications.
		r := int64(1)
		for range b {
			v, err := intOp("*", r, a)
			if err != nil {
				return nil, err
			}
			r = v.(int64)
		}
		return r, nil
	}
	return nil, fmt.Errorf("BUG: unknown operator %s", op)
}

func abs64(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// call evaluates a call; caller, when set, is the body of a call block.
func (e *evaluator) call(x *callExpr, caller *callable) (any, error) {
	fn, err := e.eval(x.fn)
	if err != nil {
		return nil, err
	}
	args, err := e.evalAll(x.args)
	if err != nil {
		return nil, err
	}
	kw := NewDict()
	for i, name := range x.kwNames {
		v, err := e.eval(x.kwVals[i])
		if err != nil {
			return nil, err
		}
		kw.Set(name, v)
	}
	if caller != nil {
		kw.Set("caller", caller)
	}
	switch f := fn.(type) {
	case *callable:
		return f.fn(e, args, kw)
	case Undefined:
		return nil, f.err()
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(fn))
}

// macro makes the callable a {% macro %} defines. It sees the scopes that
// were live where it was defined, plus its own.
func (e *evaluator) macro(n *macroNode) *callable {
	defScopes := slices.Clip(e.scopes)
	return &callable{name: n.name, fn: func(e *evaluator, args []any, kw *Dict) (any, error) {
		if len(args) > len(n.params) {
			return nil, fmt.Errorf("macro '%s' takes not more than %d argument(s)", n.name, len(n.params))
		}
		e.depth++
		defer func() { e.depth-- }()
		if e.depth > e.limits.MaxDepth {
			return nil, fmt.Errorf("%w: macro calls nested deeper than %d", ErrLimit, e.limits.MaxDepth)
		}
		frame := map[string]any{}
		for i, p := range n.params {
			switch v, ok := kw.Get(p); {
			case i < len(args):
				frame[p] = args[i]
			case ok:
				frame[p] = v
			case n.defaults[i] != nil:
				d, err := e.eval(n.defaults[i])
				if err != nil {
					return nil, err
				}
				frame[p] = d
			default:
				frame[p] = Undefined{Name: p}
			}
		}
		if c, ok := kw.Get("caller"); ok {
			frame["caller"] = c
		}
		saved := e.scopes
		e.scopes = append(defScopes, frame)
		s, err := e.capture(n.body)
		e.scopes = saved
		return s, err
	}}
}

func (e *evaluator) callBlock(n *callBlockNode) error {
	scopes := slices.Clip(e.scopes)
	caller := &callable{name: "caller", fn: func(e *evaluator, _ []any, _ *Dict) (any, error) {
		saved := e.scopes
		e.scopes = append(scopes, map[string]any{})
		s, err := e.capture(n.body)
		e.scopes = saved
		return s, err
	}}
	v, err := e.call(n.call, caller)
	if err != nil {
		return err
	}
	return e.errAt(n.pos, e.print(v))
}

func (e *evaluator) filterBlock(n *filterBlockNode) error {
	s, err := e.capture(n.body)
	if err != nil {
		return err
	}
	var v any = s
	for _, f := range n.filters {
		if v, err = e.applyFilter(f, v); err != nil {
			return e.errAt(f.pos, err)
		}
	}
	return e.errAt(n.pos, e.print(v))
}

// builtinGlobals are Jinja's globals that chat templates use, plus the two
// transformers adds (raise_exception, strftime_now).
func (e *evaluator) builtinGlobals() map[string]any {
	return map[string]any{
		"range":           &callable{name: "range", fn: builtinRange},
		"dict":            &callable{name: "dict", fn: func(_ *evaluator, args []any, kw *Dict) (any, error) { return builtinDict(args, kw) }},
		"namespace":       &callable{name: "namespace", fn: builtinNamespace},
		"raise_exception": &callable{name: "raise_exception", fn: builtinRaise},
		"strftime_now": &callable{name: "strftime_now", fn: func(e *evaluator, args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("strftime_now takes one format argument")
			}
			f, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("strftime_now format must be a string")
			}
			return strftime(e.now(), f), nil
		}},
	}
}

func builtinRange(e *evaluator, args []any, _ *Dict) (any, error) {
	if len(args) < 1 || len(args) > 3 {
		return nil, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	var n [3]int64
	n[2] = 1
	for i, a := range args {
		v, _, isFloat, ok := toNumber(a)
		if !ok || isFloat {
			return nil, fmt.Errorf("range: '%s' object cannot be interpreted as an integer", typeName(a))
		}
		n[i] = v
	}
	start, stop, step := n[0], n[1], n[2]
	if len(args) == 1 {
		start, stop = 0, n[0]
	}
	if step == 0 {
		return nil, fmt.Errorf("range() arg 3 must not be zero")
	}
	var count int64
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		count = (start - stop - step - 1) / -step
	}
	if count > int64(e.limits.MaxOutput) {
		return nil, e.checkSize(e.limits.MaxOutput + 1)
	}
	if err := e.checkSize(int(count)); err != nil {
		return nil, err
	}
	out := make([]any, count)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out, nil
}

func builtinDict(args []any, kw *Dict) (any, error) {
	d := NewDict()
	if len(args) > 1 {
		return nil, fmt.Errorf("dict expected at most 1 argument, got %d", len(args))
	}
	if len(args) == 1 {
		src, ok := args[0].(*Dict)
		if !ok {
			return nil, fmt.Errorf("dict: cannot convert %s", typeName(args[0]))
		}
		for _, k := range src.keys {
			d.Set(k, src.m[k])
		}
	}
	for _, k := range kw.keys {
		d.Set(k, kw.m[k])
	}
	return d, nil
}

func builtinNamespace(_ *evaluator, args []any, kw *Dict) (any, error) {
	d, err := builtinDict(args, kw)
	if err != nil {
		return nil, err
	}
	return &namespace{d: d.(*Dict)}, nil
}

func builtinRaise(_ *evaluator, args []any, _ *Dict) (any, error) {
	msg := ""
	if len(args) > 0 {
		msg, _ = pyStr(args[0], 1<<16)
	}
	return nil, &ExceptionError{Msg: msg}
}

// strftime formats t with the C/Python directives chat templates use
// (Llama 3.1's "%d %b %Y"); an unknown directive is kept as written.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
