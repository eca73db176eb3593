package crosscheck

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Steps 1 to 3 of the witness step on the witnessed fixture: its files
// whole and listed, readable, and this run's. Each case edits the copy
// (files or the evidence's witness object) and reads its witnesses as
// Verify does.

// witnessedFixture is the evidence file of package checks' witnessed
// fixture: a clean run of every scenario by the real runner, with its
// binlog and the embedded broker's data directory (checks/testdata/regen.sh).
var witnessedFixture = filepath.Join("..", "testdata", "witnessed", "u80.json")

// copyFixture copies the witnessed fixture into a temporary directory and
// returns the path of the copied evidence file.
func copyFixture(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Dir(witnessedFixture))); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "u80.json")
}

func readEvidence(t testing.TB, path string) *evidence.Evidence {
	t.Helper()
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// readCopyWitnesses copies the witnessed fixture, lets edit change the
// files (dir is the copy's directory) and the evidence, and returns what
// Read finds.
func readCopyWitnesses(t *testing.T, edit func(dir string, ev *evidence.Evidence)) (*Witnesses, []finding.Reason) {
	t.Helper()
	p := copyFixture(t)
	ev := readEvidence(t, p)
	dir := filepath.Dir(p)
	if edit != nil {
		edit(dir, ev)
	}
	b, err := bundle.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return Read(t.Context(), ev, b)
}

func ruleNames(rs []finding.Reason) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Rule) {
			out = append(out, r.Rule)
		}
	}
	slices.Sort(out)
	return out
}

// fixFile records a witness file's new size and sha256 in the evidence,
// as a forger who changed it would.
func fixFile(t *testing.T, dir string, ev *evidence.Evidence, rel string) {
	t.Helper()
	sum, size, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range [][]evidence.WitnessFile{ev.Witness.Database.Files, ev.Witness.Broker.Files} {
		for i := range fs {
			if fs[i].Path == rel {
				fs[i].SHA256, fs[i].Size = sum, size
				return
			}
		}
	}
	t.Fatalf("%s is not a listed witness file", rel)
}

// fileSHA256 returns a file's sha256 and size, as a forger computes them.
func fileSHA256(path string) (string, int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), int64(len(b)), nil
}

const (
	fixtureBinlog = "u80/witness/db/binlog.000001"
	fixtureGroups = "u80/witness/kafka/groups.log"
)

func cutFile(t *testing.T, path string, n int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-n); err != nil {
		t.Fatal(err)
	}
}

// TestWitnessFixtureReads: the fixture's witnesses read with no reason,
// the run's binlog from GTID 1 and every scenario's database and topics.
func TestWitnessFixtureReads(t *testing.T) {
	ws, rs := readCopyWitnesses(t, nil)
	if len(rs) > 0 || ws.db == nil || ws.broker == nil || !ws.private {
		t.Fatalf("reasons %+v, db %v, broker %v, private %v", rs, ws.db != nil, ws.broker != nil, ws.private)
	}
	ev := readEvidence(t, witnessedFixture)
	if len(ws.db.bySchema) != len(ev.Scenarios) || ws.db.first.Seq != 1 || ws.db.last.String() != ev.Witness.Database.GTIDEnd {
		t.Errorf("%d databases, GTIDs %s..%s; want %d, 1..%s", len(ws.db.bySchema), ws.db.first, ws.db.last, len(ev.Scenarios),
			ev.Witness.Database.GTIDEnd)
	}
}

func TestWitnessFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string, ev *evidence.Evidence)
		rule string
		db   bool // the database witness is dropped (nil)
	}{
		{"binlog deleted", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.Remove(filepath.Join(dir, fixtureBinlog))
		}, "witness-file-missing", true},
		{"broker file deleted", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.Remove(filepath.Join(dir, fixtureGroups))
		}, "witness-file-missing", false},
		{"no file listed", func(t *testing.T, dir string, ev *evidence.Evidence) {
			ev.Witness.Database.Files = nil
			os.RemoveAll(filepath.Join(dir, "u80/witness/db"))
		}, "witness-file-missing", true},
		{"file outside the witness directory", func(t *testing.T, dir string, ev *evidence.Evidence) {
			ev.Witness.Database.Files[0].Path = "u80/normalChain/orders.jsonl"
		}, "witness-path", true},
		{"witness beside another log directory", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.MkdirAll(filepath.Join(dir, "other", "witness"), 0o755)
			os.Rename(filepath.Join(dir, "u80/witness/db"), filepath.Join(dir, "other/witness/db"))
			ev.Witness.Database.Files[0].Path = "other/witness/db/binlog.000001"
		}, "witness-path", true},
		{"dot-dot in path", func(t *testing.T, dir string, ev *evidence.Evidence) {
			ev.Witness.Database.Files[0].Path = "u80/witness/db/../db/binlog.000001"
		}, "witness-path", true},
		{"symlink out of the bundle", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureBinlog)
			out := filepath.Join(t.TempDir(), "binlog.000001")
			os.Rename(p, out)
			os.Symlink(out, p)
		}, "witness-path", true},
		{"size", func(t *testing.T, dir string, ev *evidence.Evidence) {
			ev.Witness.Database.Files[0].Size++
		}, "witness-size", true},
		{"sha256", func(t *testing.T, dir string, ev *evidence.Evidence) {
			ev.Witness.Broker.Files[0].SHA256 = strings.Repeat("0", 64)
		}, "witness-digest", false},
		{"unlisted broker file", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.WriteFile(filepath.Join(dir, "u80/witness/kafka/extra.json"), []byte("{}"), 0o644)
		}, "witness-unlisted", false},
		{"unlisted binlog file", func(t *testing.T, dir string, ev *evidence.Evidence) {
			b, _ := os.ReadFile(filepath.Join(dir, fixtureBinlog))
			os.WriteFile(filepath.Join(dir, "u80/witness/db/binlog.000002"), b, 0o644)
		}, "witness-unlisted", true},
		{"binlog cut short, sha256 fixed up", func(t *testing.T, dir string, ev *evidence.Evidence) {
			cutFile(t, filepath.Join(dir, fixtureBinlog), 100)
			fixFile(t, dir, ev, fixtureBinlog)
		}, "witness-damaged", true},
		{"binlog cut at its rotate event, sha256 fixed up", func(t *testing.T, dir string, ev *evidence.Evidence) {
			cutFile(t, filepath.Join(dir, fixtureBinlog), 44) // ROTATE to binlog.000002: 19 header + 8 + 13 name + 4 crc
			fixFile(t, dir, ev, fixtureBinlog)
		}, "witness-damaged", true},
		{"broker partition cut short, sha256 fixed up", func(t *testing.T, dir string, ev *evidence.Evidence) {
			rel := "u80/witness/kafka/partitions/" + topicPrefix(ev.Run.ID, "publishFailures") + "-0/0.dat"
			cutFile(t, filepath.Join(dir, filepath.FromSlash(rel)), 10)
			fixFile(t, dir, ev, rel)
		}, "witness-damaged", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) { tc.edit(t, dir, ev) })
			if !slices.Contains(ruleNames(rs), tc.rule) {
				t.Fatalf("rules %v; want %s: %+v", ruleNames(rs), tc.rule, rs)
			}
			for _, r := range rs {
				if r.Status != finding.Fail || r.Witness == "" {
					t.Errorf("%s is %s at %q; want FAIL at a place in the witness", r.Rule, r.Status, r.Witness)
				}
			}
			if (ws.db == nil) != tc.db || (ws.broker == nil) == tc.db {
				t.Errorf("db read %v, broker read %v; want only the untouched witness read", ws.db != nil, ws.broker != nil)
			}
		})
	}
}

// TestWitnessBelongs: a witness must be this run's: its server, its GTID
// range, its databases and topics, the scenarios the evidence lists.
func TestWitnessBelongs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(ev *evidence.Evidence)
		rules []string
	}{
		{"server version", func(ev *evidence.Evidence) { ev.Witness.Database.ServerVersion = "10.6.1-MariaDB" }, []string{"witness-server"}},
		{"server id", func(ev *evidence.Evidence) { ev.Witness.Database.ServerID = 7 }, []string{"witness-server"}},
		{"gtid end beyond the binlog", func(ev *evidence.Evidence) { ev.Witness.Database.GTIDEnd = "0-1-9999" }, []string{"witness-gtid"}},
		{"gtid end before the binlog's", func(ev *evidence.Evidence) { ev.Witness.Database.GTIDEnd = "0-1-3" }, []string{"witness-gtid"}},
		{"gtid end of another domain", func(ev *evidence.Evidence) { ev.Witness.Database.GTIDEnd = "1-1-3" }, []string{"witness-gtid"}},
		{"gtid start after the first", func(ev *evidence.Evidence) { ev.Witness.Database.GTIDStart = "0-1-5" }, []string{"witness-gtid"}},
		{"gtid unreadable", func(ev *evidence.Evidence) { ev.Witness.Database.GTIDEnd = "zero" }, []string{"witness-gtid"}},
		{"another run's id", func(ev *evidence.Evidence) { ev.Run.ID = "20990101t000000_abcd" },
			[]string{"witness-foreign", "witness-names", "witness-scenario-absent"}},
		{"a scenario left out", func(ev *evidence.Evidence) { ev.Scenarios = ev.Scenarios[1:] }, []string{"witness-scenario-unlisted"}},
		{"a topic left out", func(ev *evidence.Evidence) {
			i := slices.IndexFunc(ev.Scenarios, func(s evidence.Scenario) bool { return len(s.Topics) > 0 })
			ev.Scenarios = slices.Delete(ev.Scenarios, i, i+1)
		}, []string{"witness-scenario-unlisted"}},
		{"database name", func(ev *evidence.Evidence) { ev.Scenarios[0].Database = "ofa_other" }, []string{"witness-names"}},
		{"topic name", func(ev *evidence.Evidence) {
			ev.Scenarios[0].Topics = append(ev.Scenarios[0].Topics, "ofa.other.placement")
		}, []string{"witness-names"}},
		{"topic not in the broker", func(ev *evidence.Evidence) {
			ev.Scenarios[0].Topics = append(ev.Scenarios[0].Topics, topicPrefix(ev.Run.ID, ev.Scenarios[0].ID)+".more")
		}, []string{"witness-scenario-absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) { tc.edit(ev) })
			if got := ruleNames(rs); !slices.Equal(got, tc.rules) {
				t.Fatalf("rules %v; want %v: %+v", got, tc.rules, rs)
			}
			for _, r := range rs {
				if r.Status != finding.Fail {
					t.Errorf("%s is %s; want FAIL", r.Rule, r.Status)
				}
			}
		})
	}
}

// TestWitnessGTIDList: @@gtid_binlog_pos as the evidence records it.
func TestWitnessGTIDList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"", 0, true}, {"0-1-5", 1, true}, {"0-1-5,1-2-7", 2, true}, {" 0-1-5 , ", 1, true}, {"0-1-5,0-2-7", 0, false}, {"0-1", 0, false}} {
		got, err := parseGTIDList(tc.in)
		if (err == nil) != tc.ok || len(got) != tc.want {
			t.Errorf("parseGTIDList(%q) = %v, %v; want %d GTIDs, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestWitnessStateChains: the end state is rebuilt from row images that
// chain; a change of a row the history never wrote means the witness does
// not hold the whole history (the verifier then fails witness-state,
// checks.TestWitnessStateProblem). A scenario whose database is not
// witnessed has no end state to rebuild.
func TestWitnessStateChains(t *testing.T) {
	row := func(q int64) map[string]binlog.Value { return map[string]binlog.Value{"sku": "S", "quantity": q} }
	tx := func(seq uint64, cs ...binlog.RowChange) binlog.Transaction {
		return binlog.Transaction{GTID: binlog.GTID{Server: 1, Seq: seq}, File: "binlog.000001", Pos: uint32(seq) * 100, Changes: cs}
	}
	ins := binlog.RowChange{Table: "stock", Op: binlog.Insert, After: row(10)}
	upd := binlog.RowChange{Table: "stock", Op: binlog.Update, Before: row(10), After: row(9)}
	del := binlog.RowChange{Table: "stock", Op: binlog.Delete, Before: row(9)}
	tables, problem := binlogTables([]binlog.Transaction{tx(1, ins), tx(2, upd)})
	if problem != "" || len(tables[0].Rows) != 1 || tables[0].Rows[0][1] != int64(9) {
		t.Fatalf("insert, update: %v %q; want one stock row of 9", tables, problem)
	}
	if tables, problem = binlogTables([]binlog.Transaction{tx(1, ins), tx(2, upd), tx(3, del)}); problem != "" || len(tables[0].Rows) != 0 {
		t.Fatalf("insert, update, delete: %v %q; want no row", tables, problem)
	}
	for _, txs := range [][]binlog.Transaction{{tx(2, upd)}, {tx(1, ins), tx(3, del)}, {tx(1, ins), tx(2, upd), tx(3, upd)}} {
		if _, problem := binlogTables(txs); !strings.Contains(problem, "never wrote") || !strings.Contains(problem, "GTID 0-1-") {
			t.Errorf("binlogTables(%d transactions) problem %q; want the change the history never wrote", len(txs), problem)
		}
		r := &Result{db: newScenarioDB("ofa_x_normalchain", txs)}
		if _, problem, ok := r.EndState(); !ok || !strings.Contains(problem, "never wrote") {
			t.Errorf("EndState(%d transactions) = %q, %v; want the problem, for a witnessed database", len(txs), problem, ok)
		}
	}
	if _, _, ok := (&Result{}).EndState(); ok {
		t.Error("EndState without a database witness: ok; want not witnessed")
	}
}
