package binlog

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestBoxes holds every Value boxes makes to the one Go makes of the same
// value: equal as interfaces, of the same dynamic type, the same through
// reflect, fmt, encoding/json and a type switch, usable as a map key; and
// still so after the blocks were filled many times over and collected
// around them.
func TestBoxes(t *testing.T) {
	var b boxes
	var want []Value
	var got []Value
	add := func(w, g Value) { want, got = append(want, w), append(got, g) }
	for i := range 3 * boxChunk {
		s := strings.Repeat("é", i%7) + fmt.Sprint(i)
		add(s, b.str(s))
		n := int64(i*i*1000) - 5000
		add(n, b.int(n))
		add(uint64(i)*99991, b.uint(uint64(i)*99991))
	}
	for _, n := range []int64{0, 1, 255, 256, -1, math.MinInt64, math.MaxInt64} {
		add(n, b.int(n))
	}
	for _, n := range []uint64{0, 255, 256, math.MaxUint64} {
		add(n, b.uint(n))
	}
	add("", b.str(""))
	keys := map[Value]int{}
	for i, g := range got {
		keys[g] = i
	}
	for round := range 3 {
		var junk boxes // blocks made and dropped, and collections around the kept ones
		for i := range 10 * boxChunk {
			junk.str(fmt.Sprint("junk", i))
			junk.int(int64(-i - 1000))
		}
		runtime.GC()
		for i, g := range got {
			w := want[i]
			if g != w || !reflect.DeepEqual(g, w) || reflect.TypeOf(g) != reflect.TypeOf(w) || fmt.Sprintf("%#v", g) != fmt.Sprintf("%#v", w) {
				t.Fatalf("round %d, value %d: %#v (%T); want %#v (%T)", round, i, g, g, w, w)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			if string(gj) != string(wj) {
				t.Fatalf("value %d as JSON: %s; want %s", i, gj, wj)
			}
			switch v := g.(type) {
			case string:
				if v != w.(string) {
					t.Fatalf("value %d as a string: %q", i, v)
				}
			case int64:
				if v != w.(int64) {
					t.Fatalf("value %d as an int64: %d", i, v)
				}
			case uint64:
				if v != w.(uint64) {
					t.Fatalf("value %d as a uint64: %d", i, v)
				}
			default:
				t.Fatalf("value %d of type %T", i, g)
			}
			if k, ok := keys[w]; !ok || got[k] != w {
				t.Fatalf("value %d as a map key: %v", i, ok)
			}
		}
	}
}
