package checks

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

func TestCleanFixturePasses(t *testing.T) {
	v := verify(t, copyFixture(t, "u80"))
	if v.Status != Pass || len(v.Reasons) != 0 {
		t.Fatalf("verdict %s with reasons %+v; want PASS with none", v.Status, v.Reasons)
	}
	if v.Scenarios != 5 || v.Events != 116 || len(v.Invariants) != 5*7 {
		t.Errorf("checked %d scenarios, %d events, %d invariants; want 5, 116, 35 (the lines of testdata/u80)", v.Scenarios, v.Events, len(v.Invariants))
	}
	for _, c := range v.Invariants {
		if c.Live != 0 || c.Replayed != 0 {
			t.Errorf("invariant %s/%s: live %d replayed %d; want 0 and 0", c.Scenario, c.ID, c.Live, c.Replayed)
		}
	}
	if !strings.HasPrefix(v.Engine, "SQLite") || v.Planted != "" {
		t.Errorf("engine %q planted %q; want the embedded SQLite and no planted bug", v.Engine, v.Planted)
	}
}

// TestPlantedFixtures: each run with a planted bug (by the real runner)
// fails, and the rule that names the bug is among the reasons.
func TestPlantedFixtures(t *testing.T) {
	for _, tc := range []struct {
		bug   string
		rules []string
	}{
		{"mark-before-publish", []string{"sent-without-publish"}},
		{"mark-without-token", []string{"stale-token-mark"}},
		{"offset-before-effect", []string{"offset-before-effect"}},
		{"no-inbox-dedupe", []string{"effect-without-inbox", "duplicate-effect", "duplicated-effects"}},
		{"outbox-outside-tx", []string{"intent-outside-order-tx", "order-without-intent"}},
		{"claim-without-lock", []string{"claim-on-live-lease"}},
		{"created-on-rollback", []string{"created-on-rollback"}},
		{"idem-key-across-users", []string{"cross-principal-answer"}},
		{"amount-ignores-quantity", []string{"amount-mismatch"}},
		{"token-alg-none", []string{"bad-token-accepted"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			v := verify(t, copyFixture(t, filepath.Join("planted", tc.bug)))
			if v.Status != Fail || v.Planted != tc.bug {
				t.Fatalf("verdict %s planted %q; want FAIL for %s", v.Status, v.Planted, tc.bug)
			}
			for _, r := range tc.rules {
				if !hasRule(v, r) {
					t.Errorf("rules %v lack %s", rules(v), r)
				}
			}
			for _, r := range v.Reasons {
				if r.Rule == tc.rules[0] && (r.Scenario == "" || r.Message == "") {
					t.Errorf("reason %+v does not say where", r)
				}
			}
		})
	}
}

func TestVerifyMySQL(t *testing.T) {
	dsn := mysqlDSN(t)
	openTestMySQL(t) // skips (or fails under CI) when the server is down
	list := func() []string {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(t.Context(), `SHOW DATABASES LIKE 'ofa\_verify\_%'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}
	before := list()
	v, err := Verify(t.Context(), copyFixture(t, "u80"), Options{MySQLDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != Pass || !strings.Contains(v.Engine, "scratch database ofa_verify_") {
		t.Fatalf("verdict %s on %q, reasons %+v; want PASS on a scratch database", v.Status, v.Engine, v.Reasons)
	}
	for _, name := range list() {
		if !slices.Contains(before, name) {
			t.Errorf("scratch database %s left behind", name)
		}
	}
}

func TestVerifyMySQLUnavailable(t *testing.T) {
	_, err := Verify(t.Context(), copyFixture(t, "u80"), Options{MySQLDSN: "root:secret-pw@tcp(127.0.0.1:1)/"})
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("err = %v; want ErrUnavailable without the password", err)
	}
}

// TestTruncatedLog: a log cut in the middle of its last line (a killed
// actor) is never a silent pass. With the digest recorded at the cut (the
// runner digests what is on disk), the verdict is INCONCLUSIVE and says
// which line was cut and what cannot be concluded.
func TestTruncatedLog(t *testing.T) {
	for _, tc := range []struct {
		log      string
		scenario string
	}{
		{"u80/normalChain/scenario.jsonl", "normalChain"},     // a live invariant event is lost
		{"u80/normalChain/relay-a.jsonl", "normalChain"},      // the mark is lost: the end state differs
		{"u80/offsetReplay/consumer-2.jsonl", "offsetReplay"}, // the final offset commit is lost
	} {
		t.Run(tc.log, func(t *testing.T) {
			p := copyFixture(t, "u80")
			only(t, p, tc.scenario)
			lp := filepath.Join(filepath.Dir(p), tc.log)
			lines := readLines(t, lp)
			last := lines[len(lines)-1]
			cut := strings.Join(lines[:len(lines)-1], "") + last[:len(last)/2]
			if err := os.WriteFile(lp, []byte(cut), 0o644); err != nil {
				t.Fatal(err)
			}
			reseal(t, p)
			v := verify(t, p)
			if v.Status != Inconclusive {
				t.Fatalf("verdict %s with %v; want INCONCLUSIVE", v.Status, v.Reasons)
			}
			i := slices.IndexFunc(v.Reasons, func(r Reason) bool { return r.Rule == "log-truncated" })
			if i < 0 {
				t.Fatalf("no log-truncated reason in %v", rules(v))
			}
			r := v.Reasons[i]
			if r.Log != tc.log || r.Line != int64(len(lines)) || !strings.Contains(r.Message, "unknown") {
				t.Errorf("reason %+v; want the log, line %d and what is unknown", r, len(lines))
			}
		})
	}
}

func TestLogPathRejected(t *testing.T) {
	t.Run("symlink out of the evidence directory", func(t *testing.T) {
		p := copyFixture(t, "u80")
		only(t, p, "normalChain")
		lp := filepath.Join(filepath.Dir(p), "u80/normalChain/relay-a.jsonl")
		outside := filepath.Join(t.TempDir(), "relay-a.jsonl")
		b, _ := os.ReadFile(lp)
		os.WriteFile(outside, b, 0o644)
		os.Remove(lp)
		if err := os.Symlink(outside, lp); err != nil {
			t.Skip("no symlinks here:", err)
		}
		v := verify(t, p)
		if v.Status != Fail || !hasRule(v, "log-path") {
			t.Fatalf("verdict %s %v; want FAIL log-path", v.Status, rules(v))
		}
	})
	// A link that stays inside the bundle is refused too: a reader that
	// follows links reads what the link names from wherever it is read
	// (a copy of the bundle made elsewhere), and the gate reads nothing
	// through a link (evidence/bundle).
	t.Run("symlink inside is refused", func(t *testing.T) {
		p := copyFixture(t, "u80")
		only(t, p, "normalChain")
		dir := filepath.Dir(p)
		lp := filepath.Join(dir, "u80/normalChain/relay-a.jsonl")
		os.Rename(lp, filepath.Join(dir, "moved.jsonl"))
		if err := os.Symlink("../../moved.jsonl", lp); err != nil {
			t.Skip("no symlinks here:", err)
		}
		if v := verify(t, p); v.Status != Fail || !hasRule(v, "log-path") {
			t.Fatalf("verdict %s %v; want FAIL log-path", v.Status, rules(v))
		}
	})
	t.Run("missing", func(t *testing.T) {
		p := copyFixture(t, "u80")
		only(t, p, "normalChain")
		os.Remove(filepath.Join(filepath.Dir(p), "u80/normalChain/relay-a.jsonl"))
		v := verify(t, p)
		if v.Status != Fail || !hasRule(v, "log-missing") {
			t.Fatalf("verdict %s %v; want FAIL log-missing", v.Status, rules(v))
		}
	})
	t.Run("directory", func(t *testing.T) {
		p := copyFixture(t, "u80")
		only(t, p, "normalChain")
		lp := filepath.Join(filepath.Dir(p), "u80/normalChain/relay-a.jsonl")
		os.Remove(lp)
		os.Mkdir(lp, 0o755)
		if v := verify(t, p); v.Status != Fail || !hasRule(v, "log-path") {
			t.Fatalf("verdict %s %v; want FAIL log-path", v.Status, rules(v))
		}
	})
	// "..", absolute paths and backslashes never reach the verifier: the
	// evidence schema rejects them (bad input).
	for _, bad := range []string{"../u80/normalChain/relay-a.jsonl", "/etc/passwd", `u80\normalChain\relay-a.jsonl`, "u80/../../x.jsonl"} {
		t.Run("schema rejects "+bad, func(t *testing.T) {
			p := copyFixture(t, "u80")
			raw, _ := os.ReadFile(p)
			var doc map[string]any
			json.Unmarshal(raw, &doc)
			doc["scenarios"].([]any)[0].(map[string]any)["logs"].([]any)[0].(map[string]any)["path"] = bad
			raw, _ = json.Marshal(doc)
			os.WriteFile(p, raw, 0o644)
			if _, err := Verify(t.Context(), p, Options{}); !errors.Is(err, evidence.ErrBadInput) || !strings.Contains(err.Error(), "/logs/0/path") {
				t.Fatalf("err = %v; want bad input naming /scenarios/0/logs/0/path", err)
			}
		})
	}
}

// TestSwapLogs: logs swapped between two scenarios fail, whether the
// evidence's references are swapped (digests stay right) or the files.
func TestSwapLogs(t *testing.T) {
	t.Run("references", func(t *testing.T) {
		p := copyFixture(t, "u80")
		ev := readEvidence(t, p)
		a, b := &ev.Scenarios[1], &ev.Scenarios[3] // normalChain, offsetReplay
		ia := slices.IndexFunc(a.Logs, func(l evidence.LogRef) bool { return l.Actor == "relay-a" })
		ib := slices.IndexFunc(b.Logs, func(l evidence.LogRef) bool { return l.Actor == "relay-a" })
		a.Logs[ia], b.Logs[ib] = b.Logs[ib], a.Logs[ia]
		writeEvidence(t, p, ev)
		v := verify(t, p)
		if v.Status != Fail || !hasRule(v, "log-scenario") {
			t.Fatalf("verdict %s %v; want FAIL log-scenario", v.Status, rules(v))
		}
		for _, sc := range []string{"normalChain", "offsetReplay"} {
			if !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == "log-scenario" && r.Scenario == sc }) {
				t.Errorf("no log-scenario reason for %s", sc)
			}
		}
	})
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "files", true: "files resealed"}[sealed]
		t.Run(name, func(t *testing.T) {
			p := copyFixture(t, "u80")
			dir := filepath.Dir(p)
			x, y := filepath.Join(dir, "u80/normalChain/relay-a.jsonl"), filepath.Join(dir, "u80/offsetReplay/relay-a.jsonl")
			bx, _ := os.ReadFile(x)
			by, _ := os.ReadFile(y)
			os.WriteFile(x, by, 0o644)
			os.WriteFile(y, bx, 0o644)
			want := "log-digest"
			if sealed {
				reseal(t, p)
				want = "log-scenario"
			}
			if v := verify(t, p); v.Status != Fail || !hasRule(v, want) {
				t.Fatalf("verdict %s %v; want FAIL %s", v.Status, rules(v), want)
			}
		})
	}
}

func TestWriteText(t *testing.T) {
	v := verify(t, copyFixture(t, filepath.Join("planted", "mark-without-token")))
	var b bytes.Buffer
	if err := WriteText(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"orderflow-audit verify: FAIL", "planted    mark-without-token", "[stale-token-mark] sendBeforeMarkCrash u80/sendBeforeMarkCrash/relay-a.jsonl:",
		"but the current claim is v2", "invariants on SQLite",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	j, err := json.Marshal(v)
	if err != nil || !bytes.Contains(j, []byte(`"rule":"stale-token-mark"`)) {
		t.Errorf("JSON %s (%v) lacks the rule", j, err)
	}
}

func TestVerifyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Verify(ctx, copyFixture(t, "u80"), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
}

// TestSwapLogsWithinScenario: two logs of one scenario swapped (the files,
// resealed, or only the paths of the evidence's references, with their
// digests) fail with log-actor: each log's events name the actor that
// wrote them, and the reference says which actor that must be.
func TestSwapLogsWithinScenario(t *testing.T) {
	for _, tc := range []struct {
		scenario, a, b string
		files          bool
	}{
		{"sendBeforeMarkCrash", "relay-a", "relay-b", true},
		{"sendBeforeMarkCrash", "relay-a", "relay-b", false},
		{"offsetReplay", "consumer-1", "consumer-2", true},
		{"offsetReplay", "consumer-1", "consumer-2", false},
	} {
		name := tc.scenario + " " + tc.a + "/" + tc.b + map[bool]string{true: " files resealed", false: " references"}[tc.files]
		t.Run(name, func(t *testing.T) {
			p := copyFixture(t, "u80")
			dir := filepath.Dir(p)
			ev := readEvidence(t, p)
			sc := &ev.Scenarios[slices.IndexFunc(ev.Scenarios, func(s evidence.Scenario) bool { return s.ID == tc.scenario })]
			ia := slices.IndexFunc(sc.Logs, func(l evidence.LogRef) bool { return l.Actor == tc.a })
			ib := slices.IndexFunc(sc.Logs, func(l evidence.LogRef) bool { return l.Actor == tc.b })
			if ia < 0 || ib < 0 {
				t.Fatalf("scenario %s lacks %s or %s", tc.scenario, tc.a, tc.b)
			}
			if tc.files {
				x, y := filepath.Join(dir, sc.Logs[ia].Path), filepath.Join(dir, sc.Logs[ib].Path)
				bx, _ := os.ReadFile(x)
				by, _ := os.ReadFile(y)
				os.WriteFile(x, by, 0o644)
				os.WriteFile(y, bx, 0o644)
				reseal(t, p)
			} else {
				la, lb := &sc.Logs[ia], &sc.Logs[ib]
				la.Path, lb.Path = lb.Path, la.Path
				la.SHA256, lb.SHA256 = lb.SHA256, la.SHA256
				la.Lines, lb.Lines = lb.Lines, la.Lines
				writeEvidence(t, p, ev)
			}
			v := verify(t, p)
			if v.Status != Fail || !hasRule(v, "log-actor") {
				t.Fatalf("verdict %s %v; want FAIL log-actor", v.Status, rules(v))
			}
			i := slices.IndexFunc(v.Reasons, func(r Reason) bool { return r.Rule == "log-actor" })
			if r := v.Reasons[i]; r.Scenario != tc.scenario || r.Log == "" || r.Claimed == "" || r.Recomputed == "" {
				t.Errorf("reason %+v does not say where and which actors", r)
			}
		})
	}
}

// TestProofBoundaryWording: a proof-boundary row worded otherwise than
// this verifier derives it fails (the committed evidence must be
// regenerated), and the message says that another version of the tool may
// have written it.
func TestProofBoundaryWording(t *testing.T) {
	p := copyFixture(t, "u80")
	ev := readEvidence(t, p)
	ev.ProofBoundary[0].CannotInfer[0] += " (worded by an older tool)"
	writeEvidence(t, p, ev)
	v := verify(t, p)
	rs := reasonsOf(v, "proof-mismatch")
	if v.Status != Fail || len(rs) != 1 {
		t.Fatalf("verdict %s %v; want FAIL with one proof-mismatch", v.Status, rules(v))
	}
	r := rs[0]
	for _, want := range []string{"another version of the tool", ev.Tool.Version, ev.Tool.Revision, "regenerate", "orderflow-audit run"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q lacks %q", r.Message, want)
		}
	}
	if r.Field != "proof_boundary[real components].cannot_infer[0]" || !strings.HasSuffix(r.Claimed, "(worded by an older tool)") {
		t.Errorf("reason %+v does not name the entry and its text", r)
	}
}
