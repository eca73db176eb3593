package eventline

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The fields of an event line, derived once from evidence.Event's struct
// tags: its JSON name, where the field lies in the struct and its Go type.
// Nothing here lists them by hand, so a field added to evidence.Event is
// known to the fast decoder at once (and its schema rule must exist, or
// compileEventRules disables the fast path).

// eventField indexes eventFields (the fields of evidence.Event in
// declaration order); a set of fields is a bit mask (uint64).
type eventField uint8

// maxEventFields is the most fields a bit mask holds.
const maxEventFields = 64

// goKind is the Go type of a field of evidence.Event.
type goKind uint8

const (
	gkInt64    goKind = iota + 1 // int64
	gkInt64Ptr                   // *int64
	gkInt32Ptr                   // *int32
	gkInt                        // int (64-bit on every supported platform)
	gkString                     // string, or a type whose underlying type is string
	gkTime                       // time.Time
	gkTimePtr                    // *time.Time
	gkStrings                    // []string
)

// fieldInfo is one field of evidence.Event.
type fieldInfo struct {
	name string  // JSON name
	off  uintptr // offset in evidence.Event
	kind goKind
}

// eventFields are the fields of evidence.Event; eventFieldsErr says why
// they could not be derived (the fast path is then disabled).
var eventFields, eventFieldsErr = deriveFields(reflect.TypeFor[evidence.Event]())

// fieldBuckets finds a field by its JSON name: bucket(name) holds the
// candidates, compared in full. A hash of the length and two bytes: this
// runs for every key of every line.
var fieldBuckets = func() (b [64][]eventField) {
	for i, f := range eventFields {
		k := bucket(f.name)
		b[k] = append(b[k], eventField(i))
	}
	return b
}()

func bucket(name string) int {
	if name == "" {
		return 0
	}
	return (len(name)*7 + int(name[0]) + int(name[len(name)-1])*3) & 63
}

// fieldByName maps a JSON name to its field.
func fieldByName(name string) (eventField, bool) {
	for _, f := range fieldBuckets[bucket(name)] {
		if eventFields[f].name == name {
			return f, true
		}
	}
	return 0, false
}

var (
	typeTime    = reflect.TypeFor[time.Time]()
	typeTimePtr = reflect.TypeFor[*time.Time]()
)

// deriveFields lists the fields of t, a struct whose fields all have JSON
// names and Go types among goKind's.
func deriveFields(t reflect.Type) ([]fieldInfo, error) {
	if t.NumField() > maxEventFields {
		return nil, fmt.Errorf("%s has %d fields; the fast decoder handles %d", t, t.NumField(), maxEventFields)
	}
	var out []fieldInfo
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			return nil, fmt.Errorf("field %s has no JSON name", sf.Name)
		}
		k := kindOf(sf.Type)
		if k == 0 {
			return nil, fmt.Errorf("field %s: Go type %s unknown to the fast decoder", sf.Name, sf.Type)
		}
		out = append(out, fieldInfo{name: name, off: sf.Offset, kind: k})
	}
	return out, nil
}

func kindOf(t reflect.Type) goKind {
	switch {
	case t == typeTime:
		return gkTime
	case t == typeTimePtr:
		return gkTimePtr
	}
	switch t.Kind() {
	case reflect.Int64:
		return gkInt64
	case reflect.Int:
		if unsafe.Sizeof(int(0)) == 8 {
			return gkInt
		}
	case reflect.String:
		return gkString
	case reflect.Pointer:
		switch t.Elem().Kind() {
		case reflect.Int64:
			return gkInt64Ptr
		case reflect.Int32:
			return gkInt32Ptr
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return gkStrings
		}
	}
	return 0
}

// The setters store a value into field f of e; f's kind says which fits.
// A Kind or another string type shares string's layout.

func (f *fieldInfo) ptr(e *evidence.Event) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(e), f.off)
}

func (f *fieldInfo) setInt64(e *evidence.Event, n int64)        { *(*int64)(f.ptr(e)) = n }
func (f *fieldInfo) setInt64Ptr(e *evidence.Event, p *int64)    { *(**int64)(f.ptr(e)) = p }
func (f *fieldInfo) setInt32Ptr(e *evidence.Event, p *int32)    { *(**int32)(f.ptr(e)) = p }
func (f *fieldInfo) setInt(e *evidence.Event, n int)            { *(*int)(f.ptr(e)) = n }
func (f *fieldInfo) setString(e *evidence.Event, s string)      { *(*string)(f.ptr(e)) = s }
func (f *fieldInfo) setTime(e *evidence.Event, t time.Time)     { *(*time.Time)(f.ptr(e)) = t }
func (f *fieldInfo) setTimePtr(e *evidence.Event, p *time.Time) { *(**time.Time)(f.ptr(e)) = p }
func (f *fieldInfo) setStrings(e *evidence.Event, ss []string)  { *(*[]string)(f.ptr(e)) = ss }
