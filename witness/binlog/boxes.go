package binlog

import "unsafe"

// boxes hands out the fast path's values (fastrows.go) as Values without
// an allocation each. A string or an integer put in an interface is
// copied to memory of its own, 16 or 8 bytes, one allocation a value: at
// a million events, over ten million of them, and the collector's work
// on each (a quarter of the fast path's time). Here the values are
// written into blocks of boxChunk and each Value points at its place in
// a block, as the runtime's own boxing points at its copy: a Value of
// string or int64 is its type and a pointer to the value.
//
// What makes this sound: a block's entries are written once, before
// their Value is made, and never again (a full block is left to the
// collector, which frees it when no Value points into it); the runtime
// reads a boxed value through the pointer and never writes through it,
// as it may not (an interface holds an immutable copy). The layout is
// the runtime's (type, data) pair for an interface with no methods,
// which encoding/json's and go-json's fast paths rely on too; TestBoxes
// holds every Value boxes makes to the one Go makes: equal, of the same
// dynamic type, through reflect, fmt and a type switch.
//
// A block spans the values of a few rows: a Value kept by a reader keeps
// its block, a few kilobytes, alive, and the strings in it, which point
// into their rows event's bytes (one event's values already keep it).
type boxes struct {
	strs  []string
	ints  []int64
	uints []uint64
}

// boxChunk is the values of a block.
const boxChunk = 128

// eface is an interface value with no methods, as the runtime lays it
// out: its dynamic type and a pointer to its value.
type eface struct{ typ, data unsafe.Pointer }

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType = typeOf("")
	int64Type  = typeOf(int64(0))
	uint64Type = typeOf(uint64(0))
)

// pack makes the Value of type typ whose value is at data.
func pack(typ, data unsafe.Pointer) (v Value) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, data
	return v
}

func (b *boxes) str(s string) Value {
	if len(b.strs) == cap(b.strs) {
		b.strs = make([]string, 0, boxChunk)
	}
	b.strs = append(b.strs, s)
	return pack(stringType, unsafe.Pointer(&b.strs[len(b.strs)-1]))
}

func (b *boxes) int(n int64) Value {
	if n >= 0 && n < 256 {
		return n // the runtime boxes these without an allocation
	}
	if len(b.ints) == cap(b.ints) {
		b.ints = make([]int64, 0, boxChunk)
	}
	b.ints = append(b.ints, n)
	return pack(int64Type, unsafe.Pointer(&b.ints[len(b.ints)-1]))
}

func (b *boxes) uint(n uint64) Value {
	if n < 256 {
		return n
	}
	if len(b.uints) == cap(b.uints) {
		b.uints = make([]uint64, 0, boxChunk)
	}
	b.uints = append(b.uints, n)
	return pack(uint64Type, unsafe.Pointer(&b.uints[len(b.uints)-1]))
}
