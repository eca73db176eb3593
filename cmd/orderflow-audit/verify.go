package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// cmdVerify re-derives every claim of an evidence file from its event logs
// (package checks) and prints the verdict. Exit 0 PASS, 1 FAIL, 2 bad input,
// 3 the --mysql-dsn server is unavailable, 4 INCONCLUSIVE or interrupted.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", "verify [flags] EVIDENCE",
		`Checks an evidence file without trusting whoever produced it, from its
bundle alone, and prints PASS, FAIL or INCONCLUSIVE with every reason.

It checks the file and
every event line against the JSON Schemas; its scenarios against those its
run.args selected (a boundary whose scenario did not run is unproven, so at
best INCONCLUSIVE); the logs' presence, place, sha256, line counts, seq
order, run id and actor, and their events' times (in order within a log,
within the run); a replay of the events through a model of the
outbox, relay and consumer (stale tokens, SENT without a publish, second
effects, offsets before effects, claims on live leases, intents outside the
order transaction); every metric, observation line, status and summary
recomputed; the invariant SQL files run on the replayed end state (an
embedded SQLite by default, so no server is needed) and compared with the
live results and table digests. A planted run (run --plant) must be caught
by the rule that exposes its bug. Then the witnesses: the run's binlog and
the broker's own log, listed in the evidence with their sha256, must be
whole and this run's (its server, a gapless GTID range, its databases and
topics); every order, claim, mark, lease expiry, effect, rejected
duplicate, publish, receive and offset commit of the logs is held against
them, and the end state rebuilt from the binlog against the live digests
and the invariants. Evidence without witnesses is at best INCONCLUSIVE,
unless --allow-unwitnessed, which may PASS and says "unwitnessed". Prints
PASS, FAIL or INCONCLUSIVE with every reason; what it quotes from the
evidence is shown with control and bidi characters escaped (\x1b, \u202e).
Exit 0 pass, 1 fail, 2 bad input, 3 --mysql-dsn server unavailable, 4
inconclusive, or interrupted (Ctrl-C, SIGTERM, stdout closed).

The evidence of a black-box audit (schema_version
orderflow-audit/evidence/blackbox/v1, docs/blackbox.md) is told apart by
its kind and verified from its witnesses alone: every file of its bundle
held to its size and sha256, the profile read from the bundle (one that
is not a valid profile is bad input), the witness-only rules run over the
run window with the liveness bound the evidence records, and its claims
recomputed; same exit codes.`,
		`orderflow-audit verify evidence/u80.json
orderflow-audit verify --json evidence/u80.json
orderflow-audit verify --allow-unwitnessed evidence/u80.json
orderflow-audit verify --mysql-dsn 'root@tcp(127.0.0.1:3306)/' evidence/u80.json
orderflow-audit verify /tmp/bb/audit.json   # a black-box audit's bundle`)
	asJSON := fs.Bool("json", false, "print the verdict as JSON instead of text; on bad input (exit 2)\n"+
		`{"status":"BAD_INPUT","error":"..."} on stdout as well as the message on stderr`)
	allow := fs.Bool("allow-unwitnessed", false, "let evidence without a witness (or with one listed as missing) PASS on the actors' word;\n"+
		`the verdict then says "unwitnessed" and lists what`)
	dsn := fs.String("mysql-dsn", "", "run the invariants in a scratch database ofa_verify_<random> on the MySQL/MariaDB\nserver of this `DSN` (dropped after) instead of the embedded SQLite")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	// failed reports err on stderr; with --json, bad input (exit 2) is
	// also a JSON object on stdout, so that a machine reader gets one.
	failed := func(err error) int {
		code := fail(stderr, "verify", err, *dsn)
		if *asJSON && code == exitUsage {
			out := badInputJSON{Status: "BAD_INPUT", Error: redactSecrets(err.Error(), *dsn)}
			var se *schemas.Error
			if errors.As(err, &se) {
				for _, p := range se.Problems {
					out.Problems = append(out.Problems, schemas.Problem{Location: p.Location, Message: redactSecrets(p.Message, *dsn)})
				}
			}
			_ = writeJSON(stdout, out)
		}
		return code
	}
	if fs.NArg() != 1 {
		return failed(usageErrorf("want exactly one evidence file, got %d arguments", fs.NArg()))
	}
	if *dsn != "" {
		if _, err := mysql.ParseDSN(*dsn); err != nil {
			return failed(usageErrorf("--mysql-dsn: %v", err))
		}
	}
	if evidenceFormat(fs.Arg(0)) == evidence.FormatBlackBox { // verifybb.go
		if *allow {
			return failed(usageErrorf("--allow-unwitnessed: a black-box audit's verdict rests on its witnesses alone"))
		}
		return verifyBlackBox(ctx, fs.Arg(0), *asJSON, stdout, stderr)
	}
	v, err := checks.Verify(ctx, fs.Arg(0), checks.Options{MySQLDSN: *dsn, AllowUnwitnessed: *allow, BlackBox: true})
	// A signal cancels ctx: whatever Verify made of that ("context
	// canceled", an unavailable server), the verification was cut short.
	if cause := interruption(ctx); cause != nil {
		if *asJSON {
			_ = writeJSON(stdout, badInputJSON{Status: "INTERRUPTED", Error: cause.Error()})
		}
		return interrupted(stderr, "verify", cause, "")
	}
	if err != nil {
		return failed(err)
	}
	if *asJSON {
		err = writeJSON(stdout, v)
	} else {
		err = checks.WriteText(stdout, v)
	}
	if cause := closedPipe(err, "stdout"); cause != nil {
		return interrupted(stderr, "verify", cause, "the verdict was "+v.StatusLine())
	}
	if err != nil {
		return fail(stderr, "verify", fmt.Errorf("write the verdict: %w", err))
	}
	return verdictExit(v.Status)
}

// badInputJSON is what verify --json prints on stdout when it exits 2: the
// evidence could not be checked at all (problems lists a schema error's
// problems, each with its instance location); and, with status
// INTERRUPTED, when a signal stopped it (exit 4).
type badInputJSON struct {
	Status   string            `json:"status"` // BAD_INPUT or INTERRUPTED
	Error    string            `json:"error"`
	Problems []schemas.Problem `json:"problems,omitempty"`
}

// writeJSON writes v as indented JSON. encoding/json escapes the C0
// controls but sends DEL, the C1 controls and the bidi overrides as they
// are; a string from a bundle must not reach a terminal that way, so
// those are written as \u escapes too (the decoded value is the same).
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonVisible(b.Bytes()))
	return err
}

// jsonVisible rewrites, in encoded JSON, every character a terminal acts
// on or does not show (DEL, C1, format characters such as U+202E, line
// separators, unassigned code points) as a \uXXXX escape. Outside strings
// JSON is ASCII, so each such character is inside a string, where the
// escape means the same character.
func jsonVisible(js []byte) []byte {
	i := 0
	for i < len(js) && js[i] < 0x7f {
		i++
	}
	if i == len(js) {
		return js
	}
	out := make([]byte, 0, len(js)+32)
	out = append(out, js[:i]...)
	for i < len(js) {
		r, n := utf8.DecodeRune(js[i:])
		if r == 0x7f || (r >= 0x80 && r != utf8.RuneError && !strconv.IsPrint(r)) {
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, js[i:i+n]...)
		}
		i += n
	}
	return out
}
