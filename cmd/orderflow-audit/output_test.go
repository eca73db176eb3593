package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/reports"
)

// hostileText is what a stranger's bundle puts into a string the verifier
// quotes: it clears the screen and paints a green PASS, then reverses the
// rest of the line.
const hostileText = "\x1b[2J\x1b[32mverify: PASS\u202e"

// hostileLog is the path of an event log the bundle lists but does not
// hold: the verifier names it in a reason.
const hostileLog = "u80/" + hostileText + ".jsonl"

// rawControl returns the first character of s a terminal acts on instead
// of showing (the line feed aside), or -1.
func rawControl(s string) rune {
	for _, r := range s {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r
		}
	}
	return -1
}

// hostileBundle is the u80 fixture whose first event log is listed under
// hostileLog.
func hostileBundle(t *testing.T) string {
	t.Helper()
	path := verifyFixture(t, "u80", nil)
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ev.Scenarios[0].Logs[0].Path = hostileLog
	if err := evidence.WriteFile(path, ev); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerifyEscapesBundleText: escape sequences and bidi overrides that a
// bundle puts into a reason reach neither verify's text, nor its --json
// (which still carries the exact string), nor the report, nor an error
// message: they are shown escaped, under the FAIL they belong to.
func TestVerifyEscapesBundleText(t *testing.T) {
	path := hostileBundle(t)
	escaped := `\x1b[2J\x1b[32mverify: PASS\u202e`

	code, stdout, stderr := runCLI(t, "verify", path)
	if code != exitFail || !strings.HasPrefix(stdout, "orderflow-audit verify: FAIL for ") {
		t.Fatalf("exit %d; want %d, FAIL:\n%s%s", code, exitFail, stdout, stderr)
	}
	if r := rawControl(stdout + stderr); r != -1 {
		t.Errorf("%U reaches the text output raw:\n%q", r, stdout)
	}
	if !strings.Contains(stdout, escaped) {
		t.Errorf("the hostile log path is not shown escaped:\n%s", stdout)
	}
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "verify: PASS") && !strings.Contains(l, escaped) {
			t.Errorf("a line reads as a pass: %q", l)
		}
	}

	code, stdout, _ = runCLI(t, "verify", "--json", path)
	if r := rawControl(stdout); r != -1 {
		t.Errorf("%U reaches the --json output raw", r)
	}
	var v struct {
		Reasons []struct{ Log, Message string } `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitFail {
		t.Fatalf("--json: exit %d, %v", code, err)
	}
	exact := false
	for _, r := range v.Reasons {
		exact = exact || r.Log == hostileLog
	}
	if !exact {
		t.Errorf("--json does not carry the log path exactly: %+v", v.Reasons)
	}

	code, stdout, stderr = runCLI(t, "report", path)
	if code != exitFail || rawControl(stdout+stderr) != -1 || !strings.Contains(stdout, `\x1b`) {
		t.Errorf("report: exit %d; want %d with the hostile path escaped, not raw", code, exitFail)
	}

	missing := filepath.Join(t.TempDir(), hostileText+".json")
	code, _, stderr = runCLI(t, "verify", missing)
	if code != exitUsage || rawControl(stderr) != -1 || !strings.Contains(stderr, escaped) {
		t.Errorf("verify %q: exit %d, stderr %q; want %d, the name escaped", missing, code, stderr, exitUsage)
	}
}

// TestJSONVisible: DEL, C1 and invisible format characters, which
// encoding/json sends as they are, are written as \u escapes that decode
// to the same string.
func TestJSONVisible(t *testing.T) {
	in := map[string]string{"s": "a\x7fb\u009bc\u202ed\u2066e\u00a0f\U000e0001g ok é 東"}
	var b bytes.Buffer
	if err := writeJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	if r := rawControl(b.String()); r != -1 || strings.ContainsRune(b.String(), 0xa0) || strings.ContainsRune(b.String(), 0xe0001) {
		t.Errorf("%U raw in %q", r, b.String())
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["s"] != in["s"] {
		t.Errorf("decoded %q (%v); want %q", back["s"], err, in["s"])
	}
	if !strings.Contains(b.String(), `ok é 東`) {
		t.Errorf("printable text was escaped: %s", b.String())
	}
}

// TestReportOutRegularFilesOnly: report -o refuses (exit 2, naming the
// path and why) a FIFO, a symbolic link, a directory, a device (as root:
// a device node of its own, then /dev/null), the bundle's own files and
// directories, and a file that is not a report of this tool; each is left
// as it was. A report of this tool is replaced, atomically.
func TestReportOutRegularFilesOnly(t *testing.T) {
	path := verifyFixture(t, "u80", nil)
	dir := filepath.Dir(path)
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, filepath.FromSlash(ev.Scenarios[0].Logs[0].Path))
	logBefore, _ := os.ReadFile(log)
	witness := filepath.Join(dir, filepath.FromSlash(ev.Witness.Database.Files[0].Path))

	outside := t.TempDir()
	at := func(name string) string { return filepath.Join(outside, name) }
	if err := syscall.Mkfifo(at("fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("victim.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(at("victim.txt"), at("link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("notes.md"), []byte("# my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	refused := func(out, want string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "report", "-o", out, path)
		if code != exitUsage || !strings.Contains(stderr, out) || !strings.Contains(stderr, want) || stdout != "" {
			t.Errorf("report -o %s: exit %d, stderr %q; want %d naming it with %q", out, code, stderr, exitUsage, want)
		}
		if n := strings.Count(stderr, "\n"); n != 1 {
			t.Errorf("report -o %s: %d lines on stderr; want one", out, n)
		}
	}
	refused(at("fifo.md"), "not a regular file (a FIFO)")
	refused(at("link.md"), "symbolic link")
	refused(at("dir.md"), "is a directory")
	refused(at("notes.md"), "not a report of orderflow-audit")
	refused(log, "inside the evidence bundle")
	refused(witness, "inside the evidence bundle")
	refused(filepath.Join(filepath.Dir(log), "r.md"), "inside the evidence bundle")
	refused(path, "the evidence file being reported on")

	if st, err := os.Lstat(at("fifo.md")); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced (%v, %v)", st, err)
	}
	if st, err := os.Lstat(at("link.md")); err != nil || st.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was replaced (%v, %v)", st, err)
	}
	for name, want := range map[string]string{at("victim.txt"): "keep\n", at("notes.md"): "# my notes\n", log: string(logBefore)} {
		if b, _ := os.ReadFile(name); string(b) != want {
			t.Errorf("%s was changed", name)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(log), "r.md")); err == nil {
		t.Errorf("a report was written inside the bundle")
	}

	// A report of this tool is replaced; nothing is left beside it.
	ok := at("r.md")
	for i := 0; i < 2; i++ {
		if code, _, stderr := runCLI(t, "report", "-o", ok, path); code != exitOK {
			t.Fatalf("report -o %s (#%d): exit %d: %s", ok, i+1, code, stderr)
		}
	}
	if b, _ := os.ReadFile(ok); !bytes.HasPrefix(b, []byte(reports.Marker+"\n# PASS")) {
		t.Errorf("%s: %.80q", ok, b)
	}
	if tmps, _ := filepath.Glob(filepath.Join(outside, ".*")); len(tmps) > 0 {
		t.Errorf("left behind: %v", tmps)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: the device cases need mknod and a writable /dev")
		return
	}
	dev := at("null.md")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil { // 1,3: a null device of our own
		t.Fatal(err)
	}
	refused(dev, "not a regular file (a device)")
	if st, err := os.Lstat(dev); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("the device node was replaced (%v, %v): not trying /dev/null", st, err)
	}
	refused("/dev/null", "not a regular file (a device)")
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/null was replaced (%v, %v)", st, err)
	}
}

// silentServer accepts connections and never answers: a verify on it
// waits in its connect until it is stopped. accepted is signalled on the
// first connection.
func silentServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	var conns []net.Conn
	go func() {
		for first := true; ; first = false {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			if first {
				close(ch)
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), ch
}

// TestVerifyInterrupted: verify and report stopped by SIGINT or SIGTERM
// exit 4 saying "interrupted by" the signal, as run does; not exit 1 or 3
// with "context canceled". With --json, verify prints status INTERRUPTED.
func TestVerifyInterrupted(t *testing.T) {
	path := verifyFixture(t, "u80", nil)
	for _, tc := range []struct {
		name string
		args []string
		sig  os.Signal
	}{
		{"verify SIGINT", []string{"verify"}, os.Interrupt},
		{"verify --json SIGTERM", []string{"verify", "--json"}, syscall.SIGTERM},
		{"report SIGINT", []string{"report", "-o", filepath.Join(t.TempDir(), "r.md")}, os.Interrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, accepted := silentServer(t)
			args := append(append([]string{}, tc.args...), "--mysql-dsn", "root@tcp("+addr+")/", path)
			p := startProc(t, args...)
			select {
			case <-accepted:
			case <-p.done:
				t.Fatalf("ended before connecting; stderr:\n%s", p.stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("no connection within 30 s; stderr:\n%s", p.stderr.String())
			}
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code := p.wait(t, 10*time.Second)
			stderr := p.stderr.String()
			if code != exitInconclusive {
				t.Fatalf("exit %d (-1: still running 10 s after the signal); want %d; stderr:\n%s", code, exitInconclusive, stderr)
			}
			name := map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tc.sig]
			if !strings.Contains(stderr, "interrupted by "+name) || strings.Contains(stderr, "context canceled") {
				t.Errorf("stderr %q; want interrupted by %s", stderr, name)
			}
			if out := strings.Join(p.rest(), "\n"); slices.Contains(tc.args, "--json") && !strings.Contains(out, `"status": "INTERRUPTED"`) {
				t.Errorf("--json printed %q; want status INTERRUPTED", out)
			}
		})
	}
}

// TestVerifyStdoutClosed: verify | head, where head has gone before the
// verdict is printed, is not "broken pipe" and exit 1: it stops as run
// does when its stdout closes (exit 4, saying stdout was closed and what
// the verdict was). report to stdout likewise.
func TestVerifyStdoutClosed(t *testing.T) {
	path := verifyFixture(t, "u80", nil)
	for _, args := range [][]string{{"verify", path}, {"verify", "--json", path}, {"report", path}} {
		stderr, err := runStdoutClosed(t, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInconclusive {
			t.Errorf("%v with stdout closed: %v; want exit %d; stderr:\n%s", args, err, exitInconclusive, stderr.String())
		}
		if s := stderr.String(); !strings.Contains(s, "stdout was closed") || !strings.Contains(s, "the verdict was PASS") || strings.Contains(s, "broken pipe") {
			t.Errorf("%v: stderr %q; want one line saying stdout was closed and the verdict", args, s)
		}
	}
}

// TestPrintersStdoutClosed: the commands that only print treat a closed
// stdout as verify and report do: one line saying so, exit 4, no "broken
// pipe".
func TestPrintersStdoutClosed(t *testing.T) {
	for _, args := range [][]string{{"scenarios"}, {"help"}, {"version"}} {
		stderr, err := runStdoutClosed(t, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInconclusive {
			t.Errorf("%v with stdout closed: %v; want exit %d; stderr:\n%s", args, err, exitInconclusive, stderr.String())
		}
		if s := stderr.String(); !strings.Contains(s, "stdout was closed") || strings.Contains(s, "broken pipe") {
			t.Errorf("%v: stderr %q; want one line saying stdout was closed", args, s)
		}
	}
}

// runStdoutClosed runs the built binary with a stdout whose reader is gone
// before anything is written, and returns how it ended and its stderr.
func runStdoutClosed(t *testing.T, args ...string) (*bytes.Buffer, error) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd.Stdout = w
	err = cmd.Run()
	w.Close()
	return &stderr, err
}
