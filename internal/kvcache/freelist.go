package kvcache

// freeList is an intrusive doubly linked list of block ids in LRU order:
// blocks are freed to the back and allocated from the front, and a cached
// block that is hit again is unlinked from the middle in O(1).
type freeList struct {
	head, tail int32
	n          int
}

func (l *freeList) init([]block) { l.head, l.tail, l.n = -1, -1, 0 }

func (l *freeList) pushBack(bs []block, id int32) {
	b := &bs[id]
	if b.inFree {
		panic("BUG: kvcache: block freed twice")
	}
	b.inFree, b.prev, b.next = true, l.tail, -1
	if l.tail >= 0 {
		bs[l.tail].next = id
	} else {
		l.head = id
	}
	l.tail = id
	l.n++
}

func (l *freeList) remove(bs []block, id int32) {
	b := &bs[id]
	if !b.inFree {
		panic("BUG: kvcache: removing a block that is not free")
	}
	if b.prev >= 0 {
		bs[b.prev].next = b.next
	} else {
		l.head = b.next
	}
	if b.next >= 0 {
		bs[b.next].prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.inFree, b.prev, b.next = false, -1, -1
	l.n--
}

func (l *freeList) popFront(bs []block) int32 {
	id := l.head
	if id < 0 {
		panic("BUG: kvcache: allocating from an empty free list")
	}
	l.remove(bs, id)
	return id
}
