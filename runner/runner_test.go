package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/schemas"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// referenceLines are the U80 observation lines of docs/design.md: a run on a
// fresh database must print exactly these.
var referenceLines = map[string]string{
	"txBoundaryRollback":  "U80 txBoundaryRollback=PASS stock=10 idemRows=0 outboxRollback=true seedUntouched=true",
	"normalChain":         "U80 normalChain=PASS outboxTx=PENDING→CLAIMED→SENT deliveries=1 effects=1 duplicateBlocked=unique",
	"sendBeforeMarkCrash": "U80 sendBeforeMarkCrash=PASS deliveries=2 businessEffects=1 oldTokenCas=0 state=SENT",
	"offsetReplay":        "U80 offsetReplay=PASS replay=1 inboxRejected=true effects=1",
	"businessInvariants":  "U80 businessInvariants=PASS sent=3 effects=3 inbox=3 linkedOrders=3 orphanSent=0 sentWithoutEffect=0 effectWithoutInbox=0 duplicatedEffects=0 orphanEffects=0",
}

var u80 = []string{"txBoundaryRollback", "normalChain", "sendBeforeMarkCrash", "offsetReplay", "businessInvariants"}

// runOpts returns options for a run against the test server, writing into
// a temporary directory.
func runOpts(t *testing.T, ids ...string) runner.Options {
	t.Helper()
	infratest.Server(t) // skip or fail early, with the standard message
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		t.Fatal(err)
	}
	return runner.Options{
		MySQL: cfg, Brokers: infra.ResolveBrokers(""), Scenarios: ids,
		Out: filepath.Join(t.TempDir(), "u80.json"), Timeout: 30 * time.Second, Executable: exe,
	}
}

func byID(ev *evidence.Evidence) map[string]evidence.Scenario {
	m := map[string]evidence.Scenario{}
	for _, s := range ev.Scenarios {
		m[s.ID] = s
	}
	return m
}

var sharedDirs []string

// exe is the orderflow-audit binary built for the scenarios that run actors
// as OS processes (the test binary itself has no actor command).
var exe string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ofa-runner-bin-")
	if err != nil {
		panic(err)
	}
	sharedDirs = append(sharedDirs, dir)
	exe = filepath.Join(dir, "orderflow-audit")
	build := exec.Command("go", "build", "-o", exe, "github.com/orderflow-audit/orderflow-audit/cmd/orderflow-audit")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build orderflow-audit: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	for _, d := range sharedDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

var (
	fullOnce sync.Once
	fullEv   *evidence.Evidence
	fullOut  string
	fullErr  error
)

// fullRun runs every scenario once for the tests of this file.
func fullRun(t *testing.T) (*evidence.Evidence, string) {
	t.Helper()
	opts := runOpts(t)
	fullOnce.Do(func() {
		// Shared by several tests, so not in one test's TempDir.
		dir, err := os.MkdirTemp("", "ofa-runner-test-")
		if err != nil {
			fullErr = err
			return
		}
		sharedDirs = append(sharedDirs, dir)
		opts.Out = filepath.Join(dir, "u80.json")
		fullOut = opts.Out
		fullEv, fullErr = runner.Run(context.Background(), opts)
	})
	if fullErr != nil {
		t.Fatalf("Run: %v", fullErr)
	}
	return fullEv, fullOut
}

// TestEveryScenarioRuns: every scenario of the spec has a run function and
// every run function a scenario of the spec.
func TestEveryScenarioRuns(t *testing.T) {
	for _, sc := range runner.Scenarios() {
		if sc.Run == nil {
			t.Errorf("scenario %s of the spec has no run function (add it to the runs table of its topic file, runner/<topic>.go)", sc.ID)
		}
	}
	for _, id := range runner.Bound() {
		if _, ok := spec.Lookup(id); !ok {
			t.Errorf("run function %s has no scenario in the spec", id)
		}
	}
}

func TestEveryScenarioPasses(t *testing.T) {
	ev, _ := fullRun(t)
	got := byID(ev)
	for _, sc := range runner.Scenarios() {
		if sc.OptIn {
			continue // not in the default selection (chaos)
		}
		t.Run(sc.ID, func(t *testing.T) {
			s, ok := got[sc.ID]
			if !ok {
				t.Fatalf("scenario %s missing from the evidence", sc.ID)
			}
			if s.Status != evidence.StatusPass {
				t.Fatalf("%s: %s (%s)", s.Line, s.Status, s.Reason)
			}
			if want, ok := referenceLines[sc.ID]; ok && s.Line != want {
				t.Errorf("line = %q\nwant   %q", s.Line, want)
			}
			if len(s.Logs) == 0 {
				t.Errorf("no event logs recorded")
			}
			if len(s.Invariants) == 0 || len(s.Tables) != len(evidence.DigestSpecs) {
				t.Errorf("invariants %d, tables %d", len(s.Invariants), len(s.Tables))
			}
		})
	}
	if ev.Summary.Passed != len(spec.DefaultIDs()) {
		t.Errorf("summary %+v", ev.Summary)
	}
}

func TestEvidenceAndLogsValidate(t *testing.T) {
	ev, out := fullRun(t)
	read, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if read.Run.ID != ev.Run.ID {
		t.Fatalf("run id %q, want %q", read.Run.ID, ev.Run.ID)
	}
	if read.Environment.Kafka.Mode == "" || read.Environment.Database.Version == "" {
		t.Errorf("environment incomplete: %+v", read.Environment)
	}
	dir := filepath.Dir(out)
	for _, s := range read.Scenarios {
		for _, ref := range s.Logs {
			path := filepath.Join(dir, filepath.FromSlash(ref.Path))
			sum, lines, err := evidence.FileDigest(path)
			if err != nil {
				t.Fatal(err)
			}
			if sum != ref.SHA256 || lines != ref.Lines {
				t.Errorf("%s: digest %s/%d, evidence says %s/%d", ref.Path, sum, lines, ref.SHA256, ref.Lines)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			err = evidence.ScanLines(f, func(l evidence.Line) error {
				if err := schemas.ValidateEventJSON(l.Raw); err != nil {
					t.Errorf("%s line %d: %v", ref.Path, l.No, err)
				}
				return nil
			})
			f.Close()
			if err != nil {
				t.Errorf("%s: %v", ref.Path, err)
			}
		}
	}
}

func TestNoScratchDatabaseLeftBehind(t *testing.T) {
	ev, _ := fullRun(t)
	s := infratest.Server(t)
	n, err := countDatabases(t, s, ev.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d scratch databases of run %s left behind", n, ev.Run.ID)
	}
}

func countDatabases(t *testing.T, s *infra.Server, runID string) (int, error) {
	t.Helper()
	var n int
	err := s.DB().QueryRowContext(context.Background(),
		`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?`, "ofa_"+runID+"%").Scan(&n)
	return n, err
}

// TestU80LinesStable runs the five U80 scenarios five times in a row: the
// reference lines must come out exactly every time.
func TestU80LinesStable(t *testing.T) {
	for i := range 5 {
		opts := runOpts(t, u80...)
		ev, err := runner.Run(t.Context(), opts)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		for _, s := range ev.Scenarios {
			if s.Line != referenceLines[s.ID] {
				t.Errorf("run %d: %q\nwant    %q (%s)", i+1, s.Line, referenceLines[s.ID], s.Reason)
			}
		}
	}
}

// TestPlantedBugMakesScenarioFail proves that the scenarios can fail: each
// planted bug makes the scenario that exposes it FAIL.
func TestPlantedBugMakesScenarioFail(t *testing.T) {
	type control struct {
		bug, scenario string
		rules         []string
		inRunner      bool // the scenario passes; the verifier alone catches it
	}
	var controls []control
	for _, p := range spec.Plants {
		for _, x := range p.Exposures {
			controls = append(controls, control{p.Bug, x.Scenario, x.Rules, p.InRunner()})
		}
	}
	for _, tc := range controls {
		t.Run(tc.bug+"/"+tc.scenario, func(t *testing.T) {
			opts := runOpts(t, tc.scenario)
			bug, err := runner.ParsePlant(tc.bug)
			if err != nil {
				t.Fatal(err)
			}
			opts.Plant = bug
			ev, err := runner.Run(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			s := ev.Scenarios[0]
			if s.Status != evidence.StatusFail && !tc.inRunner {
				t.Fatalf("%s with %s: %s, want FAIL", tc.scenario, tc.bug, s.Line)
			}
			if ev.Run.Planted != tc.bug {
				t.Errorf("evidence run.planted = %q", ev.Run.Planted)
			}
			t.Logf("%s: %s", s.Line, s.Reason)

			// The verifier, on its own, must fail the evidence and name
			// the rule that catches this bug.
			v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if v.Status != checks.Fail {
				t.Fatalf("verify %s, want FAIL", v.Status)
			}
			var rules []string
			for _, r := range v.Reasons {
				rules = append(rules, r.Rule)
				if slices.Contains(tc.rules, r.Rule) {
					return
				}
			}
			t.Errorf("verify did not name any of %v; rules: %v", tc.rules, rules)
		})
	}
}

// TestCleanRunVerifies: the verifier passes the evidence of a clean run.
// The run is on the shared test server, whose binary log is off: its
// database side is unwitnessed (witness.missing says why), so it passes
// only as allowed unwitnessed, with the database listed and nothing else.
// Witnessed runs on the private server are verified by the tests of
// cmd/orderflow-audit (TestWitnessedRuns) and the committed example.
func TestCleanRunVerifies(t *testing.T) {
	ev, out := fullRun(t)
	v, err := checks.Verify(t.Context(), out, checks.Options{AllowUnwitnessed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.Unwitnessed, ev.Witness.Missing) || len(v.Unwitnessed) != 1 || !strings.HasPrefix(v.Unwitnessed[0], "database: ") ||
		ev.Witness.Broker == nil {
		t.Errorf("unwitnessed %q, broker witness %v; want the database alone unwitnessed", v.Unwitnessed, ev.Witness.Broker != nil)
	}
	if v.Status != checks.Pass {
		var b strings.Builder
		_ = checks.WriteText(&b, v)
		t.Fatalf("verify %s:\n%s", v.Status, b.String())
	}
}

func TestSelectUnknownScenario(t *testing.T) {
	_, err := runner.Select([]string{"normalChain", "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "offsetReplay") {
		t.Fatalf("Select = %v; want an error naming nope and the valid ids", err)
	}
}

func TestUnreachableDatabaseWritesNothing(t *testing.T) {
	cfg, err := infra.ResolveDSN("root:hunter2@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "u80.json")
	_, err = runner.Run(t.Context(), runner.Options{MySQL: cfg, Out: out})
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Fatalf("Run = %v; want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the password: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an evidence file was written: %v", err)
	}
}

func TestInterruptedRun(t *testing.T) {
	opts := runOpts(t, "placement", "normalChain", "offsetReplay")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts.OnScenario = func(evidence.Scenario) { cancel() }
	ev, err := runner.Run(ctx, opts)
	if !errors.Is(err, runner.ErrInterrupted) {
		t.Fatalf("Run = %v; want ErrInterrupted", err)
	}
	if !ev.Run.Interrupted || ev.Summary.NotRun == 0 {
		t.Errorf("run %+v summary %+v", ev.Run, ev.Summary)
	}
	read, _, err := evidence.ReadFile(opts.Out)
	if err != nil {
		t.Fatalf("evidence of an interrupted run: %v", err)
	}
	if !read.Run.Interrupted {
		t.Errorf("evidence does not say interrupted")
	}
	n, err := countDatabases(t, infratest.Server(t), ev.Run.ID)
	if err != nil || n != 0 {
		t.Errorf("%d scratch databases left (err %v)", n, err)
	}
}

func TestKeepLeavesDatabases(t *testing.T) {
	opts := runOpts(t, "normalChain")
	opts.Keep = true
	var progress strings.Builder
	opts.Progress = &progress
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := infratest.Server(t)
	name := ev.Scenarios[0].Database
	t.Cleanup(func() { _ = s.DropScratch(context.Background(), name) })
	if !strings.Contains(progress.String(), "kept database "+name+" for scenario normalChain") {
		t.Errorf("progress lacks the kept line:\n%s", progress.String())
	}
	var sent int
	if err := s.DB().QueryRow("SELECT COUNT(*) FROM `" + name + "`.outbox WHERE state = 'SENT'").Scan(&sent); err != nil || sent != 1 {
		t.Errorf("kept database: sent=%d err=%v", sent, err)
	}
}

// TestKeepWithExternalBroker: with --keep against a broker that outlives the
// run (here a kfake cluster standing in for `orderflow-audit broker`), the
// scenario's topic and its records stay for any Kafka client to read, and
// the evidence says the broker was external.
func TestKeepWithExternalBroker(t *testing.T) {
	broker := infratest.Kafka(t)
	opts := runOpts(t, "normalChain")
	opts.Keep = true
	opts.Brokers = broker.Brokers
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := ev.Scenarios[0]
	t.Cleanup(func() { _ = infratest.Server(t).DropScratch(context.Background(), s.Database) })
	if s.Status != evidence.StatusPass || len(s.Topics) != 1 {
		t.Fatalf("%s (%s), topics %v", s.Line, s.Reason, s.Topics)
	}
	if ev.Environment.Kafka.Mode != infra.ModeExternal {
		t.Errorf("kafka mode %q, want external", ev.Environment.Kafka.Mode)
	}
	n, err := broker.EndOffset(t.Context(), s.Topics[0])
	if err != nil {
		t.Fatalf("kept topic %s: %v", s.Topics[0], err)
	}
	if n != 1 {
		t.Errorf("kept topic %s holds %d records, want 1", s.Topics[0], n)
	}
}

// TestPlantedVerdictIsExact: a planted run called as a library records its
// selection and bug in run.args, so the verifier's FAIL is only the bug's
// own rules, not a complaint about missing scenarios or a relabelled plant.
func TestPlantedVerdictIsExact(t *testing.T) {
	opts := runOpts(t, "sendBeforeMarkCrash")
	bug, err := runner.ParsePlant("mark-without-token")
	if err != nil {
		t.Fatal(err)
	}
	opts.Plant = bug
	if _, err := runner.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Reasons {
		switch r.Rule {
		case "scenario-missing", "scenario-not-selected", "planted-mismatch", "selection-missing":
			t.Errorf("verify reports %s: %s", r.Rule, r.Message)
		}
	}
}

// TestStaleStagingRemoved: a staging directory left by a run killed outright
// is removed by the next run once it is old; a fresh one (a run in progress)
// and one holding anything but logs are left alone.
func TestStaleStagingRemoved(t *testing.T) {
	opts := runOpts(t, "tokenMissing")
	dir := filepath.Dir(opts.Out)
	old := filepath.Join(dir, ".u80-20200101t000000_dead-123")
	fresh := filepath.Join(dir, ".u80-20200101t000000_live-456")
	foreign := filepath.Join(dir, ".u80-20200101t000000_mine-789")
	for _, d := range []string{old, fresh, foreign} {
		if err := os.MkdirAll(filepath.Join(d, "placement"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "placement", "orders.jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{old, foreign} {
		if err := os.Chtimes(d, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runner.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("stale staging directory still there (stat: %v)", err)
	}
	for _, d := range []string{fresh, foreign} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
