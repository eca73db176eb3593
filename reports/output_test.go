package reports

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// hostile is what a stranger's bundle may put into any string the
// verifier quotes: a screen clear, a green PASS, a carriage return, a C1
// CSI and a right-to-left override.
const hostile = "\x1b[2J\x1b[H\x1b[32morderflow-audit verify: PASS\x1b[0m\r\u009b2J\u202etxt\u2066"

// rawControl returns the first character of s that a terminal or a
// Markdown viewer would act on instead of showing, or -1.
func rawControl(s string) rune {
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r
		}
	}
	return -1
}

// TestMarkdownEscapesControls: escape sequences and bidi characters in a
// reason (its rule, scenario, log, field, values, witness and message)
// and in a warning do not reach the Markdown raw; they are shown escaped.
func TestMarkdownEscapesControls(t *testing.T) {
	ev := loadEvidence(t, "testdata/u80")
	v := loadVerdict(t, filepath.Join("testdata/u80", "verdict-fail.json"))
	for i := range v.Reasons {
		r := &v.Reasons[i]
		r.Message += hostile
		r.Field += hostile
		r.Claimed += hostile
		r.Recomputed += hostile
		r.Witness = "w" + hostile
		r.Log += hostile
		r.Rule += hostile
	}
	v.Warnings = append(v.Warnings, hostile)
	v.Unwitnessed = append(v.Unwitnessed, hostile)
	md, err := Markdown(ev, v, DirLogs("testdata/u80"))
	if err != nil {
		t.Fatal(err)
	}
	if r := rawControl(string(md)); r != -1 {
		t.Fatalf("%U reaches the Markdown raw", r)
	}
	if !bytes.Contains(md, []byte(`\x1b`)) || !bytes.Contains(md, []byte(`\u202e`)) {
		t.Errorf("the hostile text is not shown escaped in the report")
	}
	if !bytes.HasPrefix(md, []byte(Marker+"\n")) {
		t.Errorf("the report does not begin with %q: %.80q", Marker, md)
	}
}

// reportDir is an evidence file with its bundle (logs and witness files)
// in a temporary directory, and a report of this tool beside it.
func reportDir(t *testing.T) (dir, ev string) {
	t.Helper()
	dir = t.TempDir()
	ev = filepath.Join(dir, "u80.json")
	src := filepath.Join("..", "checks", "testdata", "u80")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.md"), []byte(Marker+"\n# PASS: old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, ev
}

// TestCheckOutputRefuses: -o names a regular file outside the bundle that
// is new or a report of this tool; everything else is refused with
// ErrBadOutput naming the path and why, and nothing is written.
func TestCheckOutputRefuses(t *testing.T) {
	dir, evPath := reportDir(t)
	ev, _, err := evidence.ReadFile(evPath)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Witness == nil || ev.Witness.Database == nil || len(ev.Witness.Database.Files) == 0 {
		t.Fatal("fixture without database witness files")
	}
	witness := filepath.Join(dir, filepath.FromSlash(ev.Witness.Database.Files[0].Path))
	log := filepath.Join(dir, filepath.FromSlash(ev.Scenarios[0].Logs[0].Path))

	mk := func(name string, make func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := mk("fifo.md", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	link := mk("link.md", func(p string) error { return os.Symlink(filepath.Join(dir, "old.md"), p) })
	dangling := mk("dangling.md", func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere.md"), p) })
	sub := mk("sub.md", func(p string) error { return os.Mkdir(p, 0o755) })
	foreign := mk("notes.md", func(p string) error { return os.WriteFile(p, []byte("# my notes\n"), 0o644) })
	empty := mk("empty.md", func(p string) error { return os.WriteFile(p, nil, 0o644) })
	hard := mk("hard.md", func(p string) error { return os.Link(log, p) })
	sock := filepath.Join(dir, "s.md")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
	} else {
		sock = ""
	}
	for _, tc := range []struct{ out, want string }{
		{evPath, "the evidence file"},
		{dir + "/./u80.json", "the evidence file"},
		{fifo, "not a regular file"},
		{link, "symbolic link"},
		{dangling, "symbolic link"},
		{sub, "directory"},
		{"/dev/null", "not a regular file"},
		{sock, "not a regular file"},
		{foreign, "not a report of orderflow-audit"},
		{empty, "not a report of orderflow-audit"},
		{log, "inside the evidence bundle"},
		{witness, "inside the evidence bundle"},
		{filepath.Join(filepath.Dir(log), "new.md"), "inside the evidence bundle"},
		{filepath.Join(dir, "u80", "new.md"), "inside the evidence bundle"},
		{hard, "one of the evidence bundle's files"},
		{filepath.Join(dir, "missing", "r.md"), "no such file or directory"},
	} {
		if tc.out == "" {
			continue
		}
		err := CheckOutput(tc.out, evPath, ev)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.out) {
			t.Errorf("CheckOutput(%s): %v; want an error naming it with %q", tc.out, err, tc.want)
			continue
		}
		if !errors.Is(err, evidence.ErrBadOutput) {
			t.Errorf("CheckOutput(%s): %v does not wrap ErrBadOutput", tc.out, err)
		}
		if err := WriteFile(tc.out, evPath, ev, []byte(Marker+"\nnew\n")); err == nil {
			t.Errorf("WriteFile(%s) wrote", tc.out)
		}
	}
	if b, _ := os.ReadFile(foreign); string(b) != "# my notes\n" {
		t.Errorf("the foreign file was changed: %q", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v %v", st, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode().Type() != os.ModeSymlink {
		t.Errorf("the symbolic link was replaced: %v %v", st, err)
	}
	legacy := filepath.Join(dir, "legacy.md") // a report rendered before the marker
	if err := os.WriteFile(legacy, []byte("# FAIL (unwitnessed): orderflow-audit run r1\n\n**Why:** x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake.md")
	if err := os.WriteFile(fake, []byte("# FAIL: orderflow-audit run r1\nmy notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutput(fake, evPath, ev); err == nil {
		t.Errorf("CheckOutput(%s) accepts a file with a title alone", fake)
	}
	for _, ok := range []string{filepath.Join(dir, "old.md"), legacy, filepath.Join(dir, "fresh.md"), filepath.Join(dir, "u80.md")} {
		if err := CheckOutput(ok, evPath, ev); err != nil {
			t.Errorf("CheckOutput(%s): %v; want it accepted", ok, err)
		}
		if err := WriteFile(ok, evPath, ev, []byte(Marker+"\nnew\n")); err != nil {
			t.Errorf("WriteFile(%s): %v", ok, err)
		}
		if b, _ := os.ReadFile(ok); string(b) != Marker+"\nnew\n" {
			t.Errorf("%s holds %q", ok, b)
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestCheckOutputRelative: the bundle is recognised whether -o and the
// evidence path are given relative or absolute.
func TestCheckOutputRelative(t *testing.T) {
	dir, evPath := reportDir(t)
	ev, _, err := evidence.ReadFile(evPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	log := filepath.FromSlash(ev.Scenarios[0].Logs[0].Path)
	for _, tc := range []struct{ out, ev string }{
		{log, "u80.json"},
		{filepath.Join(dir, log), "u80.json"},
		{log, evPath},
		{filepath.Join("u80", "new.md"), evPath},
		{"./u80.json", evPath},
	} {
		if err := CheckOutput(tc.out, tc.ev, ev); err == nil {
			t.Errorf("CheckOutput(%s, %s) accepts it", tc.out, tc.ev)
		}
	}
	if err := CheckOutput("r.md", evPath, ev); err != nil {
		t.Errorf("CheckOutput(r.md): %v", err)
	}
}
