package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpForEveryCommand(t *testing.T) {
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			t.Run(c.name+h, func(t *testing.T) {
				code, out, errs := runCLI(t, c.name, h)
				if code != exitOK {
					t.Fatalf("%s %s: exit %d; want 0 (stderr %q)", c.name, h, code, errs)
				}
				if !strings.Contains(out, "Usage:") || !strings.Contains(out, "Example") {
					t.Errorf("%s %s: stdout lacks usage or example:\n%s", c.name, h, out)
				}
				if c.name != "help" && !strings.Contains(out, progName+" "+c.name) {
					t.Errorf("%s %s: usage does not show the command line:\n%s", c.name, h, out)
				}
			})
		}
		if c.name == "help" {
			continue
		}
		t.Run("help "+c.name, func(t *testing.T) {
			code, out, _ := runCLI(t, "help", c.name)
			if code != exitOK || !strings.Contains(out, "Usage:") {
				t.Fatalf("help %s: exit %d, stdout %q", c.name, code, out)
			}
		})
	}
}

func TestTopLevel(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{args: nil, code: exitUsage, wantStderr: "Commands:"},
		{args: []string{"--help"}, code: exitOK, wantStdout: "Commands:"},
		{args: []string{"help"}, code: exitOK, wantStdout: "Exit codes"},
		{args: []string{"frobnicate"}, code: exitUsage, wantStderr: `unknown command "frobnicate"`},
		{args: []string{"help", "frobnicate"}, code: exitUsage, wantStderr: `unknown command "frobnicate"`},
		{args: []string{"help", "run", "verify"}, code: exitUsage, wantStderr: "at most one"},
		{args: []string{"--version"}, code: exitOK, wantStdout: progName + " " + version},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d; want %d (stderr %q)", code, tt.code, errs)
			}
			if !strings.Contains(out, tt.wantStdout) {
				t.Errorf("stdout %q lacks %q", out, tt.wantStdout)
			}
			if !strings.Contains(errs, tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", errs, tt.wantStderr)
			}
		})
	}
	// The hidden command is not listed.
	_, out, _ := runCLI(t, "help")
	if regexp.MustCompile(`(?m)^\s+actor\s`).MatchString(out) {
		t.Errorf("help lists the hidden actor command:\n%s", out)
	}
}

func TestUnknownFlagEveryCommand(t *testing.T) {
	for _, c := range commands() {
		if c.name == "help" {
			continue // help takes command names, not flags
		}
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.name, "--no-such-flag")
			if code != exitUsage {
				t.Fatalf("%s --no-such-flag: exit %d; want 2", c.name, code)
			}
			if !strings.Contains(errs, "flag provided but not defined: -no-such-flag") {
				t.Errorf("stderr does not name the flag: %q", errs)
			}
			if out != "" {
				t.Errorf("stdout = %q; want nothing", out)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != exitOK {
		t.Fatalf("version: exit %d", code)
	}
	for _, want := range []string{progName + " " + version + "\n", "revision: ", "go: go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("version output %q lacks %q", out, want)
		}
	}
	if code, _, _ := runCLI(t, "version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d; want 2", code)
	}
	if bi := buildInfo(); bi.Revision == "" {
		t.Errorf("buildInfo().Revision is empty; want a revision or %q", "unknown")
	}
}

func TestExitCodeFor(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{flag.ErrHelp, exitOK},
		{fmt.Errorf("connect: %w", infra.ErrUnavailable), exitUnavailable},
		{fmt.Errorf("run: %w", fmt.Errorf("scratch: %w", infra.ErrUnavailable)), exitUnavailable},
		{usageErrorf("bad --seed %q", "x"), exitUsage},
		{fmt.Errorf("wrapped: %w", usageErrorf("bad")), exitUsage},
		{fmt.Errorf("create: %w", infra.ErrBadName), exitUsage},
		{failedErrorf("2 scenarios failed"), exitFail},
		{inconclusiveErrorf("log truncated"), exitInconclusive},
		{errors.New("something else"), exitFail},
	}
	for _, tt := range tests {
		if got := exitCodeFor(tt.err); got != tt.want {
			t.Errorf("exitCodeFor(%v) = %d; want %d", tt.err, got, tt.want)
		}
	}
	if got := usageErrorf("bad --seed %q", "x").Error(); got != `bad --seed "x"` {
		t.Errorf("usageErrorf message = %q; want the text alone", got)
	}
}

func TestFailRedactsAndHasNoStack(t *testing.T) {
	t.Setenv(infra.EnvMySQLDSN, "app:hunter2@tcp(127.0.0.1:1)/")
	var errb bytes.Buffer
	code := fail(&errb, "run", fmt.Errorf("%w: login app:hunter2 refused", infra.ErrUnavailable))
	if code != exitUnavailable {
		t.Errorf("fail: exit %d; want 3", code)
	}
	got := errb.String()
	if strings.Contains(got, "hunter2") {
		t.Errorf("fail printed the password: %q", got)
	}
	if !strings.HasPrefix(got, progName+" run: ") || strings.Count(got, "\n") != 1 || strings.Contains(got, "goroutine") {
		t.Errorf("fail output = %q; want one prefixed line", got)
	}
}

func TestFlagSetInterleaved(t *testing.T) {
	tests := []struct {
		args    []string
		pos     []string
		verbose bool
		code    int
		ok      bool
	}{
		{args: []string{"a.json"}, pos: []string{"a.json"}, code: exitOK, ok: true},
		{args: []string{"a.json", "--verbose"}, pos: []string{"a.json"}, verbose: true, code: exitOK, ok: true},
		{args: []string{"-verbose", "a.json", "b.json"}, pos: []string{"a.json", "b.json"}, verbose: true, code: exitOK, ok: true},
		{args: []string{"--", "--verbose"}, pos: []string{"--verbose"}, code: exitOK, ok: true},
		{args: []string{"a.json", "--", "-x"}, pos: []string{"a.json", "-x"}, code: exitOK, ok: true},
		{args: []string{"a.json", "-x"}, code: exitUsage},
		{args: []string{"a.json", "-h"}, code: exitOK},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := newFlagSet("t", "t [flags] FILE...", "about", "orderflow-audit t a.json")
			verbose := fs.Bool("verbose", false, "say more")
			var out, errb bytes.Buffer
			code, ok := fs.parse(tt.args, &out, &errb)
			if code != tt.code || ok != tt.ok {
				t.Fatalf("parse = %d, %v; want %d, %v (stderr %q)", code, ok, tt.code, tt.ok, errb.String())
			}
			if !ok {
				return
			}
			if fmt.Sprint(fs.Args()) != fmt.Sprint(tt.pos) || *verbose != tt.verbose {
				t.Errorf("args %q verbose %v; want %q %v", fs.Args(), *verbose, tt.pos, tt.verbose)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listeningRE = regexp.MustCompile(`^broker listening on (127\.0\.0\.1:[0-9]+) \(kfake \S+, embedded; not Apache Kafka\)\n$`)

func TestBrokerStartsAndStopsOnCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"broker", "--listen", "127.0.0.1:0", "--topic", "cli-test"}, &out, &errb)
	}()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("broker exited early with %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line after 10s; stdout %q stderr %q", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("broker printed port 0: %s", addr)
	}

	// It speaks Kafka and created the topic.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "cli-test")
	cl.Close()
	if err != nil || !topics.Has("cli-test") {
		t.Fatalf("ListTopics = %v, %v; want cli-test", topics, err)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("broker exit %d after cancel; want 0 (stderr %q)", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not stop within 10s of cancel")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the broker stopped", addr)
	}
}

func TestBrokerErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"broker", "--listen", ln.Addr().String()}, exitUnavailable, "address already in use"},
		{[]string{"broker", "--listen", "0.0.0.0:9092"}, exitUsage, "127.0.0.1 only"},
		{[]string{"broker", "--listen", "0.0.0.0:9092", "--advertise", "127.0.0.1:0"}, exitUsage, "port other than 0"},
		{[]string{"broker", "--listen", "0.0.0.0:9092", "--advertise", "nonsense"}, exitUsage, "--advertise"},
		{[]string{"broker", "--listen", "nonsense"}, exitUsage, "--listen"},
		{[]string{"broker", "--listen", "127.0.0.1:99999"}, exitUsage, "bad port"},
		{[]string{"broker", "extra"}, exitUsage, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d; want %d (stderr %q)", code, tt.code, errs)
			}
			if !strings.Contains(errs, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errs, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout = %q; want nothing", out)
			}
		})
	}
}
