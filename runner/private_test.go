package runner_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/spec"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultOpts returns the options of a default run (a private mariadbd,
// the embedded broker) whose private server lives in its own temporary
// directory, returned too, so that what it leaves behind can be seen.
func defaultOpts(t *testing.T, ids ...string) (runner.Options, string) {
	t.Helper()
	infratest.RequireMariaDB(t)
	priv := t.TempDir()
	return runner.Options{
		Scenarios: ids, Out: filepath.Join(t.TempDir(), "u80.json"), Timeout: 30 * time.Second,
		Executable: exe, Private: mariadbd.Config{Dir: priv},
	}, priv
}

// TestDefaultRunWitnessed: a default run starts its own mariadbd and
// writes both witnesses beside the logs: binlog files that the reader
// parses and mariadb-binlog reads, holding one transaction per committed
// order of each scenario database; the embedded broker's data directory,
// read back with every topic of the run and the group's committed offsets;
// and the evidence lists every witness file with its sha256. Nothing of
// the server is left afterwards.
func TestDefaultRunWitnessed(t *testing.T) {
	opts, priv := defaultOpts(t)
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	infratest.NothingLeft(t, priv)
	if ev.Summary.Passed != len(spec.DefaultIDs()) {
		t.Fatalf("summary %+v", ev.Summary)
	}
	if db := ev.Environment.Database; db.Mode != evidence.DatabasePrivate || !strings.HasPrefix(db.DSN, "root@tcp(127.0.0.1:") {
		t.Errorf("environment.database = %+v; want the private server", db)
	}
	w := ev.Witness
	if w == nil || len(w.Missing) != 0 || w.Database == nil || w.Broker == nil {
		t.Fatalf("witness = %+v; want both, nothing missing", w)
	}
	if w.Database.Source != evidence.WitnessBinlogFiles || w.Database.ServerID != mariadbd.DefaultServerID ||
		w.Database.GTIDEnd == "" || !strings.Contains(w.Database.ServerVersion, "MariaDB") {
		t.Errorf("witness.database = %+v", w.Database)
	}
	if w.Broker.Source != evidence.WitnessKfakeDataDir || !strings.HasPrefix(w.Broker.Implementation, "kfake ") {
		t.Errorf("witness.broker = %+v", w.Broker)
	}
	dir := filepath.Dir(opts.Out)
	listedMatchesDisk(t, dir, append(slices.Clone(w.Database.Files), w.Broker.Files...))
	checkBinlogWitness(t, ev, filepath.Join(runner.LogDir(opts.Out), "witness", "db"))
	checkBrokerWitness(t, ev, filepath.Join(runner.LogDir(opts.Out), "witness", "kafka"))
}

// listedMatchesDisk: the files under <logs>/witness are exactly those
// listed, with their sizes and sha256.
func listedMatchesDisk(t *testing.T, dir string, listed []evidence.WitnessFile) {
	t.Helper()
	want := map[string]evidence.WitnessFile{}
	for _, f := range listed {
		want[f.Path] = f
	}
	root := filepath.Join(dir, "u80", "witness")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, ok := want[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("%s is not listed in the evidence", rel)
			return nil
		}
		delete(want, f.Path)
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		if err != nil || int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: %d bytes, sha256 %x (%v); the evidence says %d, %s", rel, len(b), sum, err, f.Size, f.SHA256)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		t.Errorf("%s is listed but not on disk", p)
	}
}

// checkBinlogWitness: the binlog files read (ours and mariadb-binlog's
// reader), and each scenario database has one transaction per order it
// ended with (orders are never deleted).
func checkBinlogWitness(t *testing.T, ev *evidence.Evidence, dir string) {
	t.Helper()
	paths, err := binlog.Files(dir)
	if err != nil || len(paths) == 0 {
		t.Fatalf("binlog.Files(%s) = %v, %v", dir, paths, err)
	}
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Base(p), "binlog.") {
			t.Errorf("%s is not named as the server names its binlog files", p)
		}
	}
	h, err := binlog.ReadAll(paths)
	if err != nil {
		t.Fatalf("binlog.ReadAll: %v", err)
	}
	if mb, err := exec.LookPath("mariadb-binlog"); err == nil {
		out, err := exec.Command(mb, append([]string{"--no-defaults"}, paths...)...).CombinedOutput()
		if err != nil {
			t.Errorf("mariadb-binlog --no-defaults %v: %v\n%s", paths, err, out[max(0, len(out)-2000):])
		}
	} else if os.Getenv("CI") != "" {
		t.Errorf("mariadb-binlog not found: %v", err)
	}
	orderTxs := map[string]int64{}
	for _, tx := range h.Transactions {
		inserts := 0
		for _, c := range tx.Changes {
			if c.Table == "orders" && c.Op == binlog.Insert {
				inserts++
				orderTxs[c.Schema]++
			}
		}
		if inserts > 1 {
			t.Errorf("transaction %s inserts %d orders", tx.GTID, inserts)
		}
	}
	checked := 0
	for _, sc := range ev.Scenarios {
		for _, tb := range sc.Tables {
			if tb.Table != "orders" {
				continue
			}
			if got := orderTxs[sc.Database]; got != tb.Rows {
				t.Errorf("%s: %d transactions insert an order in %s; the scenario ended with %d orders", sc.ID, got, sc.Database, tb.Rows)
			}
			checked += int(tb.Rows)
		}
	}
	if checked == 0 {
		t.Error("no scenario ended with an order: nothing was checked")
	}
}

// checkBrokerWitness: the data directory serves every topic of the run,
// and the consumer group's committed offsets, within each partition.
func checkBrokerWitness(t *testing.T, ev *evidence.Evidence, dir string) {
	t.Helper()
	log, err := broker.ReadDataDir(t.Context(), dir, broker.Selection{Prefix: "ofa." + ev.Run.ID + "."})
	if err != nil {
		t.Fatalf("broker.ReadDataDir: %v", err)
	}
	var topics []string
	for _, sc := range ev.Scenarios {
		topics = append(topics, sc.Topics...)
	}
	slices.Sort(topics)
	if got := log.TopicNames(); !slices.Equal(got, topics) {
		t.Errorf("topics in the broker's data directory %v; the scenarios used %v", got, topics)
	}
	group := log.Groups["notify-"+ev.Run.ID]
	if len(group) == 0 {
		t.Fatalf("no committed offsets of group notify-%s: %v", ev.Run.ID, log.Groups)
	}
	for topic, ps := range group {
		for p, off := range ps {
			part, ok := log.Partition(topic, p)
			if !ok || off > part.End || off < 1 {
				t.Errorf("group offset %s/%d = %d; the partition holds [%d, %d)", topic, p, off, part.Start, part.End)
			}
		}
	}
}

// TestExternalRunWitnessMissing: against the shared server, whose binary
// log is off, the run still runs; the evidence has no database witness and
// says why, and still has the broker's.
func TestExternalRunWitnessMissing(t *testing.T) {
	opts := runOpts(t, "normalChain")
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Summary.Passed != 1 {
		t.Fatalf("summary %+v", ev.Summary)
	}
	if ev.Environment.Database.Mode != evidence.DatabaseExternal {
		t.Errorf("environment.database.mode = %q; want external", ev.Environment.Database.Mode)
	}
	w := ev.Witness
	if w == nil || w.Broker == nil {
		t.Fatalf("witness = %+v; want the broker's", w)
	}
	var logBin int
	if err := infratest.Server(t).DB().QueryRowContext(t.Context(), "SELECT @@log_bin").Scan(&logBin); err != nil {
		t.Fatal(err)
	}
	if logBin == 1 {
		t.Skip("the shared server has its binary log on: nothing is missing to test")
	}
	if w.Database != nil || len(w.Missing) != 1 || !strings.HasPrefix(w.Missing[0], "database: ") ||
		!strings.Contains(w.Missing[0], "log_bin is OFF") {
		t.Errorf("witness.database = %+v, missing = %q; want it missing because log_bin is OFF", w.Database, w.Missing)
	}
	if _, err := os.Stat(filepath.Join(runner.LogDir(opts.Out), "witness", "db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("witness/db exists without a database witness (%v)", err)
	}
}

// TestPrivateServerCannotStart: a private server that cannot start is
// infrastructure unavailable (exit 3), names its cause, writes no evidence
// and leaves nothing behind.
func TestPrivateServerCannotStart(t *testing.T) {
	infratest.RequireMariaDB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name string
		mod  func(*runner.Options)
		want string
	}{
		{"port taken", func(o *runner.Options) { o.Private.Port = port }, fmt.Sprintf("port 127.0.0.1:%d is taken", port)},
		{"programs missing", func(o *runner.Options) { o.Private.BinDir = t.TempDir() }, "mariadbd not found"},
		{"directory unwritable", func(o *runner.Options) { o.Private.Dir = "/sys" }, "create the server's directory in /sys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, priv := defaultOpts(t, "placement")
			tc.mod(&opts)
			_, err := runner.Run(t.Context(), opts)
			if !errors.Is(err, infra.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "cannot start the private MariaDB server") {
				t.Fatalf("Run = %v; want ErrUnavailable saying %q", err, tc.want)
			}
			if _, err := os.Stat(opts.Out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("evidence written: %v", err)
			}
			es, _ := os.ReadDir(filepath.Dir(opts.Out))
			if len(es) != 0 {
				t.Errorf("left beside the evidence: %v", es)
			}
			infratest.NothingLeft(t, priv)
		})
	}
}

// TestPrivateServerGoneOnEveryPath: whatever ends the run (an interrupt, a
// failed scenario, the server lost, an --out refused at the end) the
// private server is stopped and its directory removed.
func TestPrivateServerGoneOnEveryPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ids    []string
		during func(t *testing.T, opts runner.Options, priv string, cancel context.CancelFunc)
		is     error
	}{
		{"interrupted", []string{"placement", "normalChain"}, func(_ *testing.T, _ runner.Options, _ string, cancel context.CancelFunc) {
			cancel()
		}, runner.ErrInterrupted},
		{"server lost", []string{"placement", "normalChain", "offsetReplay"}, func(t *testing.T, _ runner.Options, priv string, _ context.CancelFunc) {
			for _, pid := range infratest.ServersIn(priv) {
				if err := exec.Command("kill", "-9", pid).Run(); err != nil {
					t.Error(err)
				}
			}
		}, runner.ErrInfraLost},
		{"out refused at the end", []string{"placement", "normalChain"}, func(t *testing.T, opts runner.Options, _ string, _ context.CancelFunc) {
			writeFile(t, filepath.Join(runner.LogDir(opts.Out), "notes.txt"), "mine\n")
		}, evidence.ErrBadOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, priv := defaultOpts(t, tc.ids...)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			first := true
			opts.OnScenario = func(evidence.Scenario) {
				if first {
					first = false
					tc.during(t, opts, priv, cancel)
				}
			}
			_, err := runner.Run(ctx, opts)
			if !errors.Is(err, tc.is) {
				t.Errorf("Run = %v; want %v", err, tc.is)
			}
			infratest.NothingLeft(t, priv)
		})
	}
	t.Run("interrupted while the server starts", func(t *testing.T) {
		opts, priv := defaultOpts(t, "placement")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := runner.Run(ctx, opts); !errors.Is(err, runner.ErrInterrupted) || errors.Is(err, infra.ErrUnavailable) {
			t.Errorf("Run = %v; want ErrInterrupted (not the infrastructure)", err)
		}
		infratest.NothingLeft(t, priv)
	})
	t.Run("scenario failed", func(t *testing.T) {
		opts, priv := defaultOpts(t, "normalChain")
		opts.Plant = "no-inbox-dedupe"
		ev, err := runner.Run(t.Context(), opts)
		if err != nil || ev.Summary.Failed != 1 {
			t.Fatalf("Run = %v, %+v; want one failed scenario", err, ev)
		}
		infratest.NothingLeft(t, priv)
	})
}

// TestKeepPrivateServer: with Keep the private server's data directory
// stays, and the one command the run prints starts a server on it with
// the run's scratch databases.
func TestKeepPrivateServer(t *testing.T) {
	opts, priv := defaultOpts(t, "placement")
	opts.Keep = true
	var progress bytes.Buffer
	opts.Progress = &progress
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(infratest.ServersIn(priv)) != 0 {
		t.Fatalf("the kept server still runs")
	}
	_, after, ok := strings.Cut(progress.String(), "kept the private server's data directory ")
	lines := strings.Split(after, "\n")
	if !ok || len(lines) < 2 || !strings.HasPrefix(lines[1], "  ") {
		t.Fatalf("progress lacks the command:\n%s", progress.String())
	}
	command := strings.TrimSpace(lines[1])
	cmd := exec.Command("sh", "-c", "exec "+command)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	cfg, err := infra.ResolveDSN(ev.Environment.Database.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var s *infra.Server
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if s, err = infra.Connect(t.Context(), cfg); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("no server from %q: %v", command, err)
	}
	defer s.Close()
	ls, err := s.Leftovers(t.Context())
	if err != nil || len(ls) != 1 || ls[0].Name != ev.Scenarios[0].Database {
		t.Errorf("databases on the kept server: %+v, %v; want %s", ls, err, ev.Scenarios[0].Database)
	}
}

// TestExternalServerStreamed: an external server with its binary log on
// (a private mariadbd named by DSN, as a user's server would be) is
// witnessed over the replication protocol; an account without REPLICATION
// SLAVE is not, and the evidence names the grant, without the password.
func TestExternalServerStreamed(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	opts := runner.Options{MySQL: m.Config(), Scenarios: []string{"normalChain"}, Out: filepath.Join(t.TempDir(), "u80.json"),
		Timeout: 30 * time.Second, Executable: exe}
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	w := ev.Witness
	if w == nil || w.Database == nil || len(w.Missing) != 0 || w.Database.Source != evidence.WitnessBinlogStream {
		t.Fatalf("witness = %+v; want the database's binlog, streamed", w)
	}
	listedMatchesDisk(t, filepath.Dir(opts.Out), append(slices.Clone(w.Database.Files), w.Broker.Files...))
	checkBinlogWitness(t, ev, filepath.Join(runner.LogDir(opts.Out), "witness", "db"))

	db, err := infra.Connect(t.Context(), m.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE USER ofa_limited@'%' IDENTIFIED BY 's3cret-pw'",
		"GRANT ALL ON `ofa\\_%`.* TO ofa_limited@'%'",
		"GRANT RELOAD, BINLOG MONITOR ON *.* TO ofa_limited@'%'",
	} {
		if _, err := db.DB().ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	limited := m.Config()
	limited.User, limited.Passwd = "ofa_limited", "s3cret-pw"
	opts.MySQL, opts.Out = limited, filepath.Join(t.TempDir(), "u80.json")
	ev, err = runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if w := ev.Witness; w.Database != nil || len(w.Missing) != 1 || !strings.Contains(w.Missing[0], "REPLICATION SLAVE") {
		t.Errorf("witness with a limited account: %+v, missing %q; want it missing for want of REPLICATION SLAVE", w.Database, w.Missing)
	}
	t.Logf("missing: %q", ev.Witness.Missing)
	raw, err := os.ReadFile(opts.Out)
	if err != nil || bytes.Contains(raw, []byte("s3cret-pw")) {
		t.Errorf("the evidence holds the password (or cannot be read: %v)", err)
	}
}

// TestExternalBrokerDumped: with an external broker the run's topics and
// the group's committed offsets are dumped into witness/kafka.jsonl, and
// the topics are deleted from the broker afterwards.
func TestExternalBrokerDumped(t *testing.T) {
	k := infratest.Kafka(t)
	opts := runOpts(t, "normalChain", "offsetReplay")
	opts.Brokers = k.Brokers
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	w := ev.Witness.Broker
	if w == nil || w.Source != evidence.WitnessKafkaDump || len(w.Files) != 1 || w.Files[0].Path != "u80/witness/kafka.jsonl" {
		t.Fatalf("witness.broker = %+v; want the dump", w)
	}
	listedMatchesDisk(t, filepath.Dir(opts.Out), w.Files)
	log, err := broker.ReadDump(filepath.Join(runner.LogDir(opts.Out), "witness", "kafka.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, sc := range ev.Scenarios {
		topics = append(topics, sc.Topics...)
	}
	slices.Sort(topics)
	if got := log.TopicNames(); !slices.Equal(got, topics) {
		t.Errorf("dumped topics %v; the scenarios used %v", got, topics)
	}
	if len(log.Groups["notify-"+ev.Run.ID]) == 0 {
		t.Errorf("no committed offsets of the run's group in the dump: %v", log.Groups)
	}
	for _, topic := range topics {
		if n, err := k.EndOffset(t.Context(), topic); err == nil {
			t.Errorf("topic %s is still on the broker (%d records)", topic, n)
		}
	}
}

// TestExternalBrokerNotDumped: an external broker that refuses to list the
// run's offsets at the end (authorization failed, injected at the
// protocol) cannot be dumped: the run still passes, the evidence has no
// broker witness and says why, and nothing half-written is left.
func TestExternalBrokerNotDumped(t *testing.T) {
	k := infratest.Kafka(t)
	if k.Cluster() == nil {
		t.Skip("needs the embedded broker to inject the refusal")
	}
	opts := runOpts(t, "normalChain")
	opts.Brokers = k.Brokers
	opts.OnScenario = func(evidence.Scenario) {
		k.Cluster().ControlKey(int16(kmsg.ListOffsets), func(r kmsg.Request) (kmsg.Response, error, bool) {
			k.Cluster().KeepControl()
			req := r.(*kmsg.ListOffsetsRequest)
			resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		})
	}
	ev, err := runner.Run(t.Context(), opts)
	if err != nil || ev.Summary.Passed != 1 {
		t.Fatalf("Run = %v, %+v; want a passing run", err, ev)
	}
	w := ev.Witness
	if w.Broker != nil || len(w.Missing) == 0 || !strings.HasPrefix(w.Missing[len(w.Missing)-1], "broker: the run's topics could not be dumped") ||
		!strings.Contains(w.Missing[len(w.Missing)-1], "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("witness.broker = %+v, missing %q; want it missing, saying why", w.Broker, w.Missing)
	}
	if es, err := os.ReadDir(filepath.Join(runner.LogDir(opts.Out), "witness")); err == nil && len(es) > 0 {
		t.Errorf("left in witness/: %v", es)
	}
}
