package blackbox

import (
	"cmp"
	"math"
	"math/big"
	"strconv"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// arenaBlock is the size of one block of an arena; a text longer than a
// quarter of it gets an allocation of its own.
const arenaBlock = 1 << 20

// arena keeps the texts and bytes the model keeps (event ids, aggregates,
// the values of rebuilt rows) in large blocks, append-only: a million
// events are a few hundred blocks for the garbage collector to find,
// not millions of small objects to mark one by one. A block is never
// written again where it was handed out, so the strings it backs are
// immutable, as Go strings must be.
type arena struct {
	block []byte // the current block: len is what is handed out
}

// alloc returns n fresh bytes to fill, capped so that an append to them
// never writes into what the arena hands out next.
func (a *arena) alloc(n int) []byte {
	switch {
	case n == 0:
		return []byte{} // empty, not nil
	case n > arenaBlock/4:
		return make([]byte, n)
	}
	if len(a.block)+n > cap(a.block) {
		a.block = make([]byte, 0, arenaBlock)
	}
	start := len(a.block)
	a.block = a.block[:start+n]
	return a.block[start : start+n : start+n]
}

// str returns a copy of s kept in the arena (own, model.go: never the
// binlog event's buffer).
func (a *arena) str(s string) string {
	if s == "" {
		return ""
	}
	b := a.alloc(len(s))
	copy(b, s)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// num is an exact number as the model keeps it (a cursor's value, a
// row's position): an int64 when it is one, which is the common case and
// takes no allocation, else a *big.Rat. set is false for no number (a
// NULL, a text that is not one).
type num struct {
	i   int64
	r   *big.Rat // nil: the value is i
	set bool
}

// toNum reads v as profile.Number does, without its allocations for an
// integer column.
func toNum(v any) num {
	switch x := v.(type) {
	case int64:
		return num{i: x, set: true}
	case uint64:
		if x <= math.MaxInt64 {
			return num{i: int64(x), set: true}
		}
	}
	r := profile.Number(v)
	if r == nil {
		return num{}
	}
	if r.IsInt() && r.Num().IsInt64() {
		return num{i: r.Num().Int64(), set: true}
	}
	return num{r: r, set: true}
}

// cmp compares two set numbers by value.
func (a num) cmp(b num) int {
	if a.r == nil && b.r == nil {
		return cmp.Compare(a.i, b.i)
	}
	return a.rat().Cmp(b.rat())
}

func (a num) rat() *big.Rat {
	if a.r != nil {
		return a.r
	}
	return new(big.Rat).SetInt64(a.i)
}

// String is the number as big.Rat's RatString writes it.
func (a num) String() string {
	if a.r == nil {
		return strconv.FormatInt(a.i, 10)
	}
	return a.r.RatString()
}
