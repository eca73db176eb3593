package orders

import (
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestParseIdempotencyKey(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
		err    error
	}{
		{"none", nil, "", errKeyMissing},
		{"blank", []string{"  "}, "", errKeyMissing},
		{"sf-string", []string{`"8e03978e-40d5"`}, "8e03978e-40d5", nil},
		{"sf-string with escapes", []string{`"a\"b\\c"`}, `a"b\c`, nil},
		{"bare token", []string{"abc-1"}, "abc-1", nil},
		{"bare and quoted agree", []string{` "abc-1" `}, "abc-1", nil},
		{"empty sf-string", []string{`""`}, "", errKeyInvalid},
		{"bad escape", []string{`"a\n"`}, "", errKeyInvalid},
		{"unterminated", []string{`"abc`}, "", errKeyInvalid},
		{"inner quote", []string{`"a"b"`}, "", errKeyInvalid},
		{"non-ASCII", []string{"\"k\u00e9\""}, "", errKeyInvalid},
		{"space in bare token", []string{"a b"}, "", errKeyInvalid},
		{"two values", []string{"a", "b"}, "", errKeyInvalid},
		{"longest", []string{strings.Repeat("k", MaxKeyBytes)}, strings.Repeat("k", MaxKeyBytes), nil},
		{"too long", []string{`"` + strings.Repeat("k", MaxKeyBytes+1) + `"`}, "", errKeyInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIdempotencyKey(tc.values)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("parseIdempotencyKey(%q) = %q, %v; want %q, %v", tc.values, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestFormatSFStringRoundTrips(t *testing.T) {
	for _, key := range []string{"k-1", `a"b\c`, " spaced "} {
		sf, ok := formatSFString(key)
		if !ok {
			t.Fatalf("formatSFString(%q) refused", key)
		}
		if got, err := parseIdempotencyKey([]string{sf}); err != nil || got != key {
			t.Errorf("parse(format(%q)) = %q, %v; want the key back", key, got, err)
		}
	}
	if _, ok := formatSFString("k\u00e9"); ok {
		t.Error("formatSFString accepted a non-ASCII key")
	}
}

func TestFingerprintIsCanonical(t *testing.T) {
	a, _, _, err := decodeRequest(strings.NewReader(`{"sku":"SKU-1","quantity":2}`))
	if err != nil {
		t.Fatal(err)
	}
	_, fa, _, _ := decodeRequest(strings.NewReader(`{"sku":"SKU-1","quantity":2}`))
	_, fb, _, _ := decodeRequest(strings.NewReader("\n{ \"quantity\" : 2,\n \"sku\" : \"SKU-1\" }\n"))
	_, fc, _, _ := decodeRequest(strings.NewReader(`{"sku":"SKU-1","quantity":3}`))
	if fa != fb || fa != Fingerprint(a) {
		t.Errorf("fingerprints of one request differ: %s %s", fa, fb)
	}
	if fa == fc {
		t.Errorf("fingerprints of two requests agree: %s", fa)
	}
}

func TestConfigValidate(t *testing.T) {
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/x") // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"valid", Config{DB: db, Secret: testSecret}, ""},
		{"planted", Config{DB: db, Secret: testSecret, Plant: plant.OutboxOutsideTx}, ""},
		{"no db", Config{Secret: testSecret}, "DB is required"},
		{"short secret", Config{DB: db, Secret: []byte("short")}, "secret has 5 bytes"},
		{"bad actor", Config{DB: db, Secret: testSecret, Actor: "an actor"}, "actor"},
		{"unknown plant", Config{DB: db, Secret: testSecret, Plant: "nope"}, "unknown planted bug"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("New() error = %v; want %q", err, tc.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestEmitErrReportsALostEvent(t *testing.T) {
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/x")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc, err := New(Config{DB: db, Secret: testSecret, Log: evidence.NewLog(failingWriter{}, "r", "s", nil)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	svc.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{}`)))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("status = %d; want 401", rec.Code)
	}
	if err := svc.EmitErr(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("EmitErr() = %v; want the write error", err)
	}
}

func TestClipKeepsRunes(t *testing.T) {
	if got := clip("ab\u00e9", 3); got != "ab" {
		t.Errorf("clip = %q; want %q", got, "ab")
	}
	if got := clip("abc", 5); got != "abc" {
		t.Errorf("clip = %q; want abc", got)
	}
}

// TestBoundsMatchSpec: the service's bounds are the contract's
// (spec/orderapi.go), which the generated load and the verifier's
// reference model read.
func TestBoundsMatchSpec(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"MaxKeyBytes", MaxKeyBytes, spec.MaxKeyBytes},
		{"maxPrincipalBytes", maxPrincipalBytes, spec.MaxPrincipalBytes},
		{"MaxLines", MaxLines, spec.MaxLines},
		{"MaxQuantity", MaxQuantity, spec.MaxQuantity},
		{"MaxSKUBytes", MaxSKUBytes, spec.MaxSKUBytes},
		{"MaxBodyBytes", MaxBodyBytes, spec.MaxBodyBytes},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d; want spec's %d", c.name, c.got, c.want)
		}
	}
}
