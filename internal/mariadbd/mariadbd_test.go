package mariadbd_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// require skips with -short, and without the MariaDB programs skips
// outside CI and fails with CI set.
func require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a private mariadbd (skipped with -short)")
	}
	if _, err := mariadbd.FindBinaries(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the MariaDB server programs are missing: %v", err)
		}
		t.Skipf("MariaDB server programs missing (set CI to make this fail): %v", err)
	}
}

// cfg is a test's config: its own parent directory (so that what a
// failure leaves behind is seen) and its own template cache.
func cfg(t *testing.T) mariadbd.Config {
	return mariadbd.Config{Dir: t.TempDir(), TemplateDir: templates(t)}
}

var templateDir string

// templates is one template cache for the tests of this package, made by
// the first test that needs it.
func templates(t *testing.T) string {
	if templateDir == "" {
		d, err := os.MkdirTemp("", "ofa-mariadbd-templates-")
		if err != nil {
			t.Fatal(err)
		}
		templateDir = d
	}
	return templateDir
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("OFA_MARIADBD_TEST_OWNER"); dir != "" {
		os.Exit(ownerMain(dir))
	}
	code := m.Run()
	if templateDir != "" {
		os.RemoveAll(templateDir)
	}
	os.Exit(code)
}

// ownerMain starts a server in dir, prints its pid and waits to be killed:
// the process a test kills outright.
func ownerMain(dir string) int {
	s, err := mariadbd.Start(context.Background(), mariadbd.Config{Dir: dir, NoTemplate: os.Getenv("OFA_MARIADBD_TEMPLATES") == "",
		TemplateDir: os.Getenv("OFA_MARIADBD_TEMPLATES")})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("pid", s.Pid())
	time.Sleep(time.Minute)
	return 0
}

// entries lists dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func gone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+2:]), "Z") {
			return true // a zombie: dead, waiting to be reaped
		}
	}
	return false
}

// TestStartRemove: a started server takes root over TCP with the binary
// log as the witness needs it; Remove kills it and deletes its directory.
func TestStartRemove(t *testing.T) {
	require(t)
	c := cfg(t)
	s, err := mariadbd.Start(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logBin int
	var format, image, meta string
	var id uint32
	var maxSize int64
	if err := db.QueryRowContext(t.Context(), `SELECT @@log_bin, @@binlog_format, @@binlog_row_image,
		@@binlog_row_metadata, @@server_id, @@max_binlog_size`).Scan(&logBin, &format, &image, &meta, &id, &maxSize); err != nil {
		t.Fatal(err)
	}
	if logBin != 1 || format != "ROW" || image != "FULL" || meta != "FULL" || id != mariadbd.DefaultServerID {
		t.Errorf("log_bin=%d format=%s image=%s metadata=%s server_id=%d; want 1 ROW FULL FULL %d",
			logBin, format, image, meta, id, mariadbd.DefaultServerID)
	}
	if maxSize != 64<<20 {
		t.Errorf("max_binlog_size=%d; want 64 MiB, half the bundle gate's bound on a witness file", maxSize)
	}
	if _, err := os.Stat(s.LogBase + ".000001"); err != nil {
		t.Errorf("first binlog file: %v", err)
	}
	pid := s.Pid()
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Errorf("mariadbd (pid %d) still runs after Remove", pid)
	}
	if es := entries(t, c.Dir); len(es) != 0 {
		t.Errorf("left in %s after Remove: %v", c.Dir, es)
	}
	if err := s.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestTemplateMadeOnceAndReused: the first server makes the template, the
// next ones copy it; without the template every server runs
// mariadb-install-db. Both start.
func TestTemplateMadeOnceAndReused(t *testing.T) {
	require(t)
	c := cfg(t)
	c.TemplateDir = t.TempDir()
	for i := range 2 {
		s, err := mariadbd.Start(t.Context(), c)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		s.Remove()
		es := entries(t, c.TemplateDir)
		if len(es) != 1 || !strings.HasPrefix(es[0], "mariadb-data-") {
			t.Fatalf("template cache after start %d: %v; want one mariadb-data-*", i, es)
		}
		v, err := os.ReadFile(filepath.Join(c.TemplateDir, es[0], "version.txt"))
		if err != nil || !strings.Contains(string(v), "MariaDB") {
			t.Errorf("version.txt = %q, %v", v, err)
		}
	}
	c.NoTemplate = true
	c.TemplateDir = filepath.Join(t.TempDir(), "unused")
	s, err := mariadbd.Start(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	s.Remove()
	if _, err := os.Stat(c.TemplateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("NoTemplate made %s (%v)", c.TemplateDir, err)
	}
}

// TestStartFailures: every way a start fails wraps ErrStart, names its
// cause, and leaves no directory (and no process) behind.
func TestStartFailures(t *testing.T) {
	require(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	unwritable := "/sys" // read-only even for root
	if os.Geteuid() != 0 {
		unwritable = t.TempDir()
		os.Chmod(unwritable, 0o555)
	}
	cases := []struct {
		name string
		mod  func(*mariadbd.Config)
		want []string
		is   error
	}{
		{"port taken", func(c *mariadbd.Config) { c.Port = taken },
			[]string{fmt.Sprintf("port 127.0.0.1:%d is taken", taken)}, nil},
		{"programs missing", func(c *mariadbd.Config) { c.BinDir = t.TempDir() },
			[]string{"mariadbd not found", "mariadb-server"}, mariadbd.ErrNotInstalled},
		{"directory unwritable", func(c *mariadbd.Config) { c.Dir = unwritable },
			[]string{"create the server's directory in " + unwritable}, nil},
		{"server refuses its flags", func(c *mariadbd.Config) { c.Args = []string{"--no-such-option-ofa"} },
			[]string{"mariadbd exited before it accepted a login", "no-such-option-ofa"}, nil},
	}
	if full := smallDisk(t); full != "" {
		cases = append(cases, struct {
			name string
			mod  func(*mariadbd.Config)
			want []string
			is   error
		}{"disk full", func(c *mariadbd.Config) { c.Dir = full }, []string{"no space left on device"}, nil})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(t)
			tc.mod(&c)
			s, err := mariadbd.Start(t.Context(), c)
			if err == nil {
				s.Remove()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, mariadbd.ErrStart) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("Start = %v; want ErrStart (and %v)", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start = %q; want it to say %q", err, w)
				}
			}
			if c.Dir != unwritable { // (the disk-full one is checked here too: empty after the failure)
				if es := entries(t, c.Dir); len(es) != 0 {
					t.Errorf("left in %s: %v", c.Dir, es)
				}
			}
		})
	}
}

// smallDisk mounts an 8 MB tmpfs (a data directory needs about 30 MB)
// for the test and returns it, or "" where mounting is not allowed.
func smallDisk(t *testing.T) string {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Logf("no disk-full case: cannot mount a small tmpfs: %v", err)
		return ""
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	return dir
}

// TestBinDirFromEnvironment: ORDERFLOW_MARIADB_BINDIR is the only place
// searched when set.
func TestBinDirFromEnvironment(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(mariadbd.EnvBinDir, empty)
	_, err := mariadbd.FindBinaries("")
	if !errors.Is(err, mariadbd.ErrNotInstalled) || !strings.Contains(err.Error(), mariadbd.EnvBinDir+"="+empty) {
		t.Errorf("FindBinaries with %s=%s: %v; want ErrNotInstalled naming it", mariadbd.EnvBinDir, empty, err)
	}
}

// TestKilledOwnerTakesServer: a process that started a server and is
// killed outright (SIGKILL) takes its server with it (parent-death
// signal), and the next Start in the same place removes the directory it
// left. A directory kept with Keep stays.
func TestKilledOwnerTakesServer(t *testing.T) {
	require(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "OFA_MARIADBD_TEST_OWNER="+dir, "OFA_MARIADBD_TEMPLATES="+templates(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("owner process said %q", line)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("mariadbd (pid %d) outlived the process that started it", pid)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("after the kill: %v; want the one directory left behind", es)
	}

	c := cfg(t)
	c.Dir = dir
	kept, err := mariadbd.Start(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Keep(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if es := entries(t, dir); len(es) != 1 || filepath.Join(dir, es[0]) != kept.Dir {
		t.Fatalf("after the next Start: %v; want only the new server's directory %s", es, kept.Dir)
	}
	s, err := mariadbd.Start(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	s.Remove()
	if es := entries(t, dir); len(es) != 1 || filepath.Join(dir, es[0]) != kept.Dir {
		t.Errorf("a kept directory was swept: %v", es)
	}
}

// TestKeepCommand: Keep stops the server cleanly and returns one command
// that starts a server on the kept data directory, with its data.
func TestKeepCommand(t *testing.T) {
	require(t)
	s, err := mariadbd.Start(t.Context(), cfg(t))
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, s.DSN(), "CREATE DATABASE ofa_kept_x")
	command, err := s.Keep(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !gone(s.Pid()) {
		t.Fatal("Keep did not stop the server")
	}
	cmd := exec.Command("sh", "-c", "exec "+command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	db, err := sql.Open("mysql", s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err = db.QueryRowContext(t.Context(), "SHOW DATABASES LIKE 'ofa_kept_x'").Scan(&name)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || name != "ofa_kept_x" {
		t.Fatalf("server started by %q: %v (database %q)", command, err, name)
	}
}

func exec1(t *testing.T, dsn, q string) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), q); err != nil {
		t.Fatal(err)
	}
}

// TestPortHeldByAnotherServer: a port on which another MariaDB server
// already accepts root's login is not taken for this server's, though a
// ping there succeeds. Start's check that the port is free catches this
// case first; the check that the answering server has our data directory
// (isOurs) covers the race that check cannot: a port taken between
// freePort and mariadbd's bind, where a run then wrote into another
// server's binary log and found its own witness empty (seen once in CI,
// TestWitnessedRuns: "binlog.000001: 348 bytes, the server lists 19474").
func TestPortHeldByAnotherServer(t *testing.T) {
	require(t)
	other, err := mariadbd.Start(t.Context(), cfg(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Remove()
	c := cfg(t)
	c.Port = other.Port
	s, err := mariadbd.Start(t.Context(), c)
	if err == nil {
		s.Remove()
		t.Fatalf("Start on the port of another server (%d) succeeded", other.Port)
	}
	if want := "is taken"; !strings.Contains(err.Error(), want) {
		t.Errorf("Start = %v; want %q", err, want)
	}
}
