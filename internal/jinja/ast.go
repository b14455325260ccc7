package jinja

// The syntax tree. Every node keeps the byte offset it came from so that
// run-time errors can say where they happened.

type node interface{ offset() int }

type expr interface{ offset() int }

type at struct{ pos int }

func (a at) offset() int { return a.pos }

// Statements.

type textNode struct {
	at
	text string
}

type outputNode struct {
	at
	e expr
}

type ifNode struct {
	at
	conds  []expr   // if and each elif
	bodies [][]node // one per cond
	els    []node
}

type forNode struct {
	at
	targets []string // one name, or several to unpack each item
	iter    expr
	filter  expr // "for x in xs if cond"; nil when absent
	body    []node
	els     []node
}

// setNode assigns to a name, to names unpacked from a sequence, or to an
// attribute of a namespace ("set ns.x = …"). A block set has body instead
// of value.
type setNode struct {
	at
	names []string
	attr  string // when set, names[0] is the namespace
	value expr
	block bool
	body  []node
}

type macroNode struct {
	at
	name     string
	params   []string
	defaults []expr // aligned with params; nil where there is none
	body     []node
}

// callBlockNode is {% call macro(args) %}body{% endcall %}: the body is
// passed to the macro as caller().
type callBlockNode struct {
	at
	call *callExpr
	body []node
}

type filterBlockNode struct {
	at
	filters []*filterExpr // applied in order, obj left nil
	body    []node
}

type loopControlNode struct {
	at
	brk bool
}

// Expressions.

type literal struct {
	at
	v any
}

type nameExpr struct {
	at
	name string
}

type listExpr struct {
	at
	items []expr
	tuple bool
}

type dictExpr struct {
	at
	keys, vals []expr
}

type attrExpr struct {
	at
	obj  expr
	name string
}

type itemExpr struct {
	at
	obj, key expr
}

type sliceExpr struct {
	at
	obj               expr
	start, stop, step expr // nil where omitted
}

type callExpr struct {
	at
	fn      expr
	args    []expr
	kwNames []string
	kwVals  []expr
}

type filterExpr struct {
	at
	obj     expr
	name    string
	args    []expr
	kwNames []string
	kwVals  []expr
}

type testExpr struct {
	at
	obj    expr
	name   string
	args   []expr
	negate bool
}

type unaryExpr struct {
	at
	op string // "-", "+", "not"
	x  expr
}

type binaryExpr struct {
	at
	op   string // + - * / // % ** ~ and or
	l, r expr
}

// compareExpr is a chain such as a < b <= c, true when every link holds.
type compareExpr struct {
	at
	first expr
	ops   []string // == != < > <= >= in notin
	rest  []expr
}

type condExpr struct {
	at
	then, cond, els expr // els nil: undefined when cond is false
}
