package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run [flags]",
		`Runs the scenarios against a real MySQL-family server and a Kafka-protocol
broker (embedded kfake unless --kafka-brokers is given), each scenario in its
own scratch database ofa_<run>_<scenario> and its own topic. Prints one
observation line per scenario on stdout and progress on stderr, and writes the
evidence file with its event logs beside it (evidence/u80.json and
evidence/u80/<scenario>/<actor>.jsonl by default).`,
		`orderflow-audit run
orderflow-audit run --scenarios normalChain,offsetReplay --keep
orderflow-audit run --kafka-brokers 127.0.0.1:9092 --out /tmp/e/u80.json`)
	var (
		scenarios = fs.String("scenarios", "", "comma-separated scenario ids (default: all; see 'orderflow-audit scenarios')")
		seed      = fs.Int64("seed", 1, "seed for the scenarios' random choices")
		timeout   = fs.Duration("timeout", 60*time.Second, "time limit of each scenario")
		keep      = fs.Bool("keep", false, "keep the scratch databases and topics for inspection (topics outlive the run only\non an external broker, e.g. one started with 'orderflow-audit broker')")
		brokers   = fs.String("kafka-brokers", "", "external Kafka brokers host:port,... (env "+infra.EnvKafkaBrokers+"; default: embedded kfake)")
		dsn       = fs.String("mysql-dsn", "", "MySQL/MariaDB DSN (env "+infra.EnvMySQLDSN+"; default "+infra.DefaultMySQLDSN+")")
		out       = fs.String("out", "evidence/u80.json", "evidence file to write; logs go to the directory beside it named after it")
		asJSON    = fs.Bool("json", false, "print a machine-readable summary instead of the observation lines")
		plantBug  = fs.String("plant", "", "plant one bug into the system under test (negative control; the evidence says so)")
	)
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "run", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	var ids []string
	for _, id := range strings.Split(*scenarios, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if _, err := runner.Select(ids); err != nil {
		return fail(stderr, "run", usageErrorf("%v", err))
	}
	bug, err := runner.ParsePlant(*plantBug)
	if err != nil {
		return fail(stderr, "run", usageErrorf("%v", err))
	}
	if *timeout <= 0 {
		return fail(stderr, "run", usageErrorf("--timeout must be positive"))
	}
	cfg, err := infra.ResolveDSN(*dsn)
	if err != nil {
		return fail(stderr, "run", usageErrorf("%v", err))
	}

	ti := buildInfo()
	if ti.Modified {
		ti.Revision += " (modified)"
	}
	opts := runner.Options{
		MySQL: cfg, Brokers: infra.ResolveBrokers(*brokers), Scenarios: ids, Seed: *seed,
		Timeout: *timeout, Keep: *keep, Out: *out, Plant: bug, Args: redactArgs(args),
		Version: ti.Version, Revision: ti.Revision, Progress: stderr,
	}
	if !*asJSON {
		opts.OnScenario = func(s evidence.Scenario) { fmt.Fprintln(stdout, s.Line) }
	}
	if bug != "" {
		fmt.Fprintf(stderr, "NEGATIVE CONTROL: planted bug %q; this run is expected to fail\n", bug)
	}
	ev, err := runner.Run(ctx, opts)
	if ev != nil && *asJSON {
		printRunJSON(stdout, ev, *out)
	}
	switch {
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintf(stderr, "orderflow-audit run: interrupted; %s records what ran (not a passing run)\n", *out)
		return exitFail
	case err != nil:
		return fail(stderr, "run", err)
	}
	fmt.Fprintf(stderr, "%d passed, %d failed, %d not run; evidence written to %s\n",
		ev.Summary.Passed, ev.Summary.Failed, ev.Summary.NotRun, *out)
	if ev.Summary.Failed > 0 {
		return exitFail
	}
	return exitOK
}

// redactArgs records the arguments with any DSN password redacted.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if i > 0 && strings.TrimLeft(args[i-1], "-") == "mysql-dsn" {
			out[i] = infra.RedactDSN(a)
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.TrimLeft(k, "-") == "mysql-dsn" {
			out[i] = k + "=" + infra.RedactDSN(v)
		}
	}
	return out
}

func printRunJSON(w io.Writer, ev *evidence.Evidence, path string) {
	type scenario struct {
		ID     string `json:"id"`
		Suite  string `json:"suite"`
		Status string `json:"status"`
		Line   string `json:"line"`
		Reason string `json:"reason,omitempty"`
	}
	out := struct {
		RunID       string           `json:"run_id"`
		Evidence    string           `json:"evidence"`
		Interrupted bool             `json:"interrupted"`
		Summary     evidence.Summary `json:"summary"`
		Scenarios   []scenario       `json:"scenarios"`
	}{RunID: ev.Run.ID, Evidence: path, Interrupted: ev.Run.Interrupted, Summary: ev.Summary}
	for _, s := range ev.Scenarios {
		out.Scenarios = append(out.Scenarios, scenario{s.ID, s.Suite, s.Status, s.Line, s.Reason})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
}
