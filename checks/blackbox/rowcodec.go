package blackbox

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// A rebuilt table's row keeps its values encoded one after the other in
// bytes, in the order of its columns (table.row): a tag, then for an
// integer or a float its 8 bytes, for a text or bytes its length as a
// uvarint and its bytes. A value of any other type (a time, or what a
// test puts in an image) is kept aside in others, and the encoding holds
// its index there. Decoding gives back a value of the same type, equal
// to the one encoded.
const (
	tagNull byte = iota
	tagInt
	tagUint
	tagFloat
	tagText
	tagBytes
	tagOther
)

// others are the values a table's encoding keeps aside.
type others struct{ vals []any }

// encode appends v's encoding to b.
func (o *others) encode(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull)
	case int64:
		return binary.LittleEndian.AppendUint64(append(b, tagInt), uint64(x))
	case uint64:
		return binary.LittleEndian.AppendUint64(append(b, tagUint), x)
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x))
	case string:
		return append(binary.AppendUvarint(append(b, tagText), uint64(len(x))), x...)
	case []byte:
		if x == nil {
			break // a nil []byte is not NULL: kept aside as it is
		}
		return append(binary.AppendUvarint(append(b, tagBytes), uint64(len(x))), x...)
	}
	o.vals = append(o.vals, v)
	return binary.AppendUvarint(append(b, tagOther), uint64(len(o.vals)-1))
}

// decode returns the i-th value encoded in b. b is what encode wrote, in
// the model's own memory: it is not hostile, and a value it cannot find
// is nil.
func (o *others) decode(b []byte, i int) any {
	tag, v := cell(b, i)
	switch tag {
	case tagInt:
		return int64(binary.LittleEndian.Uint64(v))
	case tagUint:
		return binary.LittleEndian.Uint64(v)
	case tagFloat:
		return math.Float64frombits(binary.LittleEndian.Uint64(v))
	case tagText:
		// the arena's bytes, never written again (arena.go)
		return unsafe.String(unsafe.SliceData(v), len(v))
	case tagBytes:
		return v
	case tagOther:
		l, _ := binary.Uvarint(v)
		return o.vals[l]
	}
	return nil
}

// cell returns the tag of the i-th value encoded in b and its bytes (8
// for a number, the text or bytes themselves, the index into others'
// values as encoded), without making a value of them: tagNull and no
// bytes for a NULL or a value it cannot find.
func cell(b []byte, i int) (byte, []byte) {
	for k := 0; len(b) > 0; k++ {
		tag := b[0]
		b = b[1:]
		var n int // the bytes of the value after its tag
		switch tag {
		case tagNull:
		case tagInt, tagUint, tagFloat:
			n = 8
		case tagText, tagBytes, tagOther:
			l, w := binary.Uvarint(b)
			if w <= 0 {
				return tagNull, nil
			}
			if tag == tagOther {
				if k == i {
					return tag, b[:w]
				}
				b = b[w:]
				continue
			}
			b = b[w:]
			n = int(l)
		}
		if n > len(b) {
			return tagNull, nil
		}
		if k < i {
			b = b[n:]
			continue
		}
		return tag, b[:n:n]
	}
	return tagNull, nil
}
