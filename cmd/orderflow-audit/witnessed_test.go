package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Real runs made by the test, then forged the ways a reviewer would try
// (issue 10): none may PASS, and the witness rule that catches each is
// named. The same runs show that independent readers agree with the
// bundle: mariadb-binlog reads its binlog, and `orderflow-audit broker
// --data-dir` serves its topics to a Kafka client.

// bundle is a run's evidence file and its decoded evidence.
type bundle struct {
	path string
	ev   *evidence.Evidence
}

func (b bundle) dir() string { return filepath.Dir(b.path) }

func realRun(t *testing.T, args ...string) bundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "u80.json")
	code, _, stderr := runCLI(t, append(append([]string{"run"}, args...), "--out", path)...)
	if code != exitOK && code != exitFail {
		t.Fatalf("run %v: exit %d\n%s", args, code, stderr)
	}
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Witness == nil || ev.Witness.Database == nil || ev.Witness.Broker == nil {
		t.Fatalf("run %v is not witnessed: %+v", args, ev.Witness)
	}
	return bundle{path, ev}
}

// copyBundle copies a run's bundle; the copy's evidence is decoded anew.
func copyBundle(t *testing.T, b bundle) bundle {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(b.dir())); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dst, "u80.json")
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bundle{path, ev}
}

// seal records what a forger recomputes: every log's and witness file's
// digest, the summary, boundary table and proof matrix; and writes it.
func seal(t *testing.T, b bundle) {
	t.Helper()
	var err error
	for i := range b.ev.Scenarios {
		for j := range b.ev.Scenarios[i].Logs {
			ref := &b.ev.Scenarios[i].Logs[j]
			if ref.SHA256, ref.Lines, err = evidence.FileDigest(filepath.Join(b.dir(), ref.Path)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w := b.ev.Witness; w != nil {
		for _, fs := range [][]evidence.WitnessFile{filesOf(w.Database), filesOfBroker(w.Broker)} {
			for i := range fs {
				f := &fs[i]
				data, err := os.ReadFile(filepath.Join(b.dir(), f.Path))
				if err != nil {
					continue // a deleted file stays listed
				}
				f.Size = int64(len(data))
				f.SHA256 = sha256Hex(data)
			}
		}
	}
	b.ev.Summary = evidence.Summarize(b.ev.Scenarios)
	b.ev.Boundaries = evidence.ComputeBoundaries(b.ev.Scenarios)
	b.ev.ProofBoundary = evidence.ComputeProofBoundary(b.ev)
	if err := evidence.WriteFile(b.path, b.ev); err != nil {
		t.Fatal(err)
	}
}

func filesOf(d *evidence.DatabaseWitness) []evidence.WitnessFile {
	if d == nil {
		return nil
	}
	return d.Files
}

func filesOfBroker(b *evidence.BrokerWitness) []evidence.WitnessFile {
	if b == nil {
		return nil
	}
	return b.Files
}

// swapWitness puts another run's witnesses (files and listing) into b.
func swapWitness(t *testing.T, b, from bundle) {
	t.Helper()
	dir := filepath.Join(b.dir(), "u80", "witness")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(from.dir(), "u80", "witness"))); err != nil {
		t.Fatal(err)
	}
	b.ev.Witness = from.ev.Witness
}

// rewriteEvents rewrites every event of a log into what f returns for it
// (none drops it) and numbers the seqs again.
func rewriteEvents(t *testing.T, path string, f func(m map[string]any) []map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	seq := 0
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		for _, e := range f(m) {
			seq++
			e["seq"] = seq
			b, _ := json.Marshal(e)
			out.Write(append(b, '\n'))
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// claimClean makes a failing run's evidence say what a clean run of the
// same scenarios says: no plant, every scenario PASS with the clean run's
// metrics, every live invariant 0 (in the evidence and in the invariant
// events), the table digests of what its logs replay to.
func claimClean(t *testing.T, b, clean bundle) {
	t.Helper()
	b.ev.Run.Planted = ""
	b.ev.Run.Selection.Plant = ""
	if i := slices.Index(b.ev.Run.Args, "--plant"); i >= 0 {
		b.ev.Run.Args = slices.Delete(b.ev.Run.Args, i, i+2)
	}
	for i := range b.ev.Scenarios {
		sc := &b.ev.Scenarios[i]
		j := slices.IndexFunc(clean.ev.Scenarios, func(c evidence.Scenario) bool { return c.ID == sc.ID })
		sc.Status, sc.Reason, sc.Metrics = evidence.StatusPass, "", clean.ev.Scenarios[j].Metrics
		sc.Line = evidence.FormatLine(sc.Suite, sc.ID, sc.Status, sc.Metrics)
		for k := range sc.Invariants {
			sc.Invariants[k].Rows = 0
		}
		rewriteEvents(t, filepath.Join(b.dir(), "u80", sc.ID, "scenario.jsonl"), func(m map[string]any) []map[string]any {
			if m["kind"] == "invariant" {
				m["rows"] = 0
			}
			return []map[string]any{m}
		})
	}
	seal(t, b)
	// The digests of what the logs replay to, as the verifier says them.
	v := verdictOf(t, b.path)
	digest := regexp.MustCompile(`^(\d+) rows, sha256 ([0-9a-f]{64})$`)
	for _, r := range v.Reasons {
		m := digest.FindStringSubmatch(r.Recomputed)
		if r.Rule != "table-digest" || m == nil {
			continue
		}
		sc := &b.ev.Scenarios[slices.IndexFunc(b.ev.Scenarios, func(s evidence.Scenario) bool { return s.ID == r.Scenario })]
		for k := range sc.Tables {
			if sc.Tables[k].Table == r.Field {
				fmt.Sscan(m[1], &sc.Tables[k].Rows)
				sc.Tables[k].SHA256 = m[2]
			}
		}
	}
	seal(t, b)
}

func verdictOf(t *testing.T, path string) *checks.Verdict {
	t.Helper()
	v, err := checks.Verify(t.Context(), path, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ruleList(v *checks.Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		if !slices.Contains(out, r.Rule) {
			out = append(out, r.Rule)
		}
	}
	return out
}

func TestWitnessedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("makes three real runs")
	}
	infratest.Server(t)
	infratest.RequireMariaDB(t) // run starts a private server
	clean := realRun(t, "--scenarios", "normalChain")
	other := realRun(t, "--scenarios", "normalChain")
	planted := realRun(t, "--plant", "no-inbox-dedupe", "--scenarios", "normalChain")

	for _, tc := range []struct {
		name   string
		forge  func(t *testing.T) bundle
		status checks.Status
		rules  []string // each must be among the reasons
	}{
		{"a: failing run flipped to PASS, derived fields recomputed", func(t *testing.T) bundle {
			b := copyBundle(t, planted)
			claimClean(t, b, clean)
			return b
		}, checks.Fail, []string{"witness-effect-tx", "witness-invariant"}},
		{"b: clean logs with a no-inbox-dedupe run's witnesses, sha256 fixed up", func(t *testing.T) bundle {
			b := copyBundle(t, clean)
			swapWitness(t, b, planted)
			seal(t, b)
			return b
		}, checks.Fail, []string{"witness-foreign", "witness-scenario-absent"}},
		{"b: no-inbox-dedupe run with its consumer log rewritten clean", func(t *testing.T) bundle {
			b := copyBundle(t, planted)
			effects := 0
			rewriteEvents(t, filepath.Join(b.dir(), "u80", "normalChain", "consumer-1.jsonl"), func(m map[string]any) []map[string]any {
				if m["kind"] != "effect" {
					return []map[string]any{m}
				}
				if effects++; effects > 1 { // the duplicate: say the inbox rejected it
					return []map[string]any{{"time": m["time"], "run_id": m["run_id"], "scenario": m["scenario"], "actor": m["actor"],
						"kind": "inbox_reject", "event_id": m["event_id"], "consumer": m["consumer"],
						"topic": topicOf(b), "partition": 0, "offset": 0}}
				}
				inbox := map[string]any{"time": m["time"], "run_id": m["run_id"], "scenario": m["scenario"], "actor": m["actor"],
					"kind": "inbox_insert", "event_id": m["event_id"], "consumer": m["consumer"], "topic": topicOf(b), "partition": 0, "offset": 0}
				return []map[string]any{inbox, m}
			})
			claimClean(t, b, clean)
			return b
		}, checks.Fail, []string{"witness-effect-tx", "witness-reject-wrote", "witness-table-digest", "witness-invariant"}},
		{"c: another clean run's witnesses, sha256 fixed up", func(t *testing.T) bundle {
			b := copyBundle(t, clean)
			swapWitness(t, b, other)
			seal(t, b)
			return b
		}, checks.Fail, []string{"witness-foreign", "witness-scenario-absent"}},
		{"d: witnesses deleted", func(t *testing.T) bundle {
			b := copyBundle(t, clean)
			os.RemoveAll(filepath.Join(b.dir(), "u80", "witness"))
			return b
		}, checks.Fail, []string{"witness-file-missing"}},
		{"d: witnesses deleted and listed as missing", func(t *testing.T) bundle {
			b := copyBundle(t, clean)
			os.RemoveAll(filepath.Join(b.dir(), "u80", "witness"))
			b.ev.Witness = &evidence.Witness{Missing: []string{"database: could not be captured", "broker: could not be captured"}}
			seal(t, b)
			return b
		}, checks.Inconclusive, []string{"witness-missing"}},
		{"e: binlog cut short, sha256 fixed up", func(t *testing.T) bundle {
			b := copyBundle(t, clean)
			p := filepath.Join(b.dir(), filepath.FromSlash(b.ev.Witness.Database.Files[0].Path))
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-200)
			seal(t, b)
			return b
		}, checks.Fail, []string{"witness-damaged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.forge(t)
			v := verdictOf(t, b.path)
			got := ruleList(v)
			if v.Status != tc.status {
				t.Errorf("verdict %s %v; want %s", v.Status, got, tc.status)
			}
			for _, r := range tc.rules {
				if !slices.Contains(got, r) {
					t.Errorf("rules %v lack %s", got, r)
				}
			}
		})
	}

	t.Run("the runs themselves are witnessed", func(t *testing.T) {
		for _, b := range []bundle{clean, other} {
			// One scenario leaves the other boundaries unproven: INCONCLUSIVE for that alone.
			if v := verdictOf(t, b.path); !slices.Equal(ruleList(v), []string{"boundary-not-run"}) || len(v.Witnessed) != 1 ||
				!strings.Contains(v.Witnessed[0].Summary, "ack: 1 transaction inbox+notification, 1 rejected duplicate with no row change") {
				t.Errorf("%s: verdict %s %v, witnessed %v; want only boundary-not-run, witnessed", b.path, v.Status, ruleList(v), v.Witnessed)
			}
		}
	})
	t.Run("mariadb-binlog reads the witness", func(t *testing.T) { mariadbBinlogReads(t, clean) })
	t.Run("broker serves the witness", func(t *testing.T) { brokerServes(t, clean) })
}

func topicOf(b bundle) string { return b.ev.Scenarios[0].Topics[0] }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// mariadbBinlogReads: the MariaDB package's own reader decodes the run's
// binlog (its row events, with --verbose) and finds the scenario's
// database and its transactions in it.
func mariadbBinlogReads(t *testing.T, b bundle) {
	mb, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mariadb-binlog not installed (scripts/ensure-mariadb.sh installs mariadb-server): %v", err)
		}
		t.Skip("mariadb-binlog not installed")
	}
	paths, err := binlog.Files(filepath.Join(b.dir(), "u80", "witness", "db"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("binlog files: %v %v", paths, err)
	}
	out, err := exec.Command(mb, append([]string{"--no-defaults", "--verbose"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-binlog: %v\n%s", err, out[max(0, len(out)-2000):])
	}
	s := string(out)
	db := b.ev.Scenarios[0].Database
	for _, want := range []string{"CREATE DATABASE `" + db + "`", "### INSERT INTO `" + db + "`.`outbox`",
		"### UPDATE `" + db + "`.`outbox`", "### INSERT INTO `" + db + "`.`notification`", "GTID 0-1-", "COMMIT"} {
		if !strings.Contains(s, want) {
			t.Errorf("mariadb-binlog output lacks %q", want)
		}
	}
	if !strings.Contains(s, b.ev.Witness.Database.GTIDEnd) {
		t.Errorf("mariadb-binlog output lacks the last GTID %s", b.ev.Witness.Database.GTIDEnd)
	}
}

// brokerServes: `orderflow-audit broker --data-dir` on a copy of the
// run's witness/kafka serves the run's topic, its records with their key
// and headers, and the group's committed offset to a kgo client.
func brokerServes(t *testing.T, b bundle) {
	data := t.TempDir()
	if err := os.CopyFS(data, os.DirFS(filepath.Join(b.dir(), "u80", "witness", "kafka"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"broker", "--listen", "127.0.0.1:0", "--data-dir", data}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line; stdout %q stderr %q", out.String(), errb.String())
		}
	}
	topic := topicOf(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	fs := cl.PollFetches(pctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("fetch %s: %v", topic, err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Key) != "1" || recs[0].Offset != 0 {
		t.Fatalf("records %+v; want the one record of order 1 at offset 0", recs)
	}
	if i := slices.IndexFunc(recs[0].Headers, func(h kgo.RecordHeader) bool { return h.Key == "event_id" }); i < 0 || string(recs[0].Headers[i].Value) != "e-1" {
		t.Errorf("headers %+v; want event_id e-1", recs[0].Headers)
	}
	group := "notify-" + b.ev.Run.ID
	offs, err := kadm.NewClient(cl).FetchOffsets(pctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1 {
		t.Errorf("group %s offset on %s/0 = %+v; want 1", group, topic, o)
	}
}
