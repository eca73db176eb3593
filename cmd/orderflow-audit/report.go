package main

import (
	"context"
	"fmt"
	"io"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/reports"
)

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "report [flags] EVIDENCE",
		`Verifies the evidence file (as 'verify' does) and renders it as Markdown for
review, as GitHub shows it.

The report holds the verdict with every reason, the observation
lines, the boundary table, the invariants (live and replayed), the
proof-boundary matrix, a Mermaid timeline per scenario and the details of each
scenario. Event logs are read relative to the evidence file, as streams
(memory does not grow with their length); a log that resolves outside the
evidence file's directory or is not a regular file is refused, and every
line that is not a valid event is named in its timeline. Evidence that fails
verification is never shown as passing.

The report is written even when the verdict is not PASS; the exit code
follows the verdict: 0 PASS, 1 FAIL, 4 INCONCLUSIVE (also when interrupted
by Ctrl-C or SIGTERM, or when stdout is closed before the report is
written whole). Bad input (missing file, not JSON, fails the schema) exits 2
without writing anything. So does an -o that is not a regular file (a
symbolic link, a device, a FIFO, a socket, a directory), that is the
evidence file or lies in its bundle (its log and witness directories, a
file it lists), that is an existing file other than a report of this tool
(each report begins with the line `+reports.Marker+`),
or a place that cannot be written. The report is written to a temporary
file beside -o, synced, and renamed onto it.

A black-box audit's bundle (docs/blackbox.md) is verified as verify does
and rendered with the profile (name and sha256) in the title, a section
per witness-only rule with its reasons, and the proof boundary: what the
verdict rests on and what a black-box audit cannot see.`,
		`orderflow-audit report evidence/u80.json
orderflow-audit report -o reports/u80.md evidence/u80.json
orderflow-audit report --allow-unwitnessed evidence/u80.json`)
	var out string
	fs.StringVar(&out, "o", "", "write the report to this file (atomically) instead of stdout")
	fs.StringVar(&out, "out", "", "same as -o")
	dsn := fs.String("mysql-dsn", "", "verify on the MySQL/MariaDB server of this `DSN` instead of the embedded SQLite engine")
	allow := fs.Bool("allow-unwitnessed", false, "verify as verify --allow-unwitnessed does: evidence without a witness may PASS,\n"+
		`and the report says "unwitnessed" and lists what`)
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return fail(stderr, "report", usageErrorf("want exactly one evidence file, got %d arguments", fs.NArg()))
	}
	path := fs.Arg(0)
	if out != "" {
		// Refused before anything is verified; checked again, with the
		// files the evidence lists, when the report is written.
		if err := reports.CheckOutput(out, path, nil); err != nil {
			return fail(stderr, "report", err)
		}
	}

	if evidenceFormat(path) == evidence.FormatBlackBox { // verifybb.go
		return reportBlackBox(ctx, path, out, *allow, stdout, stderr)
	}
	md, v, err := renderReport(ctx, path, checks.Options{MySQLDSN: *dsn, AllowUnwitnessed: *allow, BlackBox: true})
	if cause := interruption(ctx); cause != nil {
		return interrupted(stderr, "report", cause, "")
	}
	if err != nil {
		return fail(stderr, "report", err, *dsn)
	}
	if out == "" {
		_, err := stdout.Write(md)
		if cause := closedPipe(err, "stdout"); cause != nil {
			return interrupted(stderr, "report", cause, "the verdict was "+v.StatusLine())
		}
		if err != nil {
			return fail(stderr, "report", fmt.Errorf("write report: %w", err))
		}
	} else {
		if err := writeReport(out, path, md); err != nil {
			return fail(stderr, "report", err)
		}
		fmt.Fprintf(stderr, "report written to %s (verdict %s, %d reasons)\n", checks.Printable(out), v.Status, len(v.Reasons))
	}
	return verdictExit(v.Status)
}

// renderReport runs the verifier on the evidence file at path with opt
// and renders the report under its verdict. The out-of-date test of
// reports/u80.md can call it.
func renderReport(ctx context.Context, path string, opt checks.Options) ([]byte, *checks.Verdict, error) {
	v, err := checks.Verify(ctx, path, opt)
	if err != nil {
		return nil, nil, err
	}
	md, err := reports.FromFile(path, v)
	if err != nil {
		return nil, v, fmt.Errorf("render report of %s: %w", path, err)
	}
	return md, v, nil
}

// writeReport writes md to out, which must not be a file of the bundle of
// the evidence file at path (those it lists count too, so it is read
// again: the verifier has accepted its form by now).
func writeReport(out, path string, md []byte) error {
	ev, _, err := evidence.ReadFile(path)
	if err != nil {
		return err
	}
	return reports.WriteFile(out, path, ev, md)
}
