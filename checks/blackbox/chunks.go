package blackbox

import "iter"

// chunkLen is how many values a block of chunks holds.
const chunkLen = 4096

// chunks is an append-only sequence kept in blocks of chunkLen values: it
// grows without copying what it holds (a million rows appended to one
// slice are copied about twice over, each copy scanned by the garbage
// collector's write barriers).
type chunks[T any] struct {
	blocks [][]T
	n      int
}

// add appends v and returns its index.
func (c *chunks[T]) add(v T) int {
	if c.n%chunkLen == 0 {
		c.blocks = append(c.blocks, make([]T, 0, chunkLen))
	}
	b := &c.blocks[len(c.blocks)-1]
	*b = append(*b, v)
	c.n++
	return c.n - 1
}

// len is how many values c holds.
func (c *chunks[T]) len() int { return c.n }

// at is the value of index i, to read or change in place.
func (c *chunks[T]) at(i int) *T { return &c.blocks[i/chunkLen][i%chunkLen] }

// all yields every index and value, in order.
func (c *chunks[T]) all() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for bi, b := range c.blocks {
			for j, v := range b {
				if !yield(bi*chunkLen+j, v) {
					return
				}
			}
		}
	}
}

// each yields every value in place, in order.
func (c *chunks[T]) each() iter.Seq[*T] {
	return func(yield func(*T) bool) {
		for _, b := range c.blocks {
			for j := range b {
				if !yield(&b[j]) {
					return
				}
			}
		}
	}
}
