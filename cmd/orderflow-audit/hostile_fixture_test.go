package main

// The sandbox and the process harness of TestHostileBundles
// (hostile_bundles_test.go): a world per case with a copy of the committed
// example bundle, sentinel files around it, a resealer that fixes up every
// digest the evidence records after a case has mutated the bundle, and a
// runner that measures a subprocess's time and peak memory and kills it
// past the limits, so that a regression cannot take the machine with it.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Limits of the acceptance (issue #20): every process ends within 60 s
// under 1 GiB of resident memory.
const (
	hostileTimeout = 60 * time.Second
	hostileMaxRSS  = 1 << 30
	hostileOutCap  = 8 << 20 // bytes of a process's stdout/stderr kept
)

// The sentinel contents planted around the bundle.
const (
	hostileBashrc  = "# sentinel ~/.bashrc: a verifier must never write here\nexport PS1='$ '\n"
	hostileForeign = "# a foreign file: not a report of orderflow-audit\n"
)

var (
	hostilePristineOnce sync.Once
	hostilePristineDir  string // a copy of evidence/example: u80.json, u80/
	hostilePristineRaw  []byte // its u80.json
	hostilePristineErr  error
)

// hostilePristine copies the committed example once into a directory
// removed at the end of the test (the caller's cleanup).
func hostilePristine(t *testing.T) string {
	t.Helper()
	hostilePristineOnce.Do(func() {
		src := filepath.Dir(committedEvidence)
		dir, err := os.MkdirTemp("", "ofa-hostile-pristine-")
		if err != nil {
			hostilePristineErr = err
			return
		}
		hostilePristineDir = dir
		if err := hostileCopyTree(filepath.Join(src, "u80"), filepath.Join(dir, "u80")); err != nil {
			hostilePristineErr = err
			return
		}
		hostilePristineRaw, hostilePristineErr = os.ReadFile(committedEvidence)
		if hostilePristineErr == nil {
			hostilePristineErr = os.WriteFile(filepath.Join(dir, "u80.json"), hostilePristineRaw, 0o644)
		}
	})
	if hostilePristineErr != nil {
		t.Fatalf("pristine bundle: %v", hostilePristineErr)
	}
	return hostilePristineDir
}

// hostileCopyTree copies directories and regular files (nothing else is in
// the committed example).
func hostileCopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// hostileWorld is one case's sandbox. The two levels w1/w2 keep the ".."
// of a hostile bundle (resolved from the bundle or from the verifier's
// copy in TMPDIR) inside root, where the snapshot sees what it changes:
//
//	root/w1/w2/home/.bashrc      HOME, with a sentinel .bashrc
//	root/w1/w2/tmp/              TMPDIR
//	root/w1/w2/bundle/u80.json   the evidence
//	root/w1/w2/bundle/u80/...    its logs and witnesses
//	root/w1/w2/outside/          foreign files; report -o targets; cwd
type hostileWorld struct {
	t                              *testing.T
	root                           string
	home, tmp, bundle, outside, ev string
	doc                            *evidence.Evidence
	edits                          []func(ev *evidence.Evidence)
	post                           []func()
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	root := t.TempDir()
	base := filepath.Join(root, "w1", "w2")
	w := &hostileWorld{t: t, root: root,
		home: filepath.Join(base, "home"), tmp: filepath.Join(base, "tmp"),
		bundle: filepath.Join(base, "bundle"), outside: filepath.Join(base, "outside")}
	w.ev = filepath.Join(w.bundle, "u80.json")
	for _, d := range []string{w.home, w.tmp, w.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pristine := hostilePristine(t)
	if err := hostileCopyTree(pristine, w.bundle); err != nil {
		t.Fatal(err)
	}
	w.write(filepath.Join(w.home, ".bashrc"), hostileBashrc)
	w.write(filepath.Join(w.outside, "foreign.md"), hostileForeign)
	// Everything planted so far dates from an hour ago: a rewrite with
	// the same bytes still shows in the mtime.
	past := time.Now().Add(-time.Hour)
	for _, p := range []string{filepath.Join(w.home, ".bashrc"), filepath.Join(w.outside, "foreign.md")} {
		os.Chtimes(p, past, past)
	}
	w.doc = new(evidence.Evidence)
	// Decoded without the schema: the cases write what the schema refuses.
	if err := json.Unmarshal(hostilePristineRaw, w.doc); err != nil {
		t.Fatal(err)
	}
	return w
}

// b is the absolute path of a bundle-relative (slash) path.
func (w *hostileWorld) b(rel string) string { return filepath.Join(w.bundle, filepath.FromSlash(rel)) }

func (w *hostileWorld) write(p, s string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *hostileWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// replace removes the file at the bundle-relative rel so that a case can
// put something else there.
func (w *hostileWorld) replace(rel string) string {
	w.t.Helper()
	p := w.b(rel)
	w.must(os.RemoveAll(p))
	return p
}

// edit queues a change of the evidence, applied after the reseal (so that
// it can set what the reseal would overwrite, a hostile path).
func (w *hostileWorld) edit(f func(ev *evidence.Evidence)) { w.edits = append(w.edits, f) }

// then queues a step after the evidence is written (to replace u80.json
// itself).
func (w *hostileWorld) then(f func()) { w.post = append(w.post, f) }

// seal re-digests every log and witness file the evidence lists (and
// lists every file now under a witness directory), applies the queued
// edits and writes u80.json, so that the parsers, not the sha256 and size
// checks, face the bytes a case planted.
func (w *hostileWorld) seal() {
	w.t.Helper()
	ev := w.doc
	for i := range ev.Scenarios {
		for j := range ev.Scenarios[i].Logs {
			ref := &ev.Scenarios[i].Logs[j]
			if sum, _, lines, ok := hostileDigest(w.b(ref.Path)); ok {
				ref.SHA256, ref.Lines = sum, lines
			}
		}
	}
	if wt := ev.Witness; wt != nil {
		if wt.Database != nil {
			wt.Database.Files = w.resealWitness(wt.Database.Files, "u80/witness/db")
		}
		if wt.Broker != nil {
			wt.Broker.Files = w.resealWitness(wt.Broker.Files, "u80/witness/kafka")
		}
	}
	for _, f := range w.edits {
		f(ev)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	w.must(enc.Encode(ev))
	w.must(os.WriteFile(w.ev, buf.Bytes(), 0o644))
	for _, f := range w.post {
		f()
	}
}

// resealWitness lists every non-directory entry under dir (symlinks,
// FIFOs and devices included: a reader of the directory meets them) and
// sets the size and sha256 of each listed entry that is, or links to, a
// regular file.
func (w *hostileWorld) resealWitness(files []evidence.WitnessFile, dir string) []evidence.WitnessFile {
	w.t.Helper()
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	root := w.b(dir)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return nil // a symlinked directory: its files are listed under their own paths
		}
		rel, _ := filepath.Rel(root, p)
		if rp := path.Join(dir, filepath.ToSlash(rel)); !have[rp] {
			files = append(files, evidence.WitnessFile{Path: rp})
		}
		return nil
	})
	for i := range files {
		if sum, size, _, ok := hostileDigest(w.b(files[i].Path)); ok {
			files[i].SHA256, files[i].Size = sum, size
		}
	}
	slices.SortFunc(files, func(a, b evidence.WitnessFile) int { return strings.Compare(a.Path, b.Path) })
	return files
}

// hostileDigest is the sha256, size and newline count of the regular file
// p names (following links); ok is false for anything else (never opened:
// a FIFO would block). A sparse file is taken to be all zeros, the size
// bombs the cases plant, and is digested without reading it.
func hostileDigest(p string) (sum string, size, lines int64, ok bool) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return "", 0, 0, false
	}
	if sys, _ := st.Sys().(*syscall.Stat_t); sys != nil && st.Size() > 1<<20 && sys.Blocks*512 < st.Size()/2 {
		return hostileZeroSHA256(st.Size()), st.Size(), 0, true
	}
	f, err := os.Open(p)
	if err != nil {
		return "", 0, 0, false
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		h.Write(buf[:n])
		size += int64(n)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err != nil {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil)), size, lines, true
}

var (
	hostileZeroMu   sync.Mutex
	hostileZeroSums = map[int64]string{}
)

// hostileZeroSHA256 is the sha256 of n zero bytes, computed once per n.
func hostileZeroSHA256(n int64) string {
	hostileZeroMu.Lock()
	defer hostileZeroMu.Unlock()
	if s, ok := hostileZeroSums[n]; ok {
		return s
	}
	h := sha256.New()
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		h.Write(zero[:min(left, int64(len(zero)))])
	}
	s := hex.EncodeToString(h.Sum(nil))
	hostileZeroSums[n] = s
	return s
}

// hostileSparse makes p a sparse file of size zero bytes.
func (w *hostileWorld) sparse(p string, size int64) {
	w.t.Helper()
	f, err := os.Create(p)
	w.must(err)
	w.must(f.Truncate(size))
	w.must(f.Close())
}

// logRef is the scenario's log of actor.
func hostileLogRef(t *testing.T, ev *evidence.Evidence, scenario, actor string) *evidence.LogRef {
	t.Helper()
	for i := range ev.Scenarios {
		if ev.Scenarios[i].ID != scenario {
			continue
		}
		for j := range ev.Scenarios[i].Logs {
			if ev.Scenarios[i].Logs[j].Actor == actor {
				return &ev.Scenarios[i].Logs[j]
			}
		}
	}
	t.Fatalf("the example has no log of %s in %s", actor, scenario)
	return nil
}

func hostileScenario(t *testing.T, ev *evidence.Evidence, id string) *evidence.Scenario {
	t.Helper()
	for i := range ev.Scenarios {
		if ev.Scenarios[i].ID == id {
			return &ev.Scenarios[i]
		}
	}
	t.Fatalf("the example has no scenario %s", id)
	return nil
}

// hostileEntry is what a snapshot keeps of one path: its type and
// permissions, size, mtime, link target and (small regular files) sha256.
type hostileEntry struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	link  string
	sum   string
	rdev  uint64
}

func (e hostileEntry) String() string {
	return fmt.Sprintf("%v size %d mtime %s link %q sha256 %.12s rdev %d", e.mode, e.size, e.mtime.Format(time.RFC3339Nano), e.link, e.sum, e.rdev)
}

func hostileStat(p string) (hostileEntry, bool) {
	st, err := os.Lstat(p)
	if err != nil {
		return hostileEntry{}, false
	}
	e := hostileEntry{mode: st.Mode(), size: st.Size(), mtime: st.ModTime()}
	if sys, _ := st.Sys().(*syscall.Stat_t); sys != nil {
		e.rdev = uint64(sys.Rdev)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		e.link, _ = os.Readlink(p)
	case st.Mode().IsRegular() && st.Size() <= 8<<20:
		if b, err := os.ReadFile(p); err == nil {
			s := sha256.Sum256(b)
			e.sum = hex.EncodeToString(s[:])
		}
	}
	return e, true
}

// snapshot records every path under root (links not followed) but those
// under skip, plus the system files a hostile bundle aims at.
func hostileSnapshot(root string, skip ...string) map[string]hostileEntry {
	out := map[string]hostileEntry{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if e, ok := hostileStat(p); ok {
			out[p] = e
		}
		return nil
	})
	for _, p := range []string{"/etc/passwd", "/dev/null", "/dev/zero"} {
		if e, ok := hostileStat(p); ok {
			e.mtime = time.Time{} // a device's times move with every use
			out[p] = e
		}
	}
	return out
}

// hostileChanged lists what differs between two snapshots.
func hostileChanged(before, after map[string]hostileEntry) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, "removed "+p)
		case a != b:
			out = append(out, fmt.Sprintf("changed %s: was %s, now %s", p, b, a))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("created %s (%s)", p, a))
		}
	}
	slices.Sort(out)
	return out
}

// hostileResult is one process's outcome.
type hostileResult struct {
	args           []string
	show           string // args with the world's directories shortened
	code           int    // -1: killed
	stdout, stderr string
	elapsed        time.Duration
	maxRSS         int64  // bytes, peak resident (the larger of VmHWM polled and rusage)
	killed         string // why the harness killed it: "timeout", "memory"
}

func (r hostileResult) String() string {
	return fmt.Sprintf("%s: exit %d in %v, max RSS %d MiB%s", r.show, r.code,
		r.elapsed.Round(time.Millisecond), r.maxRSS>>20, map[bool]string{true: ", killed: " + r.killed}[r.killed != ""])
}

// limitedBuffer keeps the first hostileOutCap bytes written to it.
type limitedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := hostileOutCap - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hostileEnv is the environment of every process of a case: HOME and
// TMPDIR inside the world.
func (w *hostileWorld) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+w.home, "TMPDIR="+w.tmp)
}

// run runs the binary with args in the world (cwd outside/), kills it
// after hostileTimeout or past hostileMaxRSS, and reports what happened.
func (w *hostileWorld) run(args ...string) hostileResult {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(w.t), args...)
	cmd.Env, cmd.Dir = w.env(), w.outside
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	res := hostileResult{args: args, show: strings.ReplaceAll(strings.Join(args, " "), filepath.Dir(w.bundle)+"/", "")}
	stop := make(chan struct{})
	var (
		mu   sync.Mutex
		peak int64
		oom  bool
	)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			hwm := hostileProcKB(cmd.Process.Pid, "VmHWM") << 10
			mu.Lock()
			peak = max(peak, hwm)
			if hwm > hostileMaxRSS && !oom {
				oom = true
				cmd.Process.Kill()
			}
			mu.Unlock()
		}
	}()
	err := cmd.Wait()
	close(stop)
	res.elapsed = time.Since(start)
	res.stdout, res.stderr = stdout.String(), stderr.String()
	mu.Lock()
	res.maxRSS = peak
	if oom {
		res.killed = "memory"
	}
	mu.Unlock()
	if ctx.Err() != nil && res.killed == "" {
		res.killed = "timeout"
	}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.maxRSS = max(res.maxRSS, ru.Maxrss<<10) // kB on Linux
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.code = 0
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		res.code = -1
	}
	return res
}

// hostileProcKB reads a "Name:  N kB" line of /proc/pid/status (0 when
// the process is gone).
func hostileProcKB(pid int, name string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// hostileLeftovers lists what the verifier left in TMPDIR of its broker
// copies.
func hostileLeftovers(tmp string) []string {
	ents, _ := os.ReadDir(tmp)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "ofa-kfake-read-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// hostileTail is the end of s, for messages.
func hostileTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// hostileHead is the start of s, for messages (a verdict comes first).
func hostileHead(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
