package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// LogDir returns the directory of the event logs of the evidence file out:
// out without its ".json", beside it.
func LogDir(out string) string { return strings.TrimSuffix(out, ".json") }

// CheckOut validates the evidence path before anything runs. It refuses
// (wrapping evidence.ErrBadOutput) a path that does not end in ".json"; an
// existing file there that is not an evidence file of this tool, or is not
// a regular file; an existing log directory beside it (LogDir) that holds
// anything but our event logs; and a place where files cannot be created.
// Run replaces only what CheckOut accepted, and deletes nothing else.
func CheckOut(out string) error {
	base := filepath.Base(out)
	if filepath.Ext(base) != ".json" || base == ".json" || strings.HasSuffix(out, string(filepath.Separator)) {
		return evidence.BadOutputf("--out %s: the evidence file's name must end in .json (its logs go to the directory of the same name without .json)", out)
	}
	if st, err := os.Lstat(out); err == nil {
		ours, rerr := evidence.IsEvidenceFile(out)
		switch {
		case st.IsDir():
			return evidence.BadOutputf("--out %s is a directory", out)
		case rerr != nil:
			return evidence.BadOutputf("--out %s exists and cannot be read: %v", out, rerr)
		case !ours:
			return evidence.BadOutputf("--out %s exists and is not an orderflow-audit evidence file: refusing to overwrite it", out)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return evidence.BadOutputf("--out %s: %v", out, err)
	}
	logs := LogDir(out)
	if st, err := os.Lstat(logs); err == nil {
		if !st.IsDir() {
			return evidence.BadOutputf("the log directory %s of --out %s exists and is not a directory: refusing to replace it", logs, out)
		}
		if err := onlyOurLogs(logs); err != nil {
			return evidence.BadOutputf("the log directory %s of --out %s holds other files than our event logs (%v): refusing to replace it", logs, out, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return evidence.BadOutputf("%s: %v", logs, err)
	}
	if err := evidence.CheckWritableDir(filepath.Dir(out)); err != nil {
		return evidence.BadOutputf("--out %s: %v", out, err)
	}
	return nil
}

// onlyOurLogs checks that dir holds nothing but event logs and witnesses
// as a run lays them out: <scenario>/<actor>.jsonl, each empty or starting
// with an event of that scenario, and witness/ (witnessEntry). Anything
// else (another file, a deeper directory, a symlink, a .jsonl that is not
// our event log) is an error naming it.
func onlyOurLogs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		depth := len(parts)
		switch {
		case p == dir:
			return nil
		case parts[0] == "witness":
			if !witnessEntry(p, parts[1:], d) {
				return fmt.Errorf("%s is not a witness file of this tool", p)
			}
			return nil
		case d.IsDir() && depth == 1:
			return nil
		case d.Type().IsRegular() && depth == 2 && strings.HasSuffix(p, ".jsonl"):
			if !isOurLog(p, filepath.Base(filepath.Dir(p))) {
				return fmt.Errorf("%s is not an event log of this tool", p)
			}
			return nil
		}
		return fmt.Errorf("%s is not an event log of this tool", p)
	})
}

// isOurLog tells whether path is empty or begins with an event line of
// scenario (a killed actor may leave its first line cut off: then the
// start of an event is enough).
func isOurLog(path, scenario string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	switch {
	case len(line) == 0 && errors.Is(err, io.EOF):
		return true
	case errors.Is(err, io.EOF):
		return bytes.HasPrefix(line, []byte(`{"seq":`))
	case err != nil:
		return false
	}
	e, derr := evidence.DecodeEvent(bytes.TrimSuffix(line, []byte("\n")))
	return derr == nil && e.Scenario == scenario && e.RunID != ""
}

// Sentinel errors of the bundle's output. Each is also
// evidence.ErrBadOutput (exit 2): the run could not put its bundle where
// --out says, and nothing there was replaced.
var (
	// ErrOutBusy: another run holds the lock of the same --out.
	ErrOutBusy = errors.New("--out is in use by another run")
	// ErrBundleWrite: a write into the staged bundle failed (a full disk,
	// a quota, an I/O error): the run's bundle is incomplete and is not
	// put in place.
	ErrBundleWrite = errors.New("the bundle could not be written")
)

// outError marks err with sentinel and evidence.ErrBadOutput (exit 2).
func outError(sentinel error, format string, args ...any) error {
	return &marked{&marked{fmt.Errorf(format, args...), sentinel}, evidence.ErrBadOutput}
}

// writeFailed tells whether err is the file system refusing a write: no
// space left, a quota, an I/O error, a read-only file system, a file too
// large. Such an error while the bundle is staged makes the run an error
// (ErrBundleWrite), never a witness said to be missing or a FAIL of the
// system under test.
func writeFailed(err error) bool {
	for _, errno := range writeErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// writeErrnos are the errors of a file system that refuses a write.
var writeErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EFBIG}

// noteWrite records the first write failure (writeFailed) of the run's
// staged bundle, what says where it happened; other errors are left to
// their callers.
func (rs *runScope) noteWrite(what string, err error) {
	if err != nil && writeFailed(err) && rs.writeErr == nil {
		rs.writeErr = fmt.Errorf("%s: %w", what, err)
	}
}

// noteBrokerWrite is noteWrite for what the embedded broker logged: its
// errors come as text (infra.Kafka.Shutdown), so the text of a write
// failure is looked for. Only the broker's own data directory, inside the
// staged bundle, is written by it.
func (rs *runScope) noteBrokerWrite(what string, err error) {
	if err == nil || rs.writeErr != nil {
		return
	}
	for _, errno := range writeErrnos {
		if strings.Contains(err.Error(), errno.Error()) {
			rs.writeErr = fmt.Errorf("%s: %w", what, err)
			return
		}
	}
}

// lockName is the lock file of --out: .<base>.lock beside it.
func lockName(out string) string {
	return filepath.Join(filepath.Dir(out), "."+filepath.Base(LogDir(out))+".lock")
}

// lockOut takes the lock of --out (an exclusive flock on lockName, which
// holds the pid of its holder) for the whole run, so that two runs with
// the same --out cannot interleave their bundles: the second is refused
// with ErrOutBusy (exit 2) before it starts anything. unlock removes the
// lock file, then releases the lock; a run killed outright leaves the file,
// unlocked, and the next run takes it.
func lockOut(out string) (unlock func(), err error) {
	dir := filepath.Dir(out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, evidence.BadOutputf("create %s: %v", dir, err)
	}
	path := lockName(out)
	f, err := openLock(path)
	if errors.Is(err, errLocked) {
		holder := "another run"
		if b, rerr := os.ReadFile(path); rerr == nil && len(bytes.TrimSpace(b)) > 0 && len(b) < 32 {
			holder = "another run (pid " + string(bytes.TrimSpace(b)) + ")"
		}
		return nil, outError(ErrOutBusy, "--out %s is in use: %s holds %s; wait for it to end or choose another --out", out, holder, path)
	}
	if err != nil {
		return nil, evidence.BadOutputf("lock --out %s: %v", out, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// Removed while held: a run that opened the file meanwhile finds,
		// once it has the lock, that the name is no longer its file
		// (openLock), and opens the name again.
		_ = os.Remove(path)
		f.Close()
	}, nil
}

// makeStage creates the output directory and the staging directory of
// this run's bundle inside it, .<base>-<run id>-<random>/, mode 0755 like
// the log directories. The bundle is staged there whole (<base>/ with the
// logs and witnesses, then <base>.json) and put in place by commitBundle,
// so that a run that fails at any point leaves the previous bundle as it
// was. It returns the staging directory and the logs' directory in it.
func makeStage(out, runID string, now time.Time, log *slog.Logger) (root, logs string, err error) {
	outDir := filepath.Dir(out)
	base := filepath.Base(LogDir(out))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", evidence.BadOutputf("create %s: %v", outDir, err)
	}
	removeStaleStages(outDir, base, now, log)
	root, err = os.MkdirTemp(outDir, "."+base+"-"+runID+"-")
	if err != nil {
		return "", "", evidence.BadOutputf("create a staging directory in %s: %v", outDir, err)
	}
	logs = filepath.Join(root, base)
	if err := os.Chmod(root, 0o755); err != nil {
		os.RemoveAll(root)
		return "", "", evidence.BadOutputf("staging directory %s: %v", root, err)
	}
	if err := os.Mkdir(logs, 0o755); err != nil {
		os.RemoveAll(root)
		return "", "", evidence.BadOutputf("create %s: %v", logs, err)
	}
	return root, logs, nil
}

// commitBundle puts the bundle staged in root (<base>/ and, written here,
// <base>.json with data) in place of --out and its logs. Everything is
// written and synced inside root first: a failure up to then (a full
// disk) replaces nothing. Then the logs are exchanged with the previous
// ones in one step (renameat2 RENAME_EXCHANGE; on a file system without
// it, the previous logs are moved into root first) and the evidence file
// is renamed over the previous one; if that rename fails, the exchange is
// undone. The two renames are microseconds apart; the previous logs, back
// in root, are removed last.
func commitBundle(root, out string, data []byte) error {
	base := filepath.Base(LogDir(out))
	staged, stagedOut := filepath.Join(root, base), filepath.Join(root, filepath.Base(out))
	if err := writeSynced(stagedOut, data); err != nil {
		return outError(ErrBundleWrite, "write the evidence file into %s: %v; nothing was replaced", root, err)
	}
	if err := syncTree(root); err != nil {
		return outError(ErrBundleWrite, "sync the staged bundle %s: %v; nothing was replaced", root, err)
	}
	undo, err := swapLogs(staged, LogDir(out), root)
	if err != nil {
		return err
	}
	if err := os.Rename(stagedOut, out); err != nil {
		if uerr := undo(); uerr != nil {
			return outError(ErrBundleWrite, "put %s in place: %v (and putting the previous logs back failed: %v; they are in %s)",
				out, err, uerr, staged)
		}
		return outError(ErrBundleWrite, "put %s in place: %v; nothing was replaced", out, err)
	}
	if err := syncDir(filepath.Dir(out)); err != nil {
		return outError(ErrBundleWrite, "the bundle %s is in place but its directory could not be synced: %v", out, err)
	}
	return os.RemoveAll(root) // the previous logs
}

// swapLogs puts the staged logs at dst, keeping the previous ones (when
// dst exists: checked again to hold nothing but our event logs, since it
// may have changed while the run ran) at staged, and returns how to undo
// it.
func swapLogs(staged, dst, root string) (undo func() error, err error) {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(staged, dst); err != nil {
			return nil, outError(ErrBundleWrite, "move the logs to %s: %v; nothing was replaced", dst, err)
		}
		return func() error { return os.Rename(dst, staged) }, nil
	}
	if err := onlyOurLogs(dst); err != nil {
		return nil, evidence.BadOutputf("refusing to replace %s: %v", dst, err)
	}
	err = exchange(staged, dst)
	if err == nil {
		return func() error { return exchange(staged, dst) }, nil
	}
	if !errors.Is(err, errNoExchange) {
		return nil, outError(ErrBundleWrite, "exchange the logs %s with %s: %v; nothing was replaced", staged, dst, err)
	}
	old := filepath.Join(root, filepath.Base(dst)+".old")
	if err := os.Rename(dst, old); err != nil {
		return nil, outError(ErrBundleWrite, "move the previous logs %s aside: %v; nothing was replaced", dst, err)
	}
	if err := os.Rename(staged, dst); err != nil {
		if rerr := os.Rename(old, dst); rerr != nil {
			return nil, outError(ErrBundleWrite, "move the logs to %s: %v (and restoring the previous logs from %s failed: %v)", dst, err, old, rerr)
		}
		return nil, outError(ErrBundleWrite, "move the logs to %s: %v; nothing was replaced", dst, err)
	}
	return func() error {
		if err := os.Rename(dst, staged); err != nil {
			return err
		}
		return os.Rename(old, dst)
	}, nil
}

// writeSynced writes data to a new file at path (mode 0644) and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncTree syncs every regular file and directory under dir (the event
// logs and the binlog copies are synced as they are closed; the embedded
// broker's data directory is not), so that the bundle is on disk before
// it is put in place and a write the disk refused late surfaces here.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file or directory", p)
		}
		return syncPath(p)
	})
}

func syncDir(dir string) error { return syncPath(dir) }

// syncPath fsyncs the file or directory at p.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// staleStage is how old a staging directory must be before a later run
// removes it: only a run killed outright (SIGKILL) leaves one behind.
const staleStage = time.Hour

// removeStaleStages removes the staging directories (.<base>-<run>-*) that
// runs killed outright left in outDir, when they are older than staleStage
// and hold nothing but a staged bundle (isStage).
func removeStaleStages(outDir, base string, now time.Time, log *slog.Logger) {
	matches, _ := filepath.Glob(filepath.Join(outDir, "."+base+"-*"))
	for _, m := range matches {
		st, err := os.Lstat(m)
		if err != nil || !st.IsDir() || now.Sub(st.ModTime()) < staleStage || !isStage(m, base) {
			continue
		}
		if err := os.RemoveAll(m); err != nil {
			log.Warn("remove stale staging directory", "dir", m, "err", err)
		}
	}
}

// isStage tells whether dir holds nothing but a staged bundle: <base>/
// (and <base>.old/) holding our event logs and witnesses, and
// <base>.json, an evidence file of this tool; or, as runs staged before
// the evidence file was staged too, our event logs directly.
func isStage(dir, base string) bool {
	if onlyOurLogs(dir) == nil {
		return true
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range es {
		p := filepath.Join(dir, e.Name())
		switch {
		case (e.Name() == base || e.Name() == base+".old") && e.IsDir():
			if onlyOurLogs(p) != nil {
				return false
			}
		case e.Name() == base+".json" && e.Type().IsRegular():
			if ours, err := evidence.IsEvidenceFile(p); err != nil || !ours {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// binlogMagic starts every binary log file.
var binlogMagic = []byte("\xfebin")

var (
	// binlogNameRE: a binlog file as a server names it (<base>.000001).
	binlogNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.[0-9]{6,}$`)
	// kfakeTopRE: a file at the top of kfake's data directory (meta.json,
	// topics.json, groups.log, ...; .tmp while it writes one).
	kfakeTopRE = regexp.MustCompile(`^[a-z_]+\.(json|log)(\.tmp)?$`)
	// kfakePartRE: a file of one partition's directory.
	kfakePartRE = regexp.MustCompile(`^([0-9]+\.(dat|idx)|snapshot\.json(\.tmp)?)$`)
)

// witnessEntry tells whether p, at parts below witness/, is something a
// run writes there: db/ holding binlog files (a binlog name, starting with
// the binlog magic); kafka/ laid out as kfake's data directory (files at
// its top, partitions/<topic>-<n>/ with segments, indexes and a snapshot),
// possibly unfinished (a staging directory of a killed run); kafka.jsonl,
// a broker dump.
func witnessEntry(p string, parts []string, d fs.DirEntry) bool {
	regular := d.Type().IsRegular()
	switch n := len(parts); {
	case n == 0:
		return d.IsDir()
	case parts[0] == "db":
		return n == 1 && d.IsDir() || n == 2 && regular && binlogNameRE.MatchString(parts[1]) && startsWith(p, binlogMagic)
	case parts[0] == "kafka.jsonl":
		return n == 1 && regular && startsWith(p, []byte(`{"kind":"header"`))
	case parts[0] != "kafka":
		return false
	case n == 1, n == 2 && parts[1] == "partitions", n == 3 && parts[1] == "partitions":
		return d.IsDir()
	case n == 2:
		return regular && kfakeTopRE.MatchString(parts[1])
	}
	return len(parts) == 4 && parts[1] == "partitions" && regular && kfakePartRE.MatchString(parts[3])
}

// startsWith tells whether the file at p begins with prefix.
func startsWith(p string, prefix []byte) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(prefix))
	_, err = io.ReadFull(f, b)
	return err == nil && bytes.Equal(b, prefix)
}
