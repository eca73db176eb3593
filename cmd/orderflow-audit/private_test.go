package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// privateGone fails the test when a private server started with TMPDIR=tmp
// still runs (after 5 s) or left its directory there.
func privateGone(t *testing.T, tmp string) {
	t.Helper()
	waitNoServer(t, tmp)
	es, _ := os.ReadDir(tmp)
	for _, e := range es {
		t.Errorf("left in TMPDIR %s: %s", tmp, e.Name())
	}
}

func waitNoServer(t *testing.T, tmp string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(infratest.ServersIn(tmp)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("mariadbd still runs in %s: pid(s) %v", tmp, infratest.ServersIn(tmp))
			return
		}
	}
}

// TestRunKilledLeavesNoServer: a run killed outright (SIGKILL, no cleanup
// at all) takes its private server with it, and the next run removes the
// directory it left.
func TestRunKilledLeavesNoServer(t *testing.T) {
	infratest.RequireMariaDB(t)
	tmp, outs := t.TempDir(), t.TempDir()
	binary(t)               // built in the test's own TMPDIR
	t.Setenv("TMPDIR", tmp) // for the run processes: after the test's own temporary directories
	p := startProc(t, "run", "--out", filepath.Join(outs, "u80.json"))
	p.line(t)
	if len(infratest.ServersIn(tmp)) == 0 {
		t.Fatalf("no private server in %s while the run runs", tmp)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 10*time.Second)
	waitNoServer(t, tmp)
	if es, _ := os.ReadDir(tmp); len(es) != 1 {
		t.Fatalf("TMPDIR after the kill: %v; want the killed run's directory", es)
	}
	if code, _, stderr := runCLI(t, "run", "--scenarios", "placement", "--out", filepath.Join(outs, "next.json")); code != exitOK {
		t.Fatalf("next run: exit %d\n%s", code, stderr)
	}
	privateGone(t, tmp)
}

// TestRunPrivateServerCannotStart: the programs missing or a TMPDIR that
// cannot be written: exit 3, a message naming the cause and what to do,
// nothing written.
func TestRunPrivateServerCannotStart(t *testing.T) {
	infratest.RequireMariaDB(t) // the programs found, the next cause is the one named
	for _, tc := range []struct {
		name, env, value string
		want             []string
	}{
		{"programs missing", mariadbd.EnvBinDir, t.TempDir(),
			[]string{"cannot start the private MariaDB server: mariadbd not found", "mariadb-server", "--mysql-dsn"}},
		{"TMPDIR unwritable", "TMPDIR", "/sys", []string{"cannot start the private MariaDB server: create the server's directory in /sys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(tc.env, tc.value)
			code, _, stderr := runCLI(t, "run", "--scenarios", "placement", "--out", filepath.Join(dir, "u80.json"))
			if code != exitUnavailable {
				t.Errorf("exit %d; want %d\n%s", code, exitUnavailable, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Errorf("written: %v", es)
			}
		})
	}
}

// TestBrokerServesWitness: `broker --data-dir` on a copy of a run's
// witness/kafka serves the run's topics (records with their headers) and
// the group's committed offsets to a Kafka client.
func TestBrokerServesWitness(t *testing.T) {
	infratest.RequireMariaDB(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	dataDir := t.TempDir()
	binary(t) // built in the test's own TMPDIR
	t.Setenv("TMPDIR", t.TempDir())
	if code, _, stderr := runCLI(t, "run", "--scenarios", "normalChain,offsetReplay", "--out", out); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	witness := filepath.Join(runner.LogDir(out), "witness", "kafka")
	want, err := broker.ReadDataDir(t.Context(), witness, broker.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dataDir, os.DirFS(witness)); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "broker", "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	line := p.line(t)
	addr, _, ok := strings.Cut(strings.TrimPrefix(line, "broker listening on "), " ")
	if !ok {
		t.Fatalf("broker said %q", line)
	}
	defer p.cmd.Process.Signal(syscall.SIGTERM)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	group := "notify-" + ev.Run.ID
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range ev.Scenarios {
		for _, topic := range sc.Topics {
			part, _ := want.Partition(topic, 0)
			got := consumeAll(t, ctx, addr, topic, part.End)
			if int64(len(got)) != part.End-part.Start || len(got) == 0 {
				t.Errorf("%s: served %d records; the witness holds [%d, %d)", topic, len(got), part.Start, part.End)
			}
			for i, r := range got {
				w := part.Records[i]
				if !bytes.Equal(r.Value, w.Value) || len(r.Headers) != len(w.Headers) || len(r.Headers) == 0 {
					t.Errorf("%s@%d: served value/headers differ from the witness", topic, r.Offset)
				}
			}
			o, ok := offs.Lookup(topic, 0)
			c, _ := want.Committed(group, topic, 0)
			if !ok || o.At != c {
				t.Errorf("%s: committed offset of %s served %+v; the witness has %d", topic, group, o, c)
			}
		}
	}
}

// consumeAll reads topic's partition 0 from the start up to end.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for int64(len(out)) < end && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
