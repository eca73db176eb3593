package mariadbd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// A template is a data directory as mariadb-install-db leaves it, made
// once per installation of the server programs and copied for every
// server: copying it takes about 0.03 s where mariadb-install-db takes
// about 0.5 s (BENCHMARKS.md). It lives in <cache>/mariadb-data-<key>/data,
// where key is derived from the programs (path, size, modification time:
// an upgrade of the package changes it) and the flags the data directory
// is made with; version.txt beside it says which server made it. It is
// made in a temporary directory beside it and renamed into place, so that
// concurrent runs never see half of one.

// templateFormat changes when the way a template is made changes.
const templateFormat = 1

// readyFile marks a complete template.
const readyFile = "ready"

// prepareData makes a fresh data directory at dst: a copy of the template
// (made first when there is none yet), or mariadb-install-db's own with
// NoTemplate or when no template can be had (a cache directory that cannot
// be written is not a reason to fail).
func prepareData(ctx context.Context, cfg Config, bins Binaries, dst string) error {
	if !cfg.NoTemplate {
		tpl, err := ensureTemplate(ctx, cfg, bins)
		if err == nil {
			if err := copyTree(tpl, dst); err != nil {
				return fmt.Errorf("copy the template data directory %s to %s: %w", tpl, dst, err)
			}
			return nil
		}
		if errors.Is(err, errInstallTimeout) || ctx.Err() != nil {
			return err // it would hang (or be cut off) again for this server
		}
		cfg.Logger.Warn("no template data directory; running mariadb-install-db for this server", "err", err)
	}
	return installDB(ctx, cfg, bins, dst)
}

// TemplateDir returns the default cache directory of templates.
func TemplateDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "orderflow-audit"), nil
}

// ensureTemplate returns the data directory of the template for bins,
// making it when it does not exist.
func ensureTemplate(ctx context.Context, cfg Config, bins Binaries) (string, error) {
	dir := cfg.TemplateDir
	if dir == "" {
		var err error
		if dir, err = TemplateDir(); err != nil {
			return "", err
		}
	}
	key, err := templateKey(bins)
	if err != nil {
		return "", err
	}
	final := filepath.Join(dir, "mariadb-data-"+key)
	if _, err := os.Stat(filepath.Join(final, readyFile)); err == nil {
		return filepath.Join(final, "data"), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	removeStaleTemplates(dir)
	tmp, err := os.MkdirTemp(dir, ".tmp-mariadb-data-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := installDB(ctx, cfg, bins, filepath.Join(tmp, "data")); err != nil {
		return "", err
	}
	vctx, cancel := context.WithTimeout(ctx, cfg.InstallTimeout)
	version, _ := exec.CommandContext(vctx, bins.Mariadbd, "--version").Output()
	cancel()
	if err := os.WriteFile(filepath.Join(tmp, "version.txt"), version, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, readyFile), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, readyFile)); serr == nil {
			return filepath.Join(final, "data"), nil // another run made it first
		}
		return "", fmt.Errorf("install the template %s: %w (remove it to have it made again)", final, err)
	}
	cfg.Logger.Info("made a template data directory", "dir", final)
	return filepath.Join(final, "data"), nil
}

// templateKey identifies the programs and the way a template is made.
func templateKey(bins Binaries) (string, error) {
	h := sha256.New()
	for _, p := range []string{bins.Mariadbd, bins.InstallDB} {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "%q %d %d\n", dataArgs, os.Geteuid(), templateFormat)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// removeStaleTemplates removes the temporary directories of templates
// whose making was killed (older than an hour).
func removeStaleTemplates(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".tmp-mariadb-data-*"))
	for _, m := range matches {
		if st, err := os.Lstat(m); err == nil && st.IsDir() && time.Since(st.ModTime()) > time.Hour {
			_ = os.RemoveAll(m)
		}
	}
}

// installDB runs mariadb-install-db into dir (about 0.5 s). Its bootstrap
// server is killed with it when ctx ends; a run killed outright takes the
// script with it (its bootstrap server then ends at the end of its input).
//
// A failed attempt is made again once on an emptied directory: its
// bootstrap server has been seen to fail once in a CI run of the whole
// test suite (other servers starting on the same two cores) and pass at
// once alone. The error names the output's error lines, then its last.
//
// Each attempt is bounded by cfg.InstallTimeout; one that runs out is not
// made again (a script that hangs once hangs twice).
func installDB(ctx context.Context, cfg Config, bins Binaries, dir string) error {
	err := installDBOnce(ctx, cfg.InstallTimeout, bins, dir)
	if err == nil || ctx.Err() != nil || errors.Is(err, errInstallTimeout) {
		return err
	}
	if rerr := emptyDir(dir); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err2 := installDBOnce(ctx, cfg.InstallTimeout, bins, dir); err2 != nil {
		return fmt.Errorf("%w (and again: %v)", err, err2)
	}
	return nil
}

// emptyDir removes what dir holds, keeping dir (absent is empty).
func emptyDir(dir string) error {
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// errInstallTimeout: mariadb-install-db did not end within its bound.
var errInstallTimeout = errors.New("mariadb-install-db did not finish")

func installDBOnce(parent context.Context, bound time.Duration, bins Binaries, dir string) error {
	ctx, cancel := context.WithTimeoutCause(parent, bound, errInstallTimeout)
	defer cancel()
	// As for the server (see run): the parent-death signal fires when the
	// starting thread ends, so this goroutine keeps its thread meanwhile.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	args = append(args, dataArgs...)
	cmd := exec.CommandContext(ctx, bins.InstallDB, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that left the process group and holds the output open must
	// not hold Wait either.
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if parent.Err() != nil {
			return fmt.Errorf("mariadb-install-db interrupted: %w", context.Cause(parent))
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w within %v (%s into %s; killed; its output: %s)",
				errInstallTimeout, bound, bins.InstallDB, dir, lastLines(out.String(), 3))
		}
		return fmt.Errorf("mariadb-install-db into %s failed (%v): %s", dir, err, errorLines(out.String()))
	}
	return nil
}

// errorLines returns the lines of s that say ERROR (the first 4), then its
// last 3 lines, joined by " | ": mariadb-install-db ends every failure
// with the same advice, after the line that names the cause.
func errorLines(s string) string {
	var errs []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.Contains(strings.ToUpper(l), "ERROR") && len(errs) < 4 {
			errs = append(errs, l)
		}
	}
	if len(errs) == 0 {
		return lastLines(s, 6)
	}
	return strings.Join(errs, " | ") + " | ... | " + lastLines(s, 3)
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "no output"
	}
	return strings.Join(lines, " | ")
}

// copyTree copies the directory src to dst (which must not exist):
// directories and regular files with their permissions; anything else is
// an error.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm())
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return fmt.Errorf("%s is not a regular file or directory", p)
	})
}

func copyFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
