package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

const runAbout = `Runs the scenarios against the reference pipeline on a private mariadbd and
the embedded broker (or your servers, or containers), prints one observation
line per scenario and writes the evidence file with its bundle beside it.

Runs the scenarios against a real MySQL-family server and a Kafka-protocol
broker, each scenario in its own scratch database ofa_<run>_<scenario> and its
own topic. By default the run starts a private mariadbd of its own (a fresh
data directory in TMPDIR, a free loopback port, the binary log on; removed at
the end) and an embedded kfake broker; --mysql-dsn (or ORDERFLOW_MYSQL_DSN)
and --kafka-brokers use external ones instead, and --db container[:IMAGE]
and --kafka container[:IMAGE] start them in containers for the run alone
(through testcontainers-go: mysql:8.4 and apache/kafka by default; a
container engine is needed), removed at its end. Prints one observation line per
scenario on stdout and progress on stderr, and writes the evidence file with
its event logs beside it (evidence/u80.json and
evidence/u80/<scenario>/<actor>.jsonl by default) and the witnesses: the
run's binlog files (evidence/u80/witness/db/) and the broker's own record
(evidence/u80/witness/kafka/, or kafka.jsonl for an external broker), listed
with their sha256 in the evidence. A witness that cannot be had (an external
server without the binary log or the grants) is named in the evidence, with
why.

--out must end in .json. It replaces an existing file only if that is an
evidence file of this tool, and the log directory beside it only if it holds
nothing but our event logs and witnesses; anything else is refused (exit 2)
before the run starts. A second run with the --out of a run in progress is
refused at once (exit 2; the lock is .<name>.lock beside --out). The bundle
is written whole into a staging directory beside --out (.<name>-<run id>-*/),
synced, and put in place only then: a write that fails (a full disk) is an
error (exit 2) and leaves the previous bundle as it was. A private server
that cannot start (MariaDB not installed, a TMPDIR that cannot be written,
a mariadb-install-db that does not finish within a minute) exits 3 naming
the cause. Against an external server (--mysql-dsn), the account is tried
first: one that lacks a privilege the selected scenarios need exits 3
before any scenario runs, naming each (CREATE, DROP, SELECT, INSERT, UPDATE
and DELETE on ` + "`ofa\\_%`" + `.*; for effectDbError also TRIGGER there, and SUPER
or log_bin_trust_function_creators=ON with the binary log on; for
effectDbError and chaos, PROCESS on *.*). The binary log witness needs
REPLICATION SLAVE and BINLOG MONITOR (REPLICATION CLIENT) as well, or is
said to be missing. A database or broker lost mid-run makes the scenarios it
cut short NOT_RUN and exits 3, keeping an existing evidence file. Ctrl-C (or
SIGTERM, or a closed stdout) stops the run after cleaning up, each step
bounded by a few seconds, and writes evidence marked interrupted; a second
Ctrl-C exits at once.`

// runFlags are the flags of run, parsed and checked.
type runFlags struct {
	ids               []string
	seed              int64
	timeout           time.Duration
	keep, asJSON      bool
	brokers, dsn, out string
	db, kafka         string
	plant             string
	consumerMode      string
	full              bool
	chaos             chaosFlags
}

func runFlagSet(rf *runFlags) *flagSet {
	fs := newFlagSet("run", "run [flags]", runAbout,
		`orderflow-audit run
orderflow-audit run --scenarios normalChain,offsetReplay --keep
orderflow-audit run --full
orderflow-audit run --kafka-brokers 127.0.0.1:9092 --out /tmp/e/u80.json
orderflow-audit run --db container:mysql:8.4 --kafka container:apache/kafka:4.1.0`)
	fs.Func("scenarios", "comma-separated scenario `ids` (default: all; see 'orderflow-audit scenarios')", func(v string) error {
		ids, err := splitList(v)
		rf.ids = ids
		return err
	})
	fs.BoolVar(&rf.full, "full", false, "the full audit: every scenario of the default suite, the chaos scenario,\n"+
		"rebalanceSettling (the liveness bounds) and the call sweep, each that runs a consumer\n"+
		"in both consumer modes (--consumer-mode both); under 60 s")
	fs.Int64Var(&rf.seed, "seed", 1, "seed for the scenarios' random choices (not 0)")
	fs.DurationVar(&rf.timeout, "timeout", 60*time.Second, "time limit of each scenario (at least what the selection needs: 1s, 3s with relayKill9)")
	fs.BoolVar(&rf.keep, "keep", false, "keep the scratch databases and topics, and the private server's data directory\n"+
		"(printing the command that starts a server on it)")
	fs.StringVar(&rf.brokers, "kafka-brokers", "", "external Kafka brokers `host:port,...` (env "+infra.EnvKafkaBrokers+"; default: embedded kfake)")
	fs.StringVar(&rf.dsn, "mysql-dsn", "", "external MySQL/MariaDB `DSN` (env "+infra.EnvMySQLDSN+"; default: a private mariadbd\nstarted for the run, found by "+mariadbd.EnvBinDir+" or PATH)")
	fs.StringVar(&rf.db, "db", "", "where the database server runs: embedded (a private mariadbd, the default) or\n"+
		"container[:`IMAGE`] (default "+container.DefaultDBImage+", through testcontainers-go); not with --mysql-dsn")
	fs.StringVar(&rf.kafka, "kafka", "", "where the broker runs: embedded (kfake, the default) or container[:`IMAGE`]\n"+
		"(default "+container.DefaultKafkaImage+"; an image labelled "+container.LabelBroker+"=kfake runs\n"+
		"orderflow-audit broker); not with --kafka-brokers")
	fs.StringVar(&rf.out, "out", "evidence/u80.json", "evidence `file` to write (.json); logs go to the directory beside it named after it")
	fs.BoolVar(&rf.asJSON, "json", false, "print one JSON object (also on errors) instead of the observation lines")
	fs.StringVar(&rf.plant, "plant", "", "plant one `BUG` into the system under test (negative control; the evidence says so); "+
		"docs/negative-controls.md lists them, and so does the error for an unknown one")
	fs.StringVar(&rf.consumerMode, "consumer-mode", spec.SelectRecord, "how the scenarios that run a consumer run it, a `MODE`: record (one effect transaction and\n"+
		"offset commit per record), batch (a poll's records in one transaction and one\n"+
		"offset commit, as <id>-batch) or both (each such scenario twice)")
	rf.chaos.register(fs)
	return fs
}

// splitList splits a comma-separated flag value; an empty value or item is
// an error.
func splitList(v string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			return nil, fmt.Errorf("empty item in %q", v)
		}
		out = append(out, s)
	}
	return out, nil
}

// check validates what the flag package cannot, and resolves the options
// (flags, then environment, then defaults) without touching the network.
func (rf *runFlags) check(fs *flagSet, args []string) (runner.Options, error) {
	var opts runner.Options
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() > 0 {
		return opts, usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	if set["seed"] && rf.seed == 0 {
		return opts, usageErrorf("--seed 0: seeds start at 1 (0 stands for the default seed, 1, in the library)")
	}
	brokers := rf.brokers
	if !set["kafka-brokers"] && !set["kafka"] { // --kafka overrides the environment's brokers
		brokers = os.Getenv(infra.EnvKafkaBrokers)
	}
	if set["kafka-brokers"] || brokers != "" {
		if _, err := splitList(brokers); err != nil {
			return opts, usageErrorf("--kafka-brokers (or %s): %v; leave it unset for the embedded broker", infra.EnvKafkaBrokers, err)
		}
	}
	if rf.full {
		if set["scenarios"] || set["consumer-mode"] {
			return opts, usageErrorf("--full selects the scenarios and the consumer modes itself: leave out --scenarios and --consumer-mode")
		}
		rf.ids, rf.consumerMode = fullSelection(), spec.SelectBoth
	}
	bug, err := runner.ParsePlant(rf.plant)
	if err != nil {
		return opts, usageErrorf("%v", err)
	}
	if err := spec.CheckConsumerMode(rf.consumerMode); err != nil {
		return opts, usageErrorf("--consumer-mode: %v", err)
	}
	if rf.timeout <= 0 {
		return opts, usageErrorf("--timeout must be positive")
	}
	chaos, err := rf.chaos.config()
	if err != nil {
		return opts, err
	}
	if name := rf.chaos.setWithout(set, rf.ids); name != "" {
		return opts, usageErrorf("--%s configures the chaos scenario, which this run does not select (add --scenarios chaos)", name)
	}
	if !set["timeout"] {
		rf.timeout = max(rf.timeout, runner.ChaosTimeout(chaos))
	}
	dbImage, kafkaImage, err := rf.containers(set)
	if err != nil {
		return opts, err
	}
	var cfg *mysql.Config // nil: a private server or a container
	if !set["db"] {
		if cfg, err = infra.ExternalDSN(rf.dsn); err != nil {
			return opts, usageErrorf("%v", err)
		}
	}
	var ext []string // external brokers
	if !set["kafka"] {
		ext = infra.ResolveBrokers(brokers)
	}
	ti := buildInfo()
	if ti.Modified {
		ti.Revision += " (modified)"
	}
	opts = runner.Options{
		MySQL: cfg, Brokers: ext, DBImage: dbImage, KafkaImage: kafkaImage, Scenarios: rf.ids, Seed: rf.seed,
		Timeout: rf.timeout, Keep: rf.keep, Out: rf.out, Plant: bug, Args: redactArgs(args), Chaos: chaos,
		ConsumerMode: rf.consumerMode,
		Version:      ti.Version, Revision: ti.Revision, Build: &ti.Build,
	}
	if err := runner.Check(opts); err != nil {
		return opts, err // bad options or output: exit 2
	}
	return opts, nil
}

// fullSelection is what --full runs: the default suite, the chaos
// scenario, rebalanceSettling (opt-in to keep the default run short; the
// full audit holds the group's liveness bounds) and the call sweep
// (spec.SuiteSweep).
func fullSelection() []string {
	var ids []string
	for _, s := range spec.All() {
		if !s.OptIn || s.ID == "chaos" || s.ID == "rebalanceSettling" || s.Suite == spec.SuiteSweep {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// containers resolves --db and --kafka to the images of the containers to
// start ("" for none). Each excludes the flag naming an external server or
// broker; given, it also overrides that flag's environment variable.
func (rf *runFlags) containers(set map[string]bool) (dbImage, kafkaImage string, err error) {
	if set["db"] && set["mysql-dsn"] {
		return "", "", usageErrorf("--db and --mysql-dsn exclude each other: --mysql-dsn names an external server")
	}
	if set["kafka"] && set["kafka-brokers"] {
		return "", "", usageErrorf("--kafka and --kafka-brokers exclude each other: --kafka-brokers names an external broker")
	}
	if dbImage, err = containerImage("db", rf.db, container.DefaultDBImage); err != nil {
		return "", "", err
	}
	kafkaImage, err = containerImage("kafka", rf.kafka, container.DefaultKafkaImage)
	return dbImage, kafkaImage, err
}

// containerImage parses a --db or --kafka value: "" or "embedded" is no
// container, "container" the default image, "container:IMAGE" that image.
func containerImage(flag, v, def string) (string, error) {
	switch {
	case v == "" || v == "embedded":
		return "", nil
	case v == "container":
		return def, nil
	case strings.HasPrefix(v, "container:") && len(v) > len("container:"):
		img := strings.TrimPrefix(v, "container:")
		if strings.ContainsAny(img, " \t\n") {
			return "", usageErrorf("--%s %q: an image reference has no spaces", flag, v)
		}
		return img, nil
	}
	return "", usageErrorf("--%s %q: want embedded, container or container:IMAGE (e.g. container:%s)", flag, v, def)
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var rf runFlags
	fs := runFlagSet(&rf)
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	opts, err := rf.check(fs, args)
	if err != nil {
		return runFailed(stdout, stderr, rf.asJSON, nil, err, rf.dsn)
	}
	// A closed stdout or stderr stops the run like Ctrl-C.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stderr = &syncWriter{w: &pipeGuard{w: stderr, name: "stderr", cancel: cancel}}
	stdout = &pipeGuard{w: stdout, name: "stdout", cancel: cancel}
	opts.Progress = stderr
	if !rf.asJSON {
		opts.OnScenario = func(s evidence.Scenario) { fmt.Fprintln(stdout, s.Line) }
	}
	if opts.Plant != "" {
		fmt.Fprintf(stderr, "NEGATIVE CONTROL: planted bug %q; this run is expected to fail\n", opts.Plant)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintf(stderr, "%s run: %v: stopping after the cleanup (Ctrl-C again exits at once)\n", progName, context.Cause(ctx))
		case <-done:
		}
	}()

	ev, err := runner.Run(ctx, opts)
	if err != nil {
		return runFailed(stdout, stderr, rf.asJSON, ev, err, rf.dsn)
	}
	if rf.asJSON {
		printRunJSON(stdout, runStatus(ev, nil), ev, opts.Out, nil)
	}
	fmt.Fprintf(stderr, "%d passed, %d failed, %d not run; evidence written to %s\n",
		ev.Summary.Passed, ev.Summary.Failed, ev.Summary.NotRun, opts.Out)
	if ev.Summary.Failed > 0 {
		return exitFail
	}
	return exitOK
}

// runFailed reports a run that did not end normally and returns its exit
// code: interrupted (4, or 1 when a scenario that ran failed), the
// infrastructure unavailable or lost (3), bad options (2). With --json the
// summary object (or, without evidence, the status and error) goes to
// stdout as well.
func runFailed(stdout, stderr io.Writer, asJSON bool, ev *evidence.Evidence, err error, dsn string) int {
	if asJSON {
		printRunJSON(stdout, runStatus(ev, err), ev, "", err)
	}
	switch {
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintf(stderr, "%s run: %s\n", progName, err)
		if ev != nil && ev.Summary.Failed > 0 {
			return exitFail
		}
		return exitInconclusive
	case errors.Is(err, runner.ErrInfraLost) && ev != nil:
		code := fail(stderr, "run", err, dsn)
		fmt.Fprintf(stderr, "%d passed, %d failed, %d not run\n", ev.Summary.Passed, ev.Summary.Failed, ev.Summary.NotRun)
		return code
	}
	return fail(stderr, "run", err, dsn)
}

// runStatus is the status word of run --json.
func runStatus(ev *evidence.Evidence, err error) string {
	switch {
	case errors.Is(err, runner.ErrInfraLost):
		return "INFRASTRUCTURE_LOST"
	case errors.Is(err, runner.ErrInterrupted):
		return "INTERRUPTED"
	case err != nil:
		switch exitCodeFor(err) {
		case exitUsage:
			return "BAD_INPUT"
		case exitUnavailable:
			return "UNAVAILABLE"
		}
		return "ERROR"
	case ev.Summary.Failed > 0:
		return "FAIL"
	}
	return "PASS"
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

// printRunJSON prints run --json's one object: the status, the error if
// any (redacted), and the summary of the evidence when there is one.
func printRunJSON(w io.Writer, status string, ev *evidence.Evidence, path string, err error) {
	type scenario struct {
		ID     string `json:"id"`
		Suite  string `json:"suite"`
		Status string `json:"status"`
		Line   string `json:"line"`
		Reason string `json:"reason,omitempty"`
	}
	out := struct {
		Status      string            `json:"status"`
		Error       string            `json:"error,omitempty"`
		RunID       string            `json:"run_id,omitempty"`
		Evidence    string            `json:"evidence,omitempty"`
		Interrupted bool              `json:"interrupted"`
		Summary     *evidence.Summary `json:"summary,omitempty"`
		Scenarios   []scenario        `json:"scenarios"`
	}{Status: status, Evidence: path, Scenarios: []scenario{}}
	if err != nil {
		out.Error = redactSecrets(err.Error())
	}
	if ev != nil {
		out.RunID, out.Interrupted, out.Summary = ev.Run.ID, ev.Run.Interrupted, &ev.Summary
		for _, s := range ev.Scenarios {
			out.Scenarios = append(out.Scenarios, scenario{s.ID, s.Suite, s.Status, s.Line, s.Reason})
		}
	}
	_ = writeJSON(w, out)
}
