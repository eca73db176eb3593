package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/internal/didyoumean"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	"github.com/orderflow-audit/orderflow-audit/runner/audit"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// Exit codes of every subcommand. This block is the only place they are
// defined; README.md documents the same table.
const (
	exitOK           = 0 // everything ran and passed
	exitFail         = 1 // a scenario or check failed (or the command failed for another reason)
	exitUsage        = 2 // usage error or bad input (flags, arguments, files)
	exitUnavailable  = 3 // infrastructure unavailable: database or broker unreachable
	exitInconclusive = 4 // verification inconclusive: the evidence cannot decide
	exitCrashed      = 5 // hidden actor command only: an armed fault point simulated a crash
)

const progName = "orderflow-audit"

// version is the tool's version, overridable at build time:
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/orderflow-audit
var version = "0.1.0-dev"

// revision and revisionModified stand in for the VCS stamp when the build
// has none: go build does not stamp a git worktree (whose .git is a file),
// so scripts/regen-evidence.sh passes them:
//
//	go build -ldflags "-X main.revision=$(git rev-parse HEAD)" ./cmd/orderflow-audit
var revision, revisionModified string

// Sentinel errors that commands wrap to choose an exit code; see exitCodeFor.
var (
	errUsage        = errors.New("usage error")
	errFailed       = errors.New("failed")
	errInconclusive = errors.New("inconclusive")
)

// usageErrorf returns an error that maps to exitUsage. Its message is the
// formatted text alone (the sentinel is not repeated in it).
func usageErrorf(format string, args ...any) error {
	return &codedError{err: fmt.Errorf(format, args...), is: errUsage}
}

// failedErrorf returns an error that maps to exitFail.
func failedErrorf(format string, args ...any) error {
	return &codedError{err: fmt.Errorf(format, args...), is: errFailed}
}

// inconclusiveErrorf returns an error that maps to exitInconclusive.
func inconclusiveErrorf(format string, args ...any) error {
	return &codedError{err: fmt.Errorf(format, args...), is: errInconclusive}
}

type codedError struct {
	err error
	is  error
}

func (e *codedError) Error() string   { return e.err.Error() }
func (e *codedError) Unwrap() []error { return []error{e.err, e.is} }

// exitCodeFor maps an error to the exit code of the table above: nil is 0,
// an unreachable (or lost) database or broker (infra.ErrUnavailable) is 3,
// bad input, options or outputs are 2, an inconclusive verification is 4,
// a simulated crash (actors only) is 5, anything else is 1.
func exitCodeFor(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, infra.ErrUnavailable), errors.Is(err, checks.ErrUnavailable), errors.Is(err, audit.ErrRoleStart):
		return exitUnavailable
	case errors.Is(err, errUsage), errors.Is(err, actor.ErrUsage),
		errors.Is(err, infra.ErrBadName), errors.Is(err, infra.ErrNotOurs),
		errors.Is(err, evidence.ErrBadInput), errors.Is(err, evidence.ErrBadOutput),
		errors.Is(err, runner.ErrBadOptions), errors.Is(err, audit.ErrBadOptions), errors.Is(err, profile.ErrInvalid):
		return exitUsage
	case errors.Is(err, errInconclusive):
		return exitInconclusive
	case errors.Is(err, fault.ErrCrash):
		return exitCrashed
	default:
		return exitFail
	}
}

// fail prints err as one "orderflow-audit <cmd>: <message>" line (no stack
// trace, secrets redacted, control and bidi characters escaped since an
// error may quote a bundle; a schema error lists each problem on a line of
// its own) and returns its exit code. dsns are DSNs given as flags whose
// passwords must not appear either.
func fail(stderr io.Writer, cmd string, err error, dsns ...string) int {
	if err == nil {
		return exitOK
	}
	prefix := progName
	if cmd != "" {
		prefix += " " + cmd
	}
	var se *schemas.Error
	if errors.As(err, &se) {
		fmt.Fprintf(stderr, "%s: bad input: the evidence file does not match %s (%d problem(s)):\n",
			prefix, se.Schema, len(se.Problems))
		for _, p := range se.Problems {
			fmt.Fprintf(stderr, "  %s\n", checks.Printable(redactSecrets(p.String(), dsns...)))
		}
		return exitCodeFor(err)
	}
	fmt.Fprintf(stderr, "%s: %s\n", prefix, checks.Printable(redactSecrets(err.Error(), dsns...)))
	usage := errors.Is(err, errUsage) || errors.Is(err, runner.ErrBadOptions) || errors.Is(err, audit.ErrBadOptions)
	if usage && cmd != "" {
		fmt.Fprintf(stderr, "Run '%s %s -h' for usage.\n", progName, cmd)
	}
	return exitCodeFor(err)
}

// redactSecrets removes the passwords of the configured DSN and of dsns,
// and the JWT secret, from a message, in case a library echoed one of them.
func redactSecrets(msg string, dsns ...string) string {
	for _, dsn := range append(dsns, os.Getenv(infra.EnvMySQLDSN)) {
		if dsn == "" {
			continue
		}
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			msg = strings.ReplaceAll(msg, cfg.Passwd, "xxxxx")
		}
	}
	if s := os.Getenv(envJWTSecret); len(s) >= 8 {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{name: "run", summary: "run the scenarios and write an evidence file (default evidence/u80.json)", run: cmdRun},
		{name: "verify", summary: "re-check an evidence file independently of the runner", run: cmdVerify},
		{name: "report", summary: "render an evidence file as Markdown", run: cmdReport},
		{name: "audit", summary: "audit a pipeline the tool did not write, as a black box, from its profile", run: cmdAudit},
		{name: "explore", summary: "run the chaos scenario once per seed, verify each, shrink a failure", run: cmdExplore},
		{name: "scenarios", summary: "list the scenarios, their boundaries and what they accept", run: cmdScenarios},
		{name: "clean", summary: "drop the scratch databases that runs no longer alive left on the server", run: cmdClean},
		{name: "bench", summary: "measure the pipeline's throughput and latency on a scratch database, checking its own run", run: cmdBench},
		{name: "broker", summary: "run the embedded Kafka-protocol broker (kfake) standalone", run: cmdBroker},
		{name: "version", summary: "print the version and VCS revision", run: cmdVersion},
		{name: "help", summary: "show help for a command", run: cmdHelp},
		{name: "actor", summary: "run one actor of the system under test as its own process (internal)", hidden: true, run: cmdActor},
	}
}

// visibleNames are the names of the commands help lists.
func visibleNames() []string {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run is the testable main: it dispatches args[0] to a subcommand and
// returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printMainUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printMainUsage(stdout)
		return exitOK
	case "-v", "-version", "--version":
		name = "version"
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q%s\n", progName, name, didyoumean.Hint(name, visibleNames()))
		fmt.Fprintf(stderr, "Run '%s help' for the list of commands.\n", progName)
		return exitUsage
	}
	switch name {
	case "scenarios", "help", "version":
		// What only prints: a stdout closed before its output was written
		// whole is said and exits 4, as verify, report and run do.
		w := &watchedWriter{w: stdout}
		code := c.run(ctx, args[1:], w, stderr)
		if code == exitOK && w.err != nil {
			fmt.Fprintf(stderr, "%s %s: stdout was closed before the output was written whole\n", progName, name)
			return exitInconclusive
		}
		return code
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

// watchedWriter remembers the first error of its writer.
type watchedWriter struct {
	w   io.Writer
	err error
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.err = err
	return n, err
}

func printMainUsage(w io.Writer) {
	fmt.Fprintf(w, `%[1]s audits a transactional outbox/inbox chain (order transaction, outbox
relay, Kafka, consumer inbox and notification) under injected faults and
writes evidence that a reviewer can re-verify.

Usage:
  %[1]s <command> [flags] [arguments]

Commands:
`, progName)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, `
Examples:
  %[1]s run                        # run the scenarios, write evidence/u80.json
  %[1]s verify evidence/u80.json   # independent re-check
  %[1]s report evidence/u80.json   # Markdown report

Exit codes: 0 ok, 1 a scenario or check failed, 2 usage error or bad input,
3 database or broker unavailable (also lost mid-run), 4 inconclusive (not
everything ran or can be decided) or interrupted: a first Ctrl-C or SIGTERM
cleans up and exits 4; a second exits at once, 130 (SIGINT) or 143 (SIGTERM).

Environment: %[2]s (run: default a private mariadbd started for the run;
verify and clean: default %[3]s), %[4]s (default: an
embedded broker), %[5]s (where mariadbd is; default PATH).

Run '%[1]s <command> -h' for the flags of a command; every command and flag
is in docs/cli.md, servers and exit codes in docs/operations.md.
`, progName, infra.EnvMySQLDSN, infra.DefaultMySQLDSN, infra.EnvKafkaBrokers, mariadbd.EnvBinDir)
}

// toolInfo is what the evidence records about this binary.
type toolInfo struct {
	Name      string
	Version   string
	Revision  string // VCS revision, "unknown" when not stamped (-buildvcs=false, go run, tests)
	Modified  bool   // the working tree had local changes
	GoVersion string
	Platform  string // GOOS/GOARCH
	// Build is the build information the evidence records.
	Build evidence.BuildInfo
}

// buildInfo reads the version and the VCS stamp of this binary: the Go
// toolchain's (runtime/debug.ReadBuildInfo), else the one -ldflags passed.
func buildInfo() toolInfo {
	ti := toolInfo{
		Name:      progName,
		Version:   version,
		Revision:  "unknown",
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		Build:     evidence.BuildInfo{GoVersion: runtime.Version(), Stamp: evidence.StampNone},
	}
	if revision != "" {
		ti.Revision, ti.Modified = revision, revisionModified == "true"
		ti.Build.VCSRevision, ti.Build.VCSModified, ti.Build.Stamp = revision, ti.Modified, evidence.StampLDFlags
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ti
	}
	ti.Build.GoVersion, ti.Build.Module, ti.Build.ModuleVersion = bi.GoVersion, bi.Main.Path, bi.Main.Version
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if r := vcs["vcs.revision"]; r != "" {
		ti.Revision, ti.Modified = r, vcs["vcs.modified"] == "true"
		ti.Build.VCSRevision, ti.Build.VCSModified, ti.Build.Stamp = r, ti.Modified, evidence.StampVCS
		ti.Build.VCSTime = vcs["vcs.time"]
	}
	return ti
}

func cmdVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "version",
		"Prints the tool's name, version, VCS revision (\"unknown\" when the binary was\nbuilt without VCS stamping) and Go version.",
		progName+" version")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "version", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	ti := buildInfo()
	rev := ti.Revision
	if ti.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(stdout, "%s %s\nrevision: %s\ngo: %s %s\n", ti.Name, ti.Version, rev, ti.GoVersion, ti.Platform)
	return exitOK
}

func cmdHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		printMainUsage(stdout)
		return exitOK
	case 1:
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
			fmt.Fprintf(stdout, "Usage:\n  %[1]s help [COMMAND]\n\nPrints the list of commands, or COMMAND's help (the same as '%[1]s COMMAND -h').\n\nExamples:\n  %[1]s help\n  %[1]s help verify\n", progName)
			return exitOK
		}
		c, ok := lookup(args[0])
		if !ok {
			fmt.Fprintf(stderr, "%s help: unknown command %q%s\nRun '%s help' for the list of commands.\n", progName, args[0], didyoumean.Hint(args[0], visibleNames()), progName)
			return exitUsage
		}
		return c.run(ctx, []string{"-h"}, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "%s help: want at most one command name\nRun '%s help -h' for usage.\n", progName, progName)
		return exitUsage
	}
}

// verdictExit maps a verifier verdict to the exit code: 0 PASS, 4
// INCONCLUSIVE, 1 FAIL.
func verdictExit(st checks.Status) int {
	switch st {
	case checks.Pass:
		return exitOK
	case checks.Inconclusive:
		return exitInconclusive
	default:
		return exitFail
	}
}
