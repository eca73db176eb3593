//go:build unix

package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// newBundle writes files (path relative to the root: content) beside an
// evidence file e.json and returns the root and the evidence path.
func newBundle(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	root := t.TempDir()
	files["e.json"] = "{}"
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, filepath.Join(root, "e.json")
}

func open(t *testing.T, evidencePath string) *Bundle {
	t.Helper()
	b, err := Open(evidencePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// fast runs fn and fails the test if it takes longer than d: a FIFO or a
// device must be refused at once, never waited on. A hung fn is left
// behind (the test fails; the process ends with the test binary).
func fast(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still running after %s: the gate waited on the file", d)
		return nil
	}
}

// wantErr checks that err is an *Error wrapping want and naming path.
func wantErr(t *testing.T, err, want error, path string) {
	t.Helper()
	var e *Error
	if !errors.Is(err, want) || !errors.As(err, &e) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v; want %v naming %s", err, want, path)
	}
}

func TestOpenEvidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
		want error
		text string
	}{
		{"missing", func(*testing.T, string) {}, ErrMissing, "no such file"},
		{"directory", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, ErrNotRegular, "directory"},
		{"FIFO", evidencetest.Mkfifo, ErrNotRegular, "FIFO"},
		{"symlink to /dev/zero", func(t *testing.T, p string) { os.Symlink("/dev/zero", p) }, ErrNotRegular, "character device"},
		{"hard link", func(t *testing.T, p string) {
			os.WriteFile(p, []byte("{}"), 0o644)
			os.Link(p, p+".2")
		}, ErrHardLink, "2 links"},
		{"larger than 64 MiB (evidencetest.SparseFile)", func(t *testing.T, p string) { evidencetest.SparseFile(t, p, MaxEvidenceBytes+1) }, ErrTooLarge, "the limit is 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "u80.json")
			tc.make(t, p)
			err := fast(t, 5*time.Second, func() error { _, err := Open(p); return err })
			wantErr(t, err, tc.want, p)
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v; want it to say %q", err, tc.text)
			}
		})
	}
	t.Run("missing is fs.ErrNotExist", func(t *testing.T) {
		if _, err := Open(filepath.Join(t.TempDir(), "u80.json")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v; want fs.ErrNotExist", err)
		}
	})
	t.Run("the typed name is followed, the root is its directory", func(t *testing.T) {
		_, real := newBundle(t, map[string]string{"log.jsonl": "x\n"})
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "log.jsonl"), []byte("here\n"), 0o644)
		link := filepath.Join(dir, "link.json")
		os.Symlink(real, link)
		b := open(t, link)
		if string(b.Evidence()) != "{}" {
			t.Errorf("evidence %q", b.Evidence())
		}
		f, err := b.OpenFile("log.jsonl", KindLog)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(f.Reader()); string(got) != "here\n" {
			t.Errorf("read %q; want the log beside the typed path", got)
		}
	})
}

func TestPathsRefused(t *testing.T) {
	_, ev := newBundle(t, map[string]string{"a/b": "x"})
	b := open(t, ev)
	for _, rel := range []string{"", "/etc/passwd", "..", "../e.json", "a/../a/b", "a\\b", "a\x00b", "./a/b", "a/./b", "a//b", "a/b/",
		strings.Repeat("a/", MaxDepth) + "b"} {
		_, err := b.OpenFile(rel, KindLog)
		if !errors.Is(err, ErrEscapes) {
			t.Errorf("OpenFile(%q) = %v; want ErrEscapes", rel, err)
		}
		if _, err := b.Verified(rel, 1, sum("x")); !errors.Is(err, ErrEscapes) {
			t.Errorf("Verified(%q) = %v; want ErrEscapes", rel, err)
		}
	}
}

// TestFilesRefused: each kind of file that is not a plain regular file
// of the bundle is refused, by a sentinel, naming it, at once.
func TestFilesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, root string) // makes "d/f"
		want error
	}{
		{"missing", func(t *testing.T, root string) {}, ErrMissing},
		{"relative symlink inside", func(t *testing.T, root string) { os.Symlink("../other", filepath.Join(root, "d/f")) }, ErrLink},
		{"absolute symlink inside", func(t *testing.T, root string) {
			os.Symlink(filepath.Join(root, "other"), filepath.Join(root, "d/f"))
		}, ErrLink},
		{"symlink to /dev/zero", func(t *testing.T, root string) { os.Symlink("/dev/zero", filepath.Join(root, "d/f")) }, ErrLink},
		{"directory on the path is a symlink", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "d"))
			os.Mkdir(filepath.Join(root, "real"), 0o755)
			os.WriteFile(filepath.Join(root, "real/f"), []byte("x"), 0o644)
			os.Symlink("real", filepath.Join(root, "d"))
		}, ErrLink},
		{"file on the path", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "d"))
			os.WriteFile(filepath.Join(root, "d"), []byte("x"), 0o644)
		}, ErrNotDirectory},
		{"FIFO", func(t *testing.T, root string) { evidencetest.Mkfifo(t, filepath.Join(root, "d/f")) }, ErrNotRegular},
		{"directory", func(t *testing.T, root string) { os.Mkdir(filepath.Join(root, "d/f"), 0o755) }, ErrNotRegular},
		{"character device", func(t *testing.T, root string) {
			if err := syscall.Mknod(filepath.Join(root, "d/f"), syscall.S_IFCHR|0o644, 0x0105); err != nil { // 1:5, /dev/zero
				t.Skipf("mknod (needs root): %v", err)
			}
		}, ErrNotRegular},
		{"hard link", func(t *testing.T, root string) {
			os.WriteFile(filepath.Join(root, "d/f"), []byte("x"), 0o644)
			os.Link(filepath.Join(root, "d/f"), filepath.Join(root, "d/g"))
		}, ErrHardLink},
		{"evidencetest.SparseFile, larger than a witness file may be", func(t *testing.T, root string) {
			evidencetest.SparseFile(t, filepath.Join(root, "d/f"), 2<<30)
		}, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, ev := newBundle(t, map[string]string{"other": "x"})
			os.Mkdir(filepath.Join(root, "d"), 0o755)
			tc.make(t, root)
			b := open(t, ev)
			err := fast(t, 5*time.Second, func() error { _, err := b.Verified("d/f", 1, sum("x")); return err })
			wantErr(t, err, tc.want, "d/f")
			err = fast(t, 5*time.Second, func() error { _, err := b.OpenFile("d/f", KindWitness); return err })
			wantErr(t, err, tc.want, "d/f")
		})
	}
}

func TestVerified(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", (MaxHeldFileBytes+16)/16)
	_, ev := newBundle(t, map[string]string{"w/a": "alpha", "w/big": big})
	b := open(t, ev)
	f, err := b.Verified("w/a", 5, sum("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(f.Reader()); string(got) != "alpha" || f.data == nil || f.SHA256() != sum("alpha") {
		t.Errorf("read %q (held %v); want alpha held in memory", got, f.data != nil)
	}
	if again, err := b.Verified("w/a", 5, sum("alpha")); err != nil || again != f {
		t.Errorf("second Verified = %p, %v; want the same file, not read again", again, err)
	}
	g, err := b.Verified("w/big", int64(len(big)), sum(big))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(g.Reader()); string(got) != big || g.data != nil {
		t.Errorf("big file: %d bytes read, held %v; want its bytes from the open file", len(got), g.data != nil)
	}

	var e *Error
	_, err = b.Verified("w/a", 6, sum("alpha"))
	if !errors.Is(err, ErrSize) || !errors.As(err, &e) || e.Got != "5" {
		t.Errorf("wrong size (cached): %v; want ErrSize, got 5", err)
	}
	_, err = b.Verified("w/a", 5, sum("beta"))
	if !errors.Is(err, ErrDigest) || !errors.As(err, &e) || e.Got != sum("alpha") {
		t.Errorf("wrong sha256 (cached): %v; want ErrDigest with the file's", err)
	}
	_, ev2 := newBundle(t, map[string]string{"w/a": "alpha"})
	b2 := open(t, ev2)
	if _, err := b2.Verified("w/a", 4, sum("alpha")); !errors.Is(err, ErrSize) || !errors.As(err, &e) || e.Got != "5" {
		t.Errorf("wrong size: %v; want ErrSize, got 5", err)
	}
	if _, err := b2.Verified("w/a", 5, sum("beta")); !errors.Is(err, ErrDigest) || !errors.As(err, &e) || e.Got != sum("alpha") {
		t.Errorf("wrong sha256: %v; want ErrDigest with the file's", err)
	}
	if _, err := b2.Verified("w/a", 5, sum("alpha")); err != nil {
		t.Errorf("after refusals of other claims: %v; want the true claim verified", err)
	}
}

// TestSizeBeforeHash: a file whose size is not the evidence's is refused
// from fstat, without reading it: a 100 MiB evidencetest.SparseFile file with a claimed
// size of 1 byte comes back at once.
func TestSizeBeforeHash(t *testing.T) {
	root, ev := newBundle(t, map[string]string{})
	evidencetest.SparseFile(t, filepath.Join(root, "big"), 100<<20)
	b := open(t, ev)
	start := time.Now()
	_, err := b.Verified("big", 1, sum("x"))
	wantErr(t, err, ErrSize, "big")
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("refusing took %s; want no read", d)
	}
	if b.total != int64(len("{}")) {
		t.Errorf("charged %d bytes; want nothing for a refused file", b.total)
	}
}

func TestBudgets(t *testing.T) {
	_, ev := newBundle(t, map[string]string{"a": "x"})
	b := open(t, ev)
	if err := b.charge("w1", KindWitness, MaxWitnessBytes); err != nil {
		t.Fatal(err)
	}
	wantErr(t, b.charge("w2", KindWitness, 1), ErrBudget, "w2")
	if err := b.charge("l1", KindLog, MaxTotalBytes-b.total); err != nil {
		t.Fatal(err)
	}
	_, err := b.OpenFile("a", KindLog)
	wantErr(t, err, ErrBudget, "a")
	if !strings.Contains(err.Error(), "768 MiB") {
		t.Errorf("err = %v; want the limit stated", err)
	}
	b.files = MaxFiles
	wantErr(t, b.charge("l2", KindLog, 0), ErrBudget, "l2")
}

func TestList(t *testing.T) {
	root, ev := newBundle(t, map[string]string{"w/a": "1", "w/s/b": "2", "w/s/t/c": "3", "other": "4"})
	os.Symlink("../other", filepath.Join(root, "w/s/link"))
	os.Symlink("s", filepath.Join(root, "w/dirlink"))
	evidencetest.Mkfifo(t, filepath.Join(root, "w/s/fifo"))
	b := open(t, ev)
	l, err := fast2(t, func() (*Listing, error) { return b.List("w") })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"w/a", "w/s/b", "w/s/t/c"}; !slices.Equal(l.Files, want) {
		t.Errorf("files %v; want %v", l.Files, want)
	}
	var refused []string
	for _, err := range l.Refused {
		var e *Error
		if errors.As(err, &e) {
			refused = append(refused, e.Path+" "+e.Err.Error())
		}
	}
	slices.Sort(refused)
	if len(refused) != 3 || !strings.HasPrefix(refused[0], "w/dirlink is a symbolic link") ||
		!strings.HasPrefix(refused[1], "w/s/fifo not a regular file") || !strings.HasPrefix(refused[2], "w/s/link is a symbolic link") {
		t.Errorf("refused %q; want the two links and the FIFO", refused)
	}
	_, err = b.List("w/dirlink")
	wantErr(t, err, ErrLink, "w/dirlink")
	_, err = b.List("w/a")
	wantErr(t, err, ErrNotDirectory, "w/a")
	_, err = b.List("nothing")
	wantErr(t, err, ErrMissing, "nothing")
	_, err = b.List("../w")
	wantErr(t, err, ErrEscapes, "../w")
}

func fast2(t *testing.T, fn func() (*Listing, error)) (*Listing, error) {
	var l *Listing
	err := fast(t, 5*time.Second, func() error {
		var err error
		l, err = fn()
		return err
	})
	return l, err
}

func TestFS(t *testing.T) {
	files := map[string]string{"k/meta.json": "{}", "k/p/t-0/0.dat": "records", "k/p/t-0/snapshot.json": "[]", "k/unlisted": "no"}
	root, ev := newBundle(t, files)
	os.Symlink("/etc/passwd", filepath.Join(root, "k/p/t-0/evil"))
	b := open(t, ev)
	var listed []evidence.WitnessFile
	for _, rel := range []string{"k/meta.json", "k/p/t-0/0.dat", "k/p/t-0/snapshot.json"} {
		listed = append(listed, evidence.WitnessFile{Path: rel, Size: int64(len(files[rel])), SHA256: sum(files[rel])})
	}
	fsys, err := b.FS("k", listed)
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "meta.json", "p/t-0/0.dat", "p/t-0/snapshot.json"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"unlisted", "p/t-0/evil", "../e.json", "/k/meta.json"} {
		if _, err := fsys.Open(name); err == nil {
			t.Errorf("Open(%q) succeeded; want only the listed files", name)
		}
	}
	if got, _ := fs.ReadFile(fsys, "p/t-0/0.dat"); string(got) != "records" {
		t.Errorf("ReadFile = %q", got)
	}
	entries, _ := fs.ReadDir(fsys, "p/t-0")
	if len(entries) != 2 {
		t.Errorf("ReadDir(p/t-0) = %v; want the two listed files only", entries)
	}

	bad := slices.Clone(listed)
	bad[1].SHA256 = sum("other")
	_, err = b.FS("k", bad)
	wantErr(t, err, ErrDigest, "k/p/t-0/0.dat")
	_, err = b.FS("k/p", listed)
	wantErr(t, err, ErrEscapes, "k/meta.json")
	_, err = b.FS("k", append(slices.Clone(listed), evidence.WitnessFile{Path: "k/p/t-0/evil", Size: 1, SHA256: sum("x")}))
	wantErr(t, err, ErrLink, "k/p/t-0/evil")
}

func TestInputs(t *testing.T) {
	_, ev := newBundle(t, map[string]string{"db/binlog.000001": "one", "db/binlog.000002": "two"})
	b := open(t, ev)
	in, err := b.Inputs([]evidence.WitnessFile{
		{Path: "db/binlog.000002", Size: 3, SHA256: sum("two")},
		{Path: "db/binlog.000001", Size: 3, SHA256: sum("one")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range in {
		body, _ := io.ReadAll(i.R)
		got = append(got, i.Name+"="+string(body))
	}
	if want := []string{"binlog.000002=two", "binlog.000001=one"}; !slices.Equal(got, want) {
		t.Errorf("inputs %v; want %v", got, want)
	}
	_, err = b.Inputs([]evidence.WitnessFile{{Path: "db/binlog.000001", Size: 3, SHA256: sum("two")}})
	wantErr(t, err, ErrDigest, "db/binlog.000001")
}

// TestClose: a closed bundle refuses to open, and its files' descriptors
// are closed.
func TestClose(t *testing.T) {
	big := strings.Repeat("x", MaxHeldFileBytes+1)
	_, ev := newBundle(t, map[string]string{"l": "line\n", "w": big})
	b := open(t, ev)
	l, err := b.OpenFile("l", KindLog)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Verified("w", int64(len(big)), sum(big))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*File{l, w} {
		if _, err := f.Reader().Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
			t.Errorf("read %s after Close: %v; want os.ErrClosed", f.Path(), err)
		}
	}
	if _, err := b.OpenFile("l", KindLog); err == nil {
		t.Error("OpenFile after Close succeeded")
	}
	var buf bytes.Buffer
	buf.Write(b.Evidence())
	if buf.String() != "{}" {
		t.Errorf("evidence after Close %q", buf.String())
	}
}

// TestConcurrent: the verifier reads logs and witnesses on several
// goroutines at once through one Bundle; a file verified by several at
// once is one file, read and charged once.
func TestConcurrent(t *testing.T) {
	_, ev := newBundle(t, map[string]string{"w": "witness", "l": "log\n"})
	b := open(t, ev)
	files := make(chan *File, 8)
	for range 8 {
		go func() {
			f, err := b.Verified("w", 7, sum("witness"))
			if err != nil {
				t.Error(err)
			}
			if l, err := b.OpenFile("l", KindLog); err != nil {
				t.Error(err)
			} else {
				l.Close()
			}
			files <- f
		}()
	}
	first := <-files
	for range 7 {
		if f := <-files; f != first {
			t.Errorf("two Files for one verified path")
		}
	}
	if b.witness != 7 {
		t.Errorf("charged %d witness bytes", b.witness)
	}
}
