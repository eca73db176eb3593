package eventline

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

func TestFastRulesCompile(t *testing.T) {
	if fastRulesErr != nil || fastRules == nil {
		t.Fatalf("the fast path is disabled for the embedded event schema: %v", fastRulesErr)
	}
	if len(fastRules.conds) != len(evidence.Kinds) { // one if-kind-then rule per kind
		t.Errorf("compiled %d kind rules; want %d", len(fastRules.conds), len(evidence.Kinds))
	}
}

func TestCompileRejectsUnknownKeywords(t *testing.T) {
	src := string(schemas.Source(schemas.EventFile))
	for _, tc := range []struct{ name, from, to string }{
		{"unknown property keyword", `"seq": {"type": "integer", "minimum": 1}`, `"seq": {"type": "integer", "minimum": 1, "multipleOf": 2}`},
		{"unknown top keyword", `"additionalProperties": false,`, `"additionalProperties": false, "minProperties": 3,`},
		{"other format", `"format": "date-time"`, `"format": "email"`},
		{"additional properties allowed", `"additionalProperties": false`, `"additionalProperties": true`},
		{"unknown then keyword", `"then": {"required": ["sku", "stock"]}`, `"then": {"required": ["sku", "stock"], "not": {}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := strings.Replace(src, tc.from, tc.to, 1)
			if mod == src {
				t.Fatalf("schema text %q not found", tc.from)
			}
			if _, err := compileEventRules([]byte(mod)); err == nil {
				t.Fatal("compileEventRules accepted a schema it cannot enforce")
			}
		})
	}
}

// TestEventFields: the field table derived from evidence.Event finds
// every field by its JSON name, at its own offset, and nothing else.
func TestEventFields(t *testing.T) {
	if eventFieldsErr != nil {
		t.Fatal(eventFieldsErr)
	}
	typ := reflect.TypeFor[evidence.Event]()
	if len(eventFields) != typ.NumField() {
		t.Fatalf("%d fields derived; evidence.Event has %d", len(eventFields), typ.NumField())
	}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		f, ok := fieldByName(name)
		if !ok || int(f) != i || eventFields[f].off != sf.Offset {
			t.Errorf("fieldByName(%q) = %d, %v; want field %d (%s) at offset %d", name, f, ok, i, sf.Name, sf.Offset)
		}
	}
	for _, name := range []string{"", "Seq", "seq ", "kinds", "run-id", "x"} {
		if f, ok := fieldByName(name); ok {
			t.Errorf("fieldByName(%q) = %d; want not found", name, f)
		}
	}
	if _, err := deriveFields(reflect.TypeFor[struct {
		A float64 `json:"a"`
	}]()); err == nil {
		t.Error("deriveFields accepted a float field")
	}
}

const head = `"seq":7,"time":"2026-11-30T10:00:00.123456789Z","run_id":"r1","scenario":"normalChain","actor":"relay-a",`

// fastCases are lines the fast path must decide (valid, equal to the slow
// decoder) or leave undecided (ok=false).
var fastCases = []struct {
	name string
	line string
	fast bool // the fast path decides it
	ok   bool // the line is a valid event
}{
	{"claim", `{` + head + `"kind":"claim","event_id":"e-1","order_id":1,"claim_version":1,"claim_id":"c1","lease_until":"2026-11-30T10:00:30Z","state_before":"PENDING"}`, true, true},
	{"publish ok", `{` + head + `"kind":"publish","event_id":"e-1","order_id":1,"claim_version":1,"claim_id":"c1","topic":"t.1","partition":0,"offset":41}`, true, true},
	{"publish err", `{` + head + `"kind":"publish","event_id":"e-1","claim_version":1,"claim_id":"c1","topic":"t","err":"broker said \"no\"\n\tline2 \u00e9 \\ /"}`, true, true},
	{"order committed", `{` + head + `"kind":"order_committed","order_id":3,"event_id":"e-3","key":"k","sku":"SKU","quantity":2,"stock":8,"status":201,"writes":["stock","orders","order_lines","idempotency_records","outbox"]}`, true, true},
	{"empty writes", `{` + head + `"kind":"order_committed","order_id":3,"event_id":"e-3","key":"","sku":"SKU","quantity":2,"stock":-8,"status":201,"writes":[]}`, true, true},
	{"unicode", `{` + head + `"kind":"fault","point":"p","detail":"héllo wörld ✓"}`, true, true},
	{"whitespace", " {\t" + strings.ReplaceAll(head, ",", " , ") + `"kind" : "fault" , "point":"p","detail":"d" }  `, true, true},
	{"negative zero", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"a","kind":"observe","event_id":"e","state":"SENT","claim_version":-0}`, true, true},
	{"leap year", `{"seq":1,"time":"2024-02-29T23:59:59.5Z","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, true, true},

	// Valid against the schema, not decodable into evidence.Event.
	{"float integer", `{` + head + `"kind":"invariant","invariant":"x","rows":1.0}`, false, false},
	{"exponent", `{` + head + `"kind":"invariant","invariant":"x","rows":1e2}`, false, false},
	{"partition overflow", `{` + head + `"kind":"offset_commit","topic":"t","partition":3000000000,"offset":1,"consumer":"g"}`, false, false},
	// Valid for the schema validator and encoding/json alike (the last
	// duplicate wins; invalid UTF-8 becomes U+FFFD); the fast path leaves
	// them to the full decoder.
	{"duplicate key", `{` + head + `"kind":"fault","point":"p","point":"q","detail":"d"}`, false, true},
	{"invalid utf8", "{" + head + `"kind":"fault","point":"p","detail":"a` + "\xff" + `"}`, false, true},
	{"time offset", `{"seq":1,"time":"2026-11-30T10:00:00+01:00","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false, true},
	{"surrogate escape", `{` + head + `"kind":"fault","point":"p","detail":"\ud83d\ude00"}`, false, true},

	{"unknown field", `{` + head + `"kind":"fault","point":"p","detail":"d","extra":1}`, false, false},
	{"upper-case key", `{` + head + `"kind":"fault","Point":"p","detail":"d"}`, false, false},
	{"missing required", `{` + head + `"kind":"claim","event_id":"e-1"}`, false, false},
	{"publish both", `{` + head + `"kind":"publish","event_id":"e-1","claim_version":1,"claim_id":"c1","topic":"t","partition":0,"offset":1,"err":"x"}`, false, false},
	{"null", `{` + head + `"kind":"claim","event_id":"e-1","order_id":null,"claim_version":1,"claim_id":"c1","lease_until":"2026-11-30T10:00:30Z","state_before":"PENDING"}`, false, false},
	{"seq zero", `{"seq":0,"time":"2026-11-30T10:00:00Z","run_id":"r1","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false, false},
	{"bad id", `{"seq":1,"time":"2026-11-30T10:00:00Z","run_id":"-r","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false, false},
	{"feb 30", `{"seq":1,"time":"2026-02-30T10:00:00Z","run_id":"r","scenario":"s","actor":"a","kind":"fault","point":"p","detail":"d"}`, false, false},
	{"bad state", `{` + head + `"kind":"observe","event_id":"e","state":"DONE","claim_version":1}`, false, false},
	{"bad writes", `{` + head + `"kind":"order_committed","order_id":3,"event_id":"e-3","key":"k","sku":"SKU","quantity":2,"stock":8,"status":201,"writes":["stock","payments"]}`, false, false},
	{"status range", `{` + head + `"kind":"order_rejected","status":99,"reason":"r"}`, false, false},
	{"trailing data", `{` + head + `"kind":"fault","point":"p","detail":"d"} {}`, false, false},
	{"control char", "{" + head + `"kind":"fault","point":"p","detail":"a` + "\x01" + `"}`, false, false},
	{"not an object", `[1,2]`, false, false},
	{"empty object", `{}`, false, false},
	{"too long event id", `{` + head + `"kind":"observe","event_id":"` + strings.Repeat("é", 65) + `","state":"SENT","claim_version":1}`, false, false},
}

func TestFastDecode(t *testing.T) {
	d := NewDecoder()
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			var pe evidence.Decoded
			fast := d.Fast(tc.line, &pe)
			if fast != tc.fast {
				t.Fatalf("fast path decided = %v; want %v", fast, tc.fast)
			}
			if fast {
				assertSameAsSlow(t, tc.line, &pe.Event)
			}
			var pe2 evidence.Decoded
			prob := d.decodeLine(tc.line, &pe2)
			if (prob == nil) != tc.ok {
				t.Fatalf("decodeLine problem = %v; want valid=%v", prob, tc.ok)
			}
			if prob != nil && prob.String() == "" {
				t.Error("a problem without a message")
			}
		})
	}
}

// assertSameAsSlow is the soundness property of the fast path.
func assertSameAsSlow(t *testing.T, line string, got *evidence.Event) {
	t.Helper()
	if err := schemas.ValidateEventJSON([]byte(line)); err != nil {
		t.Fatalf("the fast path accepted a line the schema rejects: %v\n%s", err, line)
	}
	want, err := evidence.DecodeEvent([]byte(line))
	if err != nil {
		t.Fatalf("the fast path accepted a line evidence.DecodeEvent rejects: %v\n%s", err, line)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("fast decode differs from evidence.DecodeEvent:\n got %+v\nwant %+v\n%s", *got, want, line)
	}
}

// FuzzFastEvent: whenever the fast path accepts a line, the full validator
// accepts it and evidence.DecodeEvent yields the same Event.
func FuzzFastEvent(f *testing.F) {
	for _, tc := range fastCases {
		f.Add(tc.line)
	}
	d := NewDecoder()
	f.Fuzz(func(t *testing.T, line string) {
		var pe evidence.Decoded
		if d.Fast(line, &pe) {
			assertSameAsSlow(t, line, &pe.Event)
		}
	})
}

// TestWriteFuzzCorpus writes FuzzFastEvent's committed seed corpus under
// testdata/fuzz from fastCases (run with OFA_WRITE_CORPUS=1 after changing
// them).
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("OFA_WRITE_CORPUS") == "" {
		t.Skip("set OFA_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzFastEvent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range fastCases {
		body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", tc.line)
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkDecodeLine(b *testing.B) {
	line := `{"seq":12345,"time":"2026-11-30T10:00:00.123456789Z","run_id":"20261130t100000_abcd","scenario":"normalChain","actor":"relay-a","kind":"claim","event_id":"e-1234","order_id":1234,"claim_version":1,"claim_id":"relay-a-20261130t100000_abcd","lease_until":"2026-11-30T10:00:30.123456Z","state_before":"PENDING"}`
	d := NewDecoder()
	var pe evidence.Decoded
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if p := d.decodeLine(line, &pe); p != nil {
			b.Fatal(p)
		}
	}
}
