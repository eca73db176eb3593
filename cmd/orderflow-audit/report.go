package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/reports"
)

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "report [flags] EVIDENCE",
		`Verifies the evidence file first (as 'verify' does) and renders it as
GitHub-flavoured Markdown: the verdict with every reason, the observation
lines, the boundary table, the invariants (live and replayed), the
proof-boundary matrix, a Mermaid timeline per scenario and the details of each
scenario. Event logs are read relative to the evidence file, as streams
(memory does not grow with their length); a log that resolves outside the
evidence file's directory or is not a regular file is refused, and every
line that is not a valid event is named in its timeline. Evidence that fails
verification is never shown as passing.

The report is written even when the verdict is not PASS; the exit code
follows the verdict: 0 PASS, 1 FAIL, 4 INCONCLUSIVE. Bad input (missing file,
not JSON, fails the schema) exits 2 without writing anything; so does an -o
that is the evidence file itself, any other evidence file, or a place that
cannot be written.`,
		`orderflow-audit report evidence/u80.json
orderflow-audit report -o reports/u80.md evidence/u80.json
orderflow-audit report --allow-unwitnessed evidence/u80.json`)
	var out string
	fs.StringVar(&out, "o", "", "write the report to this file (atomically) instead of stdout")
	fs.StringVar(&out, "out", "", "same as -o")
	dsn := fs.String("mysql-dsn", "", "verify on this MySQL/MariaDB server instead of the embedded SQLite engine")
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
		if err := checkReportOut(out, path); err != nil {
			return fail(stderr, "report", err)
		}
	}

	md, v, err := renderReport(ctx, path, checks.Options{MySQLDSN: *dsn, AllowUnwitnessed: *allow})
	if err != nil {
		return fail(stderr, "report", err, *dsn)
	}
	if out == "" {
		if _, err := stdout.Write(md); err != nil {
			return fail(stderr, "report", fmt.Errorf("write report: %w", err))
		}
	} else {
		if err := evidence.WriteAtomic(out, md); err != nil {
			return fail(stderr, "report", err)
		}
		fmt.Fprintf(stderr, "report written to %s (verdict %s, %d reasons)\n", out, v.Status, len(v.Reasons))
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

// checkReportOut refuses, before anything is verified, a report path that
// would overwrite the input or any other evidence file, or that cannot be
// written. Errors map to exit 2.
func checkReportOut(out, input string) error {
	if st, err := os.Stat(out); err == nil {
		if in, ierr := os.Stat(input); ierr == nil && os.SameFile(st, in) {
			return evidence.BadOutputf("-o %s is the evidence file being reported on: refusing to overwrite its own input", out)
		}
		if st.IsDir() {
			return evidence.BadOutputf("-o %s is a directory", out)
		}
		if ours, _ := evidence.IsEvidenceFile(out); ours {
			return evidence.BadOutputf("-o %s is an evidence file: refusing to overwrite it with a report", out)
		}
	}
	if a, b := filepath.Clean(out), filepath.Clean(input); a == b {
		return evidence.BadOutputf("-o %s is the evidence file being reported on: refusing to overwrite its own input", out)
	}
	dir := filepath.Dir(out)
	if _, err := os.Stat(dir); err != nil { // the report goes into an existing directory
		return evidence.BadOutputf("-o %s: %v", out, err)
	}
	if err := evidence.CheckWritableDir(dir); err != nil {
		return evidence.BadOutputf("-o %s: %v", out, err)
	}
	return nil
}
