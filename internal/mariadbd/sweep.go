package mariadbd

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A server's directory is named dirPrefix* and holds ownerFile: the pid
// and the start time of the process that started the server. A directory
// whose owner is gone was left by a run killed outright (SIGKILL, a second
// Ctrl-C): the next Start in the same place removes it, after killing its
// server if that still runs. A directory marked keptFile (run --keep) is
// the user's and is never removed.
const (
	dirPrefix = "ofa-mariadbd-"
	ownerFile = "owner"
	keptFile  = "KEPT"
)

// staleUnowned is how old a directory without an owner file must be
// before it counts as left behind (a Start between its mkdir and writing
// the owner file is younger than that).
const staleUnowned = time.Hour

// writeOwner records this process as the owner of dir.
func writeOwner(dir string) error {
	pid := os.Getpid()
	line := strconv.Itoa(pid) + " " + procStart(pid) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(line), 0o644); err != nil {
		return fmt.Errorf("write into the server's directory %s: %w", dir, err)
	}
	return nil
}

// procStart returns the start time of process pid (field 22 of
// /proc/<pid>/stat, in clock ticks since boot), or "" where there is no
// /proc: a pid reused by another process has another start time.
func procStart(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// alive tells whether the process pid with start time start still runs.
func alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	return start == "" || procStart(pid) == "" || procStart(pid) == start
}

// sweep removes the directories of private servers in dir whose owner is
// gone, killing a server that still runs in one. Errors are logged: a
// directory it cannot remove (another user's) is not this run's problem.
func sweep(dir string, log *slog.Logger) {
	matches, _ := filepath.Glob(filepath.Join(dir, dirPrefix+"*"))
	for _, m := range matches {
		if !abandoned(m) {
			continue
		}
		killServer(m)
		if err := os.RemoveAll(m); err != nil {
			log.Warn("remove the directory of a private server left by a killed run", "dir", m, "err", err)
			continue
		}
		log.Info("removed the directory of a private server left by a killed run", "dir", m)
	}
}

// abandoned tells whether dir is a server directory that nobody owns.
func abandoned(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	if _, err := os.Lstat(filepath.Join(dir, keptFile)); err == nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return time.Since(st.ModTime()) > staleUnowned
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Since(st.ModTime()) > staleUnowned
	}
	pid, _ := strconv.Atoi(f[0])
	start := ""
	if len(f) > 1 {
		start = f[1]
	}
	return !alive(pid, start)
}

// killServer kills the server of dir if it still runs: the process named
// in its pid file whose command line mentions dir.
func killServer(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "mariadbd.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond) // a zombie until its parent reaps it: bounded
	}
}

// ProcStart returns the start time of process pid as recorded in an owner
// file, for other owners of left-behind things (runner/infra/container).
func ProcStart(pid int) string { return procStart(pid) }

// Alive tells whether the process pid with start time start (ProcStart)
// still runs.
func Alive(pid int, start string) bool { return alive(pid, start) }
