package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	gate "github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/reports"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// evidenceFormat tells the kind of the evidence file at path by its
// schema_version, read through the bundle gate. A file the gate refuses
// is FormatReference: its verifier says what is wrong with it.
func evidenceFormat(path string) evidence.Format {
	b, err := gate.Open(path)
	if err != nil {
		return evidence.FormatReference
	}
	defer b.Close()
	return evidence.FormatOf(b.Evidence())
}

// verifyBlackBox is verify of a black-box audit's bundle
// (checks/bbverify): the same exit codes as for a reference bundle, 0
// PASS, 1 FAIL, 2 bad input (the evidence, or the profile inside the
// bundle), 4 INCONCLUSIVE or interrupted.
func verifyBlackBox(ctx context.Context, path string, asJSON bool, stdout, stderr io.Writer) int {
	v, err := bbverify.Verify(ctx, path, bbverify.Options{HoldMemory: true})
	if cause := interruption(ctx); cause != nil {
		if asJSON {
			_ = writeJSON(stdout, badInputJSON{Status: "INTERRUPTED", Error: cause.Error()})
		}
		return interrupted(stderr, "verify", cause, "")
	}
	if err != nil {
		return failBlackBox(stdout, stderr, "verify", err, asJSON)
	}
	if asJSON {
		err = writeJSON(stdout, v)
	} else {
		err = bbverify.WriteText(stdout, v)
	}
	if cause := closedPipe(err, "stdout"); cause != nil {
		return interrupted(stderr, "verify", cause, "the verdict was "+string(v.Status))
	}
	if err != nil {
		return fail(stderr, "verify", fmt.Errorf("write the verdict: %w", err))
	}
	return verdictExit(checks.Status(v.Status))
}

// failBlackBox reports an error of a black-box verification as fail
// does; a profile refused inside the bundle is listed one problem a line
// (its lines, fields and messages escaped: they come from the bundle),
// and with --json, bad input is a JSON object on stdout as well.
func failBlackBox(stdout, stderr io.Writer, cmd string, err error, asJSON bool) int {
	var pe *profile.Error
	code := exitCodeFor(err)
	if errors.As(err, &pe) {
		fmt.Fprintf(stderr, "%s %s: bad input: the profile in the bundle is not a valid profile (%d problem(s)):\n", progName, cmd, len(pe.Problems))
		for _, p := range pe.Problems {
			fmt.Fprintf(stderr, "  %s:%d: %s: %s\n", checks.Printable(pe.File), p.Line, checks.Printable(p.Field), checks.Printable(p.Message))
		}
	} else {
		code = fail(stderr, cmd, err)
	}
	if asJSON && code == exitUsage {
		out := badInputJSON{Status: "BAD_INPUT", Error: redactSecrets(err.Error())}
		var se *schemas.Error
		switch {
		case errors.As(err, &se):
			out.Problems = se.Problems
		case pe != nil:
			for _, p := range pe.Problems {
				out.Problems = append(out.Problems, schemas.Problem{Location: pe.File + ":" + strconv.Itoa(p.Line) + " " + p.Field, Message: p.Message})
			}
		}
		_ = writeJSON(stdout, out)
	}
	return code
}

// reportBlackBox is report of a black-box audit's bundle: verified as
// verify does, rendered by reports.BlackBox, written as report writes a
// reference report (to stdout, or atomically to out, which must lie
// outside the bundle: every file of a black-box bundle is beneath the
// directory named after its evidence file, which CheckOutput refuses).
func reportBlackBox(ctx context.Context, path, out string, allow bool, stdout, stderr io.Writer) int {
	if allow {
		return fail(stderr, "report", usageErrorf("--allow-unwitnessed: a black-box audit's verdict rests on its witnesses alone"))
	}
	v, err := bbverify.Verify(ctx, path, bbverify.Options{HoldMemory: true})
	if cause := interruption(ctx); cause != nil {
		return interrupted(stderr, "report", cause, "")
	}
	if err != nil {
		return failBlackBox(stdout, stderr, "report", err, false)
	}
	md, err := reports.BlackBox(v)
	if err != nil {
		return fail(stderr, "report", fmt.Errorf("render report of %s: %w", path, err))
	}
	if out == "" {
		_, err := stdout.Write(md)
		if cause := closedPipe(err, "stdout"); cause != nil {
			return interrupted(stderr, "report", cause, "the verdict was "+string(v.Status))
		}
		if err != nil {
			return fail(stderr, "report", fmt.Errorf("write report: %w", err))
		}
	} else {
		if err := reports.WriteFile(out, path, nil, md); err != nil {
			return fail(stderr, "report", err)
		}
		fmt.Fprintf(stderr, "report written to %s (verdict %s)\n", checks.Printable(out), v.Status)
	}
	return verdictExit(checks.Status(v.Status))
}
