package blackbox

import (
	"cmp"
	"math/bits"
	"slices"
)

// Sorting a million entries by a hash, in linear time: the order rule's
// events by aggregate (delivery.go). The hashes are uniform, so their
// top bits spread the entries over as many buckets as there are entries,
// about one each: counting them places each entry in its bucket, and
// each bucket is then sorted alone. A sort of the whole by comparisons
// took 0.15 s at a million entries; this, 0.08 s.

// hashedRow is an entry by its hash: an event of the order rule (the
// hash of its aggregate, and the event) or a row of the anti-join's
// index (the hash of its join key, and the row; invariants.go).
type hashedRow struct {
	h uint64
	k int32
}

// hashShift takes the hash of one of n entries to its bucket (h >>
// hashShift(n)): as many buckets as the next power of two above n, so
// that uniform hashes put about one entry in each.
func hashShift(n int) uint { return uint(64 - bits.Len(uint(n))) }

// sortByHash returns index sorted by hash, then by tie (of two entries
// of one hash), in linear time: the entries are counted into the buckets
// of their hashes' top bits (hashShift), placed in them in a copy, in
// order, and each bucket of more than one entry is then sorted. Moving
// the entries in place, a swap at a time, took 0.3 s at a million: each
// swap waits on the one before.
func sortByHash(index []hashedRow, tie func(x, y hashedRow) int) []hashedRow {
	shift := hashShift(len(index))
	start := make([]int32, (1<<(64-shift))+1) // bucket t is out[start[t]:start[t+1]]
	for _, e := range index {
		start[e.h>>shift+1]++
	}
	for t := 1; t < len(start); t++ {
		start[t] += start[t-1]
	}
	next := slices.Clone(start[:len(start)-1]) // where the next entry of each bucket goes
	out := make([]hashedRow, len(index))
	for _, e := range index {
		t := e.h >> shift
		out[next[t]] = e
		next[t]++
	}
	for t := 0; t+1 < len(start); t++ {
		if b := out[start[t]:start[t+1]]; len(b) > 1 {
			slices.SortFunc(b, func(x, y hashedRow) int {
				if x.h != y.h { // not cmp.Or, which would call tie whatever the hashes
					return cmp.Compare(x.h, y.h)
				}
				return tie(x, y)
			})
		}
	}
	return out
}
