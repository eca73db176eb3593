package checks

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// TestBadInput: a file that is not evidence is an error wrapping
// evidence.ErrBadInput (exit 2), with a message that says which kind of bad.
func TestBadInput(t *testing.T) {
	fixture, _ := os.ReadFile(filepath.Join("testdata", "u80", "u80.json"))
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for _, tc := range []struct {
		name string
		body func(path string) // writes the file (or not)
		want string
	}{
		{"missing", func(string) {}, "no such file"},
		{"directory", func(p string) { os.Mkdir(p, 0o755) }, "is a directory"},
		{"empty", func(p string) { os.WriteFile(p, nil, 0o644) }, "not JSON"},
		{"garbage", func(p string) { os.WriteFile(p, []byte("\x00\x01PK\x03\x04 binary"), 0o644) }, "not JSON"},
		{"trailing data", func(p string) { os.WriteFile(p, append(append([]byte{}, fixture...), "{}"...), 0o644) }, "not JSON"},
		{"array", func(p string) { os.WriteFile(p, []byte("[1,2,3]"), 0o644) }, "the top level is an array"},
		{"other schema version", func(p string) {
			os.WriteFile(p, []byte(strings.Replace(string(fixture), evidence.SchemaVersion, "orderflow-audit/evidence/v9", 1)), 0o644)
		}, "schema_version"},
		{"no schema version", func(p string) { os.WriteFile(p, []byte(`{"tool":{}}`), 0o644) }, "schema_version"},
		{"100k nested arrays", func(p string) { os.WriteFile(p, []byte(deep), 0o644) }, "not JSON"},
		{"nested inside evidence", func(p string) {
			os.WriteFile(p, []byte(strings.Replace(string(fixture), `"args": [`, `"args": [`+deep+`,`, 1)), 0o644)
		}, "not JSON"},
		{"larger than 64 MiB", func(p string) {
			f, _ := os.Create(p)
			f.Truncate(evidence.MaxFileBytes + 1)
			f.Close()
		}, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "u80.json")
			tc.body(p)
			_, err := Verify(t.Context(), p, Options{})
			if !errors.Is(err, evidence.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want bad input mentioning %q", err, tc.want)
			}
		})
	}
	t.Run("schema: every problem with its location", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "u80.json")
		s := strings.Replace(string(fixture), `"flavour": "MariaDB"`, `"flavour": "Oracle"`, 1)
		s = strings.Replace(s, `"seed": 1`, `"seed": "one"`, 1)
		os.WriteFile(p, []byte(s), 0o644)
		_, err := Verify(t.Context(), p, Options{})
		var se *schemas.Error
		if !errors.Is(err, evidence.ErrBadInput) || !errors.As(err, &se) {
			t.Fatalf("err = %v; want a schema error", err)
		}
		locs := map[string]bool{}
		for _, pr := range se.Problems {
			locs[pr.Location] = true
		}
		for _, want := range []string{"/environment/database/flavour", "/run/seed"} {
			if !locs[want] {
				t.Errorf("no problem at %s in %v", want, se.Problems)
			}
		}
	})
}

// hostileLog replaces the consumer log of normalChain with what write
// writes, reseals and verifies, and reports the bytes allocated meanwhile.
func hostileLog(t *testing.T, write func(w *bufio.Writer)) (*Verdict, uint64) {
	t.Helper()
	p := copyFixture(t, "u80")
	only(t, p, "normalChain")
	lp := filepath.Join(filepath.Dir(p), "u80/normalChain/consumer-1.jsonl")
	f, err := os.Create(lp)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	reseal(t, p)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := verify(t, p)
	runtime.ReadMemStats(&after)
	return v, after.TotalAlloc - before.TotalAlloc
}

func TestHostileLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB file")
	}
	t.Run("100 MB line", func(t *testing.T) {
		v, alloc := hostileLog(t, func(w *bufio.Writer) {
			w.WriteString(`{"seq":1,"kind":"receive","err":"`)
			chunk := strings.Repeat("A", 1<<20)
			for range 100 {
				w.WriteString(chunk)
			}
			w.WriteString("\"}\n")
		})
		if v.Status != Fail || !hasRule(v, "event-line-too-long") {
			t.Fatalf("verdict %s %v; want FAIL event-line-too-long", v.Status, rules(v))
		}
		if alloc > 64<<20 {
			t.Errorf("allocated %d MiB for a 100 MB line; want it bounded", alloc>>20)
		}
	})
	t.Run("deeply nested line", func(t *testing.T) {
		v, _ := hostileLog(t, func(w *bufio.Writer) {
			w.WriteString(strings.Repeat("[", 500_000) + strings.Repeat("]", 500_000) + "\n")
		})
		i := -1
		for k, r := range v.Reasons {
			if r.Rule == "event-schema" {
				i = k
			}
		}
		if i < 0 || !strings.Contains(v.Reasons[i].Message, "not JSON") || v.Reasons[i].Line != 1 {
			t.Fatalf("reasons %+v; want event-schema 'not JSON' at line 1", v.Reasons)
		}
	})
	t.Run("binary garbage", func(t *testing.T) {
		v, _ := hostileLog(t, func(w *bufio.Writer) {
			for i := range 1000 {
				w.Write([]byte{0, 0xff, byte(i), '{', '"', 0x80})
				w.WriteString("\n")
			}
		})
		if v.Status != Fail || !hasRule(v, "event-schema") {
			t.Fatalf("verdict %s %v; want FAIL event-schema", v.Status, rules(v))
		}
		n := 0
		for _, r := range v.Reasons {
			if r.Rule == "event-schema" {
				n++
			}
		}
		if n > maxPerLogRule+1 {
			t.Errorf("%d event-schema reasons for one log; want them capped at %d plus a count", n, maxPerLogRule)
		}
	})
	t.Run("many schema-invalid lines", func(t *testing.T) {
		v, _ := hostileLog(t, func(w *bufio.Writer) {
			for range 2 * maxSlowLines {
				w.WriteString("{}\n")
			}
		})
		if v.Status != Fail || !hasRule(v, "log-too-broken") {
			t.Fatalf("verdict %s %v; want FAIL log-too-broken", v.Status, rules(v))
		}
	})
}

func TestHostileContextDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 1)
	defer cancel()
	<-ctx.Done()
	if _, err := Verify(ctx, copyFixture(t, "u80"), Options{}); err == nil {
		t.Fatal("Verify ignored a context that had ended")
	}
}
