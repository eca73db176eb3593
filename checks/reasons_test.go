package checks

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
)

// The checker's rules that the tamper, selection, time and hostile tests
// do not provoke, one edit of the clean U80 fixture each. The fixture's
// scenarios, in order: txBoundaryRollback, normalChain,
// sendBeforeMarkCrash, offsetReplay, businessInvariants.

// rewriteLog rewrites the log at rel (relative to the evidence file at
// path) line by line; keep returns the line to write, "" to drop it.
func rewriteLog(t *testing.T, path, rel string, keep func(line string) string) {
	t.Helper()
	p := filepath.Join(filepath.Dir(path), filepath.FromSlash(rel))
	var out []string
	for _, l := range readLines(t, p) {
		if l = keep(l); l != "" {
			out = append(out, l)
		}
	}
	writeLines(t, p, out)
}

// dropKind drops the events of a kind from a log.
func dropKind(t *testing.T, path, rel string, kind evidence.Kind) {
	t.Helper()
	rewriteLog(t, path, rel, func(l string) string {
		if strings.Contains(l, `"kind":"`+string(kind)+`"`) {
			return ""
		}
		return l
	})
}

func TestCheckerReasons(t *testing.T) {
	for _, c := range []struct {
		rule   string
		status Status
		edit   func(t *testing.T, path string, ev *evidence.Evidence) // ev is written after; logs edited are resealed
	}{
		{"run-interrupted", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) { ev.Run.Interrupted = true }},
		{"scenario-duplicate", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios = append(ev.Scenarios, ev.Scenarios[1])
		}},
		{"scenario-unknown", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) { ev.Scenarios[1].ID = "noSuchScenario" }},
		{"scenario-mismatch", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) { ev.Scenarios[2].Boundary = "ack" }},
		{"log-duplicate", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Logs = append(ev.Scenarios[1].Logs, ev.Scenarios[1].Logs[0])
		}},
		{"log-shared", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Logs = append(ev.Scenarios[1].Logs, ev.Scenarios[0].Logs[0])
		}},
		{"event-decode", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			// 0.0 is an integer to JSON Schema, not to encoding/json.
			for _, ref := range ev.Scenarios[1].Logs {
				rewriteLog(t, path, ref.Path, func(l string) string {
					l = strings.Replace(l, `"offset":0}`, `"offset":0.0}`, 1)
					return strings.Replace(l, `"offset":0,`, `"offset":0.0,`, 1)
				})
			}
		}},
		{"run-id", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			rewriteLog(t, path, ev.Scenarios[1].Logs[0].Path, func(l string) string {
				return strings.Replace(l, `"run_id":"`+ev.Run.ID+`"`, `"run_id":"another-run"`, 1)
			})
		}},
		{"invariant-duplicate", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Invariants = append(ev.Scenarios[1].Invariants, ev.Scenarios[1].Invariants[0])
		}},
		{"invariant-log-mismatch", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) { ev.Scenarios[1].Invariants[0].Rows++ }},
		{"invariant-log-missing", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			for _, ref := range ev.Scenarios[1].Logs {
				dropKind(t, path, ref.Path, evidence.KindInvariant)
			}
		}},
		{"invariant-not-recorded", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Invariants = ev.Scenarios[1].Invariants[1:]
		}},
		{"invariant-unknown", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Invariants = append(ev.Scenarios[1].Invariants, evidence.InvariantResult{ID: "no-such-invariant"})
		}},
		{"table-duplicate", Fail, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Tables = append(ev.Scenarios[1].Tables, ev.Scenarios[1].Tables[0])
		}},
		{"table-not-recorded", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Tables = ev.Scenarios[1].Tables[1:]
		}},
		{"table-unknown", Inconclusive, func(t *testing.T, _ string, ev *evidence.Evidence) {
			ev.Scenarios[1].Tables = append(ev.Scenarios[1].Tables,
				evidence.TableDigest{Table: "no_such_table", SHA256: evidence.DigestRows(nil)})
		}},
		// normalChain's outboxTx is the states observed: without observe
		// events neither it nor the status can be recomputed.
		{"metric-not-recomputable", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			for _, ref := range ev.Scenarios[1].Logs {
				dropKind(t, path, ref.Path, evidence.KindObserve)
			}
		}},
		{"status-not-recomputable", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			for _, ref := range ev.Scenarios[1].Logs {
				dropKind(t, path, ref.Path, evidence.KindObserve)
			}
		}},
		// Without the inbox_reject, normalChain's duplicateBlocked is none:
		// the metrics no longer meet the acceptance.
		{"status-mismatch", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			for _, ref := range ev.Scenarios[1].Logs {
				dropKind(t, path, ref.Path, evidence.KindInboxReject)
			}
		}},
		{"fault-not-injected", Fail, func(t *testing.T, path string, ev *evidence.Evidence) {
			for _, ref := range ev.Scenarios[2].Logs {
				dropKind(t, path, ref.Path, evidence.KindFault)
			}
		}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			p := copyFixture(t, "u80")
			ev := readEvidence(t, p)
			c.edit(t, p, ev)
			writeEvidence(t, p, ev)
			reseal(t, p)
			v := verify(t, p)
			if !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == c.rule && r.Status == c.status }) {
				t.Fatalf("verdict %s %v; want a %s reason %s", v.Status, rules(v), c.status, c.rule)
			}
			if c.status == Fail && v.Status != Fail {
				t.Errorf("verdict %s; want FAIL", v.Status)
			}
		})
	}
}

// TestLogUnreadable: a log that passed the path checks but cannot be read.
// Root reads any file, so as root this cannot be provoked from outside.
func TestLogUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: a file mode does not stop root from reading a log")
	}
	p := copyFixture(t, "u80")
	only(t, p, "normalChain")
	ev := readEvidence(t, p)
	log := filepath.Join(filepath.Dir(p), filepath.FromSlash(ev.Scenarios[0].Logs[0].Path))
	if err := os.Chmod(log, 0); err != nil {
		t.Fatal(err)
	}
	if v := verify(t, p); v.Status != Fail || !hasRule(v, "log-unreadable") {
		t.Fatalf("verdict %s %v; want FAIL log-unreadable", v.Status, rules(v))
	}
}

// TestSQLEngineFailure: when the replayed state cannot be loaded, the
// scenario's invariants are inconclusive (sql-engine), never passed.
func TestSQLEngineFailure(t *testing.T) {
	ctx := t.Context()
	eng, err := openSQLite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	invs, err := invariants.All()
	if err != nil {
		t.Fatal(err)
	}
	c := &checker{v: &Verdict{}, eng: eng, invs: invs}
	if got := c.sqlChecks(ctx, &evidence.Scenario{ID: "normalChain"}, model.New(nil, nil)); got != nil {
		t.Errorf("sqlChecks on a closed engine = %v; want nil (could not run)", got)
	}
	if len(c.v.Reasons) != 1 || c.v.Reasons[0].Rule != "sql-engine" || c.v.Reasons[0].Status != Inconclusive {
		t.Fatalf("reasons %+v; want one inconclusive sql-engine", c.v.Reasons)
	}
}
