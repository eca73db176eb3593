package chaos

import "testing"

func TestIsCommit(t *testing.T) {
	q := func(text string) []byte {
		n := len(text) + 1
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0, comQuery}, text...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"COMMIT", q("COMMIT"), true},
		{"lower case, JDBC", q("commit"), true},
		{"blanks and semicolon", q("  Commit ;\n"), true},
		{"followed by another packet", append(q("COMMIT"), q("SELECT 1")...), true},
		{"ROLLBACK", q("ROLLBACK"), false},
		{"COMMIT AND CHAIN", q("COMMIT AND CHAIN"), false},
		{"an INSERT naming commit", q("INSERT INTO t VALUES ('COMMIT')"), false},
		{"not COM_QUERY", append([]byte{7, 0, 0, 0, 0x16}, "COMMIT"...), false},
		{"length past the chunk", append([]byte{9, 0, 0, 0, comQuery}, "COMMIT"...), false},
		{"length too short", append([]byte{3, 0, 0, 0, comQuery}, "COMMIT"...), false},
		{"zero length", []byte{0, 0, 0, 0, comQuery}, false},
		{"short", []byte{7, 0, 0}, false},
		{"empty", nil, false},
	} {
		if got := isCommit(tc.b); got != tc.want {
			t.Errorf("%s: isCommit(% x) = %v; want %v", tc.name, tc.b, got, tc.want)
		}
	}
}
