package jinja

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits bound the work one Render may do, so a hostile template cannot
// hang the server or exhaust its memory. Zero fields take the defaults.
type Limits struct {
	// MaxSteps bounds evaluation steps: every node and expression costs
	// one, every loop iteration one, and building a string, list or JSON
	// text costs its length.
	MaxSteps int
	// MaxDepth bounds macro call nesting.
	MaxDepth int
	// MaxOutput bounds the rendered text, and any one string or list
	// built along the way, in bytes (elements for lists).
	MaxOutput int
}

// Defaults: far above what a chat template over a long conversation needs
// (a few hundred steps per message), far below what would hurt.
const (
	defaultMaxSteps  = 10_000_000
	defaultMaxDepth  = 64
	defaultMaxOutput = 32 << 20
)

// Options are Render's knobs beyond the variables.
type Options struct {
	Limits Limits
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
}

// RuntimeError is an error raised while rendering, with where in the
// template it happened.
type RuntimeError struct {
	Line, Col int
	Err       error
}

func (e *RuntimeError) Error() string {
	return fmt.Sprintf("template error at line %d, column %d: %v", e.Line, e.Col, e.Err)
}

func (e *RuntimeError) Unwrap() error { return e.Err }

// ExceptionError is what raise_exception(msg) raises: the template
// refusing its input (roles that do not alternate, say), which is the
// client's mistake rather than the template's.
type ExceptionError struct{ Msg string }

func (e *ExceptionError) Error() string { return e.Msg }

// ErrLimit is wrapped by every error that comes from exceeding Limits.
var ErrLimit = errors.New("template exceeds its evaluation limits")

var (
	errBreak    = errors.New("break outside a loop")
	errContinue = errors.New("continue outside a loop")
)

type evaluator struct {
	src     string
	scopes  []map[string]any // innermost last
	globals map[string]any
	out     *strings.Builder
	limits  Limits
	steps   int
	depth   int
	now     func() time.Time
}

// Render renders the template with the default options.
func (t *Template) Render(vars map[string]any) (string, error) {
	return t.RenderOptions(vars, Options{})
}

// errPanic marks a panic inside the evaluator, turned into an error so
// that one bad template cannot take the server down; it is always a bug
// here, and the fuzz target fails on it.
var errPanic = errors.New("BUG: template evaluator panicked")

// RenderOptions renders the template with vars as its top-level names.
func (t *Template) RenderOptions(vars map[string]any, opts Options) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("render template: %w: %v", errPanic, r)
		}
	}()
	lim := opts.Limits
	if lim.MaxSteps <= 0 {
		lim.MaxSteps = defaultMaxSteps
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = defaultMaxDepth
	}
	if lim.MaxOutput <= 0 {
		lim.MaxOutput = defaultMaxOutput
	}
	e := &evaluator{src: t.src, out: &strings.Builder{}, limits: lim, now: opts.Now}
	if e.now == nil {
		e.now = time.Now
	}
	e.globals = e.builtinGlobals()
	top := make(map[string]any, len(vars))
	for k, v := range vars {
		c, err := fromGo(v, 0)
		if err != nil {
			return "", fmt.Errorf("render template: variable %s: %w", k, err)
		}
		top[k] = c
	}
	e.scopes = []map[string]any{top}
	if err := e.nodes(t.body); err != nil {
		return "", fmt.Errorf("render template: %w", err)
	}
	return e.out.String(), nil
}

func (e *evaluator) errAt(pos int, err error) error {
	if err == nil {
		return nil
	}
	var re *RuntimeError
	if errors.As(err, &re) || errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return err
	}
	l, c := position(e.src, pos)
	return &RuntimeError{Line: l, Col: c, Err: err}
}

// charge spends n steps of the budget.
func (e *evaluator) charge(n int) error {
	e.steps += n
	if e.steps > e.limits.MaxSteps {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, e.limits.MaxSteps)
	}
	return nil
}

// checkSize charges for building a value of n bytes or elements and
// refuses one larger than MaxOutput.
func (e *evaluator) checkSize(n int) error {
	if n > e.limits.MaxOutput {
		return fmt.Errorf("%w: a value of %d bytes or items (limit %d)", ErrLimit, n, e.limits.MaxOutput)
	}
	return e.charge(n)
}

func (e *evaluator) write(s string) error {
	if e.out.Len()+len(s) > e.limits.MaxOutput {
		return fmt.Errorf("%w: output longer than %d bytes", ErrLimit, e.limits.MaxOutput)
	}
	e.out.WriteString(s)
	return nil
}

func (e *evaluator) print(v any) error {
	s, err := e.str(v)
	if err != nil {
		return err
	}
	return e.write(s)
}

func (e *evaluator) lookup(name string) any {
	for i := len(e.scopes) - 1; i >= 0; i-- {
		if v, ok := e.scopes[i][name]; ok {
			return v
		}
	}
	if v, ok := e.globals[name]; ok {
		return v
	}
	return Undefined{Name: name}
}

func (e *evaluator) assign(name string, v any) { e.scopes[len(e.scopes)-1][name] = v }

func (e *evaluator) nodes(ns []node) error {
	for _, n := range ns {
		if err := e.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (e *evaluator) node(n node) error {
	if err := e.charge(1); err != nil {
		return e.errAt(n.offset(), err)
	}
	switch n := n.(type) {
	case *textNode:
		return e.errAt(n.pos, e.write(n.text))
	case *outputNode:
		v, err := e.eval(n.e)
		if err != nil {
			return err
		}
		return e.errAt(n.pos, e.print(v))
	case *ifNode:
		for i, c := range n.conds {
			v, err := e.eval(c)
			if err != nil {
				return err
			}
			if truthy(v) {
				return e.nodes(n.bodies[i])
			}
		}
		return e.nodes(n.els)
	case *forNode:
		return e.forLoop(n)
	case *setNode:
		return e.set(n)
	case *macroNode:
		e.assign(n.name, e.macro(n))
		return nil
	case *callBlockNode:
		return e.callBlock(n)
	case *filterBlockNode:
		return e.filterBlock(n)
	case *loopControlNode:
		if n.brk {
			return errBreak
		}
		return errContinue
	}
	return fmt.Errorf("BUG: unknown node %T", n)
}

// capture renders body into a string instead of the output.
func (e *evaluator) capture(body []node) (string, error) {
	saved := e.out
	e.out = &strings.Builder{}
	err := e.nodes(body)
	s := e.out.String()
	e.out = saved
	return s, err
}

func (e *evaluator) set(n *setNode) error {
	var v any
	var err error
	if n.block {
		v, err = e.capture(n.body)
	} else {
		v, err = e.eval(n.value)
	}
	if err != nil {
		return err
	}
	if n.attr != "" {
		ns, ok := e.lookup(n.names[0]).(*namespace)
		if !ok {
			return e.errAt(n.pos, fmt.Errorf("cannot assign attribute on non-namespace object %s", n.names[0]))
		}
		ns.d.Set(n.attr, v)
		return nil
	}
	if len(n.names) == 1 {
		e.assign(n.names[0], v)
		return nil
	}
	items, err := unpack(v, len(n.names))
	if err != nil {
		return e.errAt(n.pos, err)
	}
	for i, name := range n.names {
		e.assign(name, items[i])
	}
	return nil
}

func unpack(v any, n int) ([]any, error) {
	items, ok := seq(v)
	if !ok {
		if s, isStr := v.(string); isStr {
			for _, r := range s {
				items = append(items, string(r))
			}
		} else {
			return nil, fmt.Errorf("cannot unpack non-sequence %s", typeName(v))
		}
	}
	if len(items) != n {
		return nil, fmt.Errorf("expected %d values to unpack, got %d", n, len(items))
	}
	return items, nil
}

// iterate lists what a for loop walks: list items, string characters,
// dict keys; nothing for undefined.
func iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case tuple:
		return x, nil
	case string:
		out := make([]any, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case *Dict:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case Undefined:
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// loopInfo is the loop variable inside a for body.
type loopInfo struct {
	index0, length int
	items          []any
}

func (e *evaluator) forLoop(n *forNode) error {
	v, err := e.eval(n.iter)
	if err != nil {
		return err
	}
	items, err := iterate(v)
	if err != nil {
		return e.errAt(n.iter.offset(), err)
	}
	items = slices.Clone(items) // the body may not change what it walks
	if n.filter != nil {
		if items, err = e.filterLoop(n, items); err != nil {
			return err
		}
	}
	if len(items) == 0 {
		return e.nodes(n.els)
	}
	for i, it := range items {
		if err := e.charge(1); err != nil {
			return e.errAt(n.pos, err)
		}
		frame := map[string]any{"loop": &loopInfo{index0: i, length: len(items), items: items}}
		e.scopes = append(e.scopes, frame)
		err := e.bindTargets(n, it)
		if err == nil {
			err = e.nodes(n.body)
		}
		e.scopes = e.scopes[:len(e.scopes)-1]
		switch {
		case errors.Is(err, errBreak):
			return nil
		case errors.Is(err, errContinue):
			continue
		case err != nil:
			return err
		}
	}
	return nil
}

func (e *evaluator) bindTargets(n *forNode, it any) error {
	if len(n.targets) == 1 {
		e.assign(n.targets[0], it)
		return nil
	}
	vals, err := unpack(it, len(n.targets))
	if err != nil {
		return e.errAt(n.pos, err)
	}
	for i, name := range n.targets {
		e.assign(name, vals[i])
	}
	return nil
}

// filterLoop applies "for x in xs if cond" before the loop, so loop.index
// and loop.length count only the items that pass, as in Jinja.
func (e *evaluator) filterLoop(n *forNode, items []any) ([]any, error) {
	var kept []any
	for _, it := range items {
		if err := e.charge(1); err != nil {
			return nil, e.errAt(n.pos, err)
		}
		e.scopes = append(e.scopes, map[string]any{})
		err := e.bindTargets(n, it)
		var v any
		if err == nil {
			v, err = e.eval(n.filter)
		}
		e.scopes = e.scopes[:len(e.scopes)-1]
		if err != nil {
			return nil, err
		}
		if truthy(v) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

func (l *loopInfo) attr(name string) any {
	n := l.length
	switch name {
	case "index":
		return int64(l.index0 + 1)
	case "index0":
		return int64(l.index0)
	case "revindex":
		return int64(n - l.index0)
	case "revindex0":
		return int64(n - l.index0 - 1)
	case "first":
		return l.index0 == 0
	case "last":
		return l.index0 == n-1
	case "length":
		return int64(n)
	case "depth":
		return int64(1)
	case "depth0":
		return int64(0)
	case "previtem":
		if l.index0 > 0 {
			return l.items[l.index0-1]
		}
		return Undefined{Name: "previtem"}
	case "nextitem":
		if l.index0 < n-1 {
			return l.items[l.index0+1]
		}
		return Undefined{Name: "nextitem"}
	case "cycle":
		return &callable{name: "loop.cycle", fn: func(_ *evaluator, args []any, _ *Dict) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("no items for cycling given")
			}
			return args[l.index0%len(args)], nil
		}}
	}
	return Undefined{Name: name}
}

// str is Python's str(v) within the output limit, charged by its length.
func (e *evaluator) str(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	s, ok := pyStr(v, e.limits.MaxOutput)
	if !ok {
		return "", fmt.Errorf("%w: value too large or too deeply nested to print", ErrLimit)
	}
	return s, e.charge(len(s))
}

// withBudget lends the rest of the step budget to f, for comparisons that
// walk values.
func (e *evaluator) withBudget(f func(budget *int) error) error {
	budget := e.limits.MaxSteps - e.steps
	err := f(&budget)
	e.steps = e.limits.MaxSteps - budget
	if budget < 0 {
		return fmt.Errorf("%w: more than %d steps", ErrLimit, e.limits.MaxSteps)
	}
	return err
}

func (e *evaluator) equal(a, b any) (bool, error) {
	var eq bool
	err := e.withBudget(func(budget *int) error {
		eq = pyEqual(a, b, budget)
		return nil
	})
	return eq, err
}

func (e *evaluator) order(a, b any) (int, error) {
	var c int
	err := e.withBudget(func(budget *int) (err error) {
		c, err = pyCompare(a, b, budget)
		return err
	})
	return c, err
}
