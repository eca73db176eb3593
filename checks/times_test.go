package checks

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// retime sets the time of line no (1-based) of a log of the evidence at
// path to what at returns for its current time, and reseals the logs.
func retime(t *testing.T, path, log string, no int, at func(time.Time) time.Time) {
	t.Helper()
	lp := filepath.Join(filepath.Dir(path), log)
	lines := readLines(t, lp)
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[no-1]), &e); err != nil {
		t.Fatal(err)
	}
	old, err := time.Parse(time.RFC3339Nano, e["time"].(string))
	if err != nil {
		t.Fatal(err)
	}
	e["time"] = at(old).UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(e)
	lines[no-1] = string(b) + "\n"
	writeLines(t, lp, lines)
	reseal(t, path)
}

// TestEventTimes: within a log, time never goes back, and every event lies
// within the run (run.start to run.end, give or take timeTolerance).
func TestEventTimes(t *testing.T) {
	const relay = "u80/normalChain/relay-a.jsonl" // claim, publish, mark
	claimTime := func(t *testing.T, p string) time.Time {
		var e struct{ Time time.Time }
		json.Unmarshal([]byte(readLines(t, filepath.Join(filepath.Dir(p), relay))[0]), &e)
		return e.Time
	}
	for _, tc := range []struct {
		name  string
		log   string
		line  int
		at    func(p string, old time.Time) time.Time
		rules []string // nil: clean
	}{
		{"mark before its claim and 5 s before the run", relay, 3,
			func(p string, _ time.Time) time.Time { return readEvidence(t, p).Run.Start.Add(-5 * time.Second) },
			[]string{"time-order", "time-outside-run"}},
		{"mark before its publish, within the run", relay, 3,
			func(p string, _ time.Time) time.Time { return claimTime(t, p).Add(time.Microsecond) },
			[]string{"time-order"}},
		{"last event an hour after the run", "u80/normalChain/consumer-1.jsonl", 7,
			func(_ string, old time.Time) time.Time { return old.Add(time.Hour) }, []string{"time-outside-run"}},
		{"first event a day before the run", "u80/txBoundaryRollback/scenario.jsonl", 1,
			func(_ string, old time.Time) time.Time { return old.Add(-24 * time.Hour) }, []string{"time-outside-run"}},
		{"first event 1 s before the run (clock granularity)", "u80/txBoundaryRollback/scenario.jsonl", 1,
			func(p string, _ time.Time) time.Time { return readEvidence(t, p).Run.Start.Add(-time.Second) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := copyFixture(t, "u80")
			retime(t, p, tc.log, tc.line, func(old time.Time) time.Time { return tc.at(p, old) })
			v := verify(t, p)
			if tc.rules == nil {
				if v.Status != Pass {
					t.Fatalf("verdict %s %+v; want PASS", v.Status, v.Reasons)
				}
				return
			}
			if v.Status != Fail {
				t.Fatalf("verdict %s %v; want FAIL with %v", v.Status, rules(v), tc.rules)
			}
			for _, rule := range tc.rules {
				rs := reasonsOf(v, rule)
				if len(rs) == 0 {
					t.Errorf("rules %v lack %s", rules(v), rule)
					continue
				}
				if r := rs[0]; r.Log != tc.log || r.Line != int64(tc.line) || r.Claimed == "" || r.Recomputed == "" {
					t.Errorf("reason %+v does not say where and which times", r)
				}
			}
			for _, rule := range []string{"time-order", "time-outside-run"} {
				if hasRule(v, rule) && !slices.Contains(tc.rules, rule) {
					t.Errorf("rules %v: unexpected %s", rules(v), rule)
				}
			}
		})
	}
	t.Run("run ends before it starts", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		ev.Run.Start, ev.Run.End = ev.Run.End, ev.Run.Start
		writeEvidence(t, p, ev)
		v := verify(t, p)
		if v.Status != Fail || !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == "time-outside-run" && r.Log == "" }) {
			t.Fatalf("verdict %s %v; want FAIL time-outside-run about the run itself", v.Status, rules(v))
		}
	})
}
