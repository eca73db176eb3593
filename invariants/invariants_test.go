package invariants

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestInvariantsParse(t *testing.T) {
	invs, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, inv := range invs {
		ids = append(ids, inv.ID)
		if len(inv.Meaning) < 20 || !strings.Contains(inv.Meaning, "row") {
			t.Errorf("%s: meaning %q does not say what a returned row means", inv.ID, inv.Meaning)
		}
		if strings.Contains(inv.SQL, "--") {
			t.Errorf("%s: comment left in the query", inv.ID)
		}
	}
	want := []string{"duplicated-effects", "effect-without-inbox", "inbox-without-effect", "order-without-intent",
		"orphan-effects", "orphan-sent", "sent-without-effect"}
	if !slices.Equal(ids, want) {
		t.Fatalf("All() = %v; want %v", ids, want)
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, file, body, want string }{
		{"no comment", "a-b.sql", "SELECT 1 FROM orders", "must open with"},
		{"bad name", "A_b.sql", "-- x row\nSELECT 1", "kebab-case"},
		{"semicolon", "a.sql", "-- a row\nSELECT 1 FROM orders;", "semicolon"},
		{"backtick", "a.sql", "-- a row\nSELECT 1 FROM `orders`", "backticks"},
		{"not select", "a.sql", "-- a row\nDELETE FROM orders", "single SELECT"},
		{"empty", "a.sql", "-- a row\n", "no query"},
		{"inner comment", "a.sql", "-- a row\nSELECT 1\n-- x\nFROM orders", "only at the top"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(fstest.MapFS{"sql/" + tc.file: {Data: []byte(tc.body)}}, "sql")
			if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v; want ErrBad mentioning %q", err, tc.want)
			}
		})
	}
}
