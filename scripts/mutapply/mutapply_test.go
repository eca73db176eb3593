package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const goSrc = `package p

func f(a, b int) bool {
	if a != b {
		return a-b > 0 && b < 3
	}
	return false
}
`

func TestGoMutantApplyAndStableID(t *testing.T) {
	root := writeTree(t, map[string]string{"p/f.go": goSrc})
	ms, err := fileMutants(root, "p/f.go")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ms[place{5, 18, "INVERT_LOGICAL"}]
	if !ok {
		t.Fatalf("no INVERT_LOGICAL at 5:18 in %v", ms)
	}
	if err := apply(root, got.ID); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "p", "f.go"))
	if !strings.Contains(string(b), "return a-b > 0 || b < 3") {
		t.Fatalf("apply wrote:\n%s", b)
	}
	// The same mutant keeps its id when lines are added above it.
	root2 := writeTree(t, map[string]string{"p/f.go": strings.Replace(goSrc, "package p\n", "package p\n\n// added\nvar x = 1\n", 1)})
	ms2, err := fileMutants(root2, "p/f.go")
	if err != nil {
		t.Fatal(err)
	}
	moved, ok := ms2[place{8, 18, "INVERT_LOGICAL"}]
	if !ok || moved.ID != got.ID {
		t.Fatalf("id changed with the line: %q vs %q", moved.ID, got.ID)
	}
	// Every mutant of the file has its own id.
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.ID] {
			t.Fatalf("duplicate id %s", m.ID)
		}
		seen[m.ID] = true
	}
}

func TestGoMutantsFromGremlinsReport(t *testing.T) {
	root := writeTree(t, map[string]string{
		"p/f.go": goSrc,
		"r.json": `{"files":[{"file_name":"f.go","mutations":[
			{"type":"CONDITIONALS_NEGATION","status":"RUNNABLE","line":4,"column":7},
			{"type":"ARITHMETIC_BASE","status":"NOT COVERED","line":5,"column":11}]}]}`,
	})
	ms, err := goMutants(root, filepath.Join(root, "r.json"), "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || !strings.Contains(ms[0].What, "!= -> ==") || !strings.Contains(ms[1].What, "- -> +") {
		t.Fatalf("got %+v", ms)
	}
	bad := writeTree(t, map[string]string{
		"p/f.go": goSrc,
		"r.json": `{"files":[{"file_name":"f.go","mutations":[{"type":"INVERT_LOGICAL","line":4,"column":7}]}]}`,
	})
	if _, err := goMutants(bad, filepath.Join(bad, "r.json"), "p"); err == nil {
		t.Fatal("a report that names no such token must be refused")
	}
}

const ddl = `-- comment KEY x (y),
CREATE TABLE t (
  id    BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  owner VARCHAR(64) NOT NULL,
  k     VARCHAR(255) NOT NULL,
  n     BIGINT NOT NULL,
  CONSTRAINT ck_n CHECK (n >= 0),
  UNIQUE KEY uk_owner_k (owner, k),
  KEY idx_n (n)
);
`

func TestSQLMutants(t *testing.T) {
	root := writeTree(t, map[string]string{
		"migrations/0001_marker.up.sql": "CREATE TABLE m (x VARCHAR(64) NOT NULL);\n",
		"migrations/0002_t.up.sql":      ddl,
	})
	ms, err := sqlMutants(root)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Mutant{}
	for _, m := range ms {
		if strings.Contains(m.File, "marker") {
			t.Fatalf("the marker table is the tool's: %s", m.ID)
		}
		byID[m.ID] = m
	}
	want := map[string]string{
		"sql:migrations/0002_t.up.sql:unique-to-plain-0": "  KEY uk_owner_k (owner, k),",
		"sql:migrations/0002_t.up.sql:narrow-key-0":      "  UNIQUE KEY uk_owner_k (k),",
		"sql:migrations/0002_t.up.sql:narrow-key-1":      "  UNIQUE KEY uk_owner_k (owner),",
		"sql:migrations/0002_t.up.sql:narrow-char-1":     "  k     VARCHAR(63) NOT NULL,",
		"sql:migrations/0002_t.up.sql:narrow-bigint-0":   "  n     INT NOT NULL,",
		"sql:migrations/0002_t.up.sql:collation-0":       "  owner VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,",
		"sql:migrations/0002_t.up.sql:drop-check-0":      "",
		"sql:migrations/0002_t.up.sql:drop-index-0":      "",
	}
	for id, line := range want {
		m, ok := byID[id]
		if !ok {
			t.Fatalf("no mutant %s among %d", id, len(ms))
		}
		out, err := m.apply([]byte(ddl))
		if err != nil {
			t.Fatal(err)
		}
		if line != "" && !strings.Contains(string(out), line+"\n") {
			t.Errorf("%s wrote:\n%s", id, out)
		}
		if line == "" && len(out) >= len(ddl) {
			t.Errorf("%s removed nothing", id)
		}
	}
	// Removing the last item of a table drops the comma before it.
	out, _ := byID["sql:migrations/0002_t.up.sql:drop-index-0"].apply([]byte(ddl))
	if !strings.Contains(string(out), "UNIQUE KEY uk_owner_k (owner, k)\n);") {
		t.Errorf("comma left behind:\n%s", out)
	}
	if _, ok := byID["sql:migrations/0002_t.up.sql:narrow-bigint-1"]; ok {
		t.Error("an AUTO_INCREMENT id is not narrowed (every row would collide)")
	}
}
