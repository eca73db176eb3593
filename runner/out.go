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
	"strings"
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

// onlyOurLogs checks that dir holds nothing but event logs as a run lays
// them out: <scenario>/<actor>.jsonl, each empty or starting with an event
// of that scenario. Anything else (another file, a deeper directory, a
// symlink, a .jsonl that is not our event log) is an error naming it.
func onlyOurLogs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		depth := len(strings.Split(filepath.ToSlash(rel), "/"))
		switch {
		case p == dir:
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

// promoteLogs replaces dst (the logs of an earlier run) with stage. dst is
// replaced only when it holds nothing but our event logs (checked again
// here: it may have changed since CheckOut).
func promoteLogs(stage, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		if err := onlyOurLogs(dst); err != nil {
			return evidence.BadOutputf("refusing to replace %s: %v", dst, err)
		}
		old := dst + ".old-" + filepath.Base(stage)
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("replace logs %s: %w", dst, err)
		}
		if err := os.Rename(stage, dst); err != nil {
			if rerr := os.Rename(old, dst); rerr != nil {
				return fmt.Errorf("move logs to %s: %w (and restoring the previous logs from %s failed: %v)", dst, err, old, rerr)
			}
			return fmt.Errorf("move logs to %s: %w", dst, err)
		}
		return os.RemoveAll(old)
	}
	if err := os.Rename(stage, dst); err != nil {
		return fmt.Errorf("move logs to %s: %w", dst, err)
	}
	return nil
}

// makeStage creates the output directory and a staging directory for this
// run's logs inside it (so that promoting it is a rename), mode 0755 like
// the directories of the logs themselves.
func makeStage(out, runID string, now time.Time, log *slog.Logger) (string, error) {
	outDir := filepath.Dir(out)
	base := filepath.Base(LogDir(out))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", evidence.BadOutputf("create %s: %v", outDir, err)
	}
	removeStaleStages(outDir, base, now, log)
	stage, err := os.MkdirTemp(outDir, "."+base+"-"+runID+"-")
	if err != nil {
		return "", evidence.BadOutputf("create a staging directory in %s: %v", outDir, err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		os.RemoveAll(stage)
		return "", evidence.BadOutputf("%v", err)
	}
	return stage, nil
}

// staleStage is how old a staging directory must be before a later run
// removes it: only a run killed outright (SIGKILL) leaves one behind.
const staleStage = time.Hour

// removeStaleStages removes the staging directories (.<base>-<run>-*) that
// runs killed outright left in outDir, when they are older than staleStage
// and hold nothing but our event logs.
func removeStaleStages(outDir, base string, now time.Time, log *slog.Logger) {
	matches, _ := filepath.Glob(filepath.Join(outDir, "."+base+"-*"))
	for _, m := range matches {
		st, err := os.Lstat(m)
		if err != nil || !st.IsDir() || now.Sub(st.ModTime()) < staleStage || onlyOurLogs(m) != nil {
			continue
		}
		if err := os.RemoveAll(m); err != nil {
			log.Warn("remove stale staging directory", "dir", m, "err", err)
		}
	}
}
