package grammar

// The matcher's state is a set of threads, each a path through the rules:
// the frame it is at, and the stack of frames to return to. A grammar made
// of deterministic rules mostly keeps one thread; alternatives that start
// alike (anyOf branches, a rule called where bytes could also come) keep
// several until the bytes tell them apart.

// thread is one path: the current frame and the interned stack below it.
type thread struct {
	top  int32
	rest int32 // a stack id of the machine's arena
}

// Stack ids with a meaning of their own.
const (
	emptyStack int32 = 0 // nothing below: the root's end is the output's end
	baseStack  int32 = 1 // an unknown caller, below a mask's precomputation
)

// snode is one interned stack: a frame on top of another stack.
type snode struct{ frame, parent int32 }

// machine steps threads through a grammar's frames. It interns stacks so
// that equal paths compare equal; it is not safe for concurrent use.
type machine struct {
	g     *Grammar
	nodes []snode
	index map[snode]int32
	work  []thread
	moved []thread
}

func newMachine(g *Grammar) *machine {
	m := &machine{g: g, index: map[snode]int32{}}
	m.nodes = append(m.nodes, snode{-1, -1}, snode{-1, -1})
	return m
}

func (m *machine) push(parent, frame int32) int32 {
	key := snode{frame, parent}
	if id, ok := m.index[key]; ok {
		return id
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, key)
	m.index[key] = id
	return id
}

// closure expands in into dst: calls are entered and ended rules return,
// until every thread is at a frame that reads a byte. It reports whether a
// thread ended the output (popped the empty stack) and whether one ended
// the unknown caller's rule (popped baseStack).
func (m *machine) closure(in, dst []thread) (out []thread, accept, escaped bool) {
	frames := m.g.frames
	work := append(m.work[:0], in...)
	for i := 0; i < len(work); i++ {
		t := work[i]
		f := &frames[t.top]
		if len(f.bytes) > 0 {
			dst = append(dst, t)
		}
		for _, c := range f.calls {
			work = addThread(work, thread{c.start, m.push(t.rest, c.ret)})
		}
		if f.final {
			switch t.rest {
			case emptyStack:
				accept = true
			case baseStack:
				escaped = true
			default:
				n := m.nodes[t.rest]
				work = addThread(work, thread{n.frame, n.parent})
			}
		}
	}
	m.work = work
	return dst, accept, escaped
}

func addThread(ts []thread, t thread) []thread {
	for _, u := range ts {
		if u == t {
			return ts
		}
	}
	return append(ts, t)
}

// step moves the threads of in over byte b, then expands them, into dst.
func (m *machine) step(in []thread, b byte, dst []thread) (out []thread, accept, escaped bool) {
	frames := m.g.frames
	if len(in) == 1 {
		// One thread on a frame that neither calls nor ends: the common
		// case (inside a string, a number, a keyword) needs no closure.
		t := in[0]
		to := frames[t.top].next(b)
		if to < 0 {
			return dst, false, false
		}
		if f := &frames[to]; len(f.calls) == 0 && !f.final {
			return append(dst, thread{to, t.rest}), false, false
		}
		m.work = append(m.work[:0], thread{to, t.rest})
		next := m.work
		return m.closure(next[:1:1], dst)
	}
	moved := m.moved[:0]
	for _, t := range in {
		if to := frames[t.top].next(b); to >= 0 {
			moved = addThread(moved, thread{to, t.rest})
		}
	}
	m.moved = moved
	if len(moved) == 0 {
		return dst, false, false
	}
	return m.closure(moved, dst)
}

// compact rebuilds the arena with only the stacks under ts, which it
// rewrites: the walks behind masks intern stacks that no thread keeps.
func (m *machine) compact(ts []thread) {
	old := m.nodes
	m.nodes = append(make([]snode, 0, 64), snode{-1, -1}, snode{-1, -1})
	m.index = map[snode]int32{}
	moved := map[int32]int32{emptyStack: emptyStack, baseStack: baseStack}
	var copyStack func(id int32) int32
	copyStack = func(id int32) int32 {
		if to, ok := moved[id]; ok {
			return to
		}
		n := old[id]
		to := m.push(copyStack(n.parent), n.frame)
		moved[id] = to
		return to
	}
	for i := range ts {
		ts[i].rest = copyStack(ts[i].rest)
	}
}
