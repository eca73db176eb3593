package bbverify_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/bbverify/bbtest"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/profiles"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

var (
	example = filepath.Join("..", "..", "evidence", "example", "u80.json")
	planted = func(name string) string { return filepath.Join("..", "testdata", "planted", name, "u80.json") }
)

// wrap makes a black-box bundle of one scenario of a reference bundle in a
// temporary directory (w.Reference and w.Out are filled in when empty).
func wrap(t *testing.T, w bbtest.Wrap) string {
	t.Helper()
	if w.Reference == "" {
		w.Reference = example
	}
	if w.Out == "" {
		w.Out = filepath.Join(t.TempDir(), "audit.json")
	}
	if _, err := w.Write(t.Context()); err != nil {
		t.Fatalf("wrap %s: %v", w.Reference, err)
	}
	return w.Out
}

func verify(t *testing.T, path string) *bbverify.Verdict {
	t.Helper()
	v, err := bbverify.Verify(t.Context(), path, bbverify.Options{})
	if err != nil {
		t.Fatalf("Verify(%s) = %v", path, err)
	}
	return v
}

// rules returns every rule id that is FAIL (or INCONCLUSIVE) in v, bundle
// reasons and rule results together, sorted.
func rules(v *bbverify.Verdict, st blackbox.Status) []string {
	var out []string
	for _, r := range v.Reasons {
		if r.Status == st && !slices.Contains(out, r.Rule) {
			out = append(out, r.Rule)
		}
	}
	if v.Layer != nil {
		for _, r := range v.Layer.Rules {
			if r.Status == st {
				out = append(out, r.ID)
			}
		}
	}
	slices.Sort(out)
	return out
}

// editEvidence rewrites the bundle's evidence file through f.
func editEvidence(t *testing.T, path string, f func(*evidence.BlackBox)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := evidence.ParseBlackBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	f(bb)
	if err := evidence.WriteBlackBox(path, bb); err != nil {
		t.Fatal(err)
	}
}

// reclaim records, as the bundle's claims, the rules' verdict on it as
// it now is (a producer that wrote a window the witnesses do not fill
// claims what its own rules found).
func reclaim(t *testing.T, path string) {
	t.Helper()
	v := verify(t, path)
	if v.Layer == nil {
		t.Fatalf("rules not run: %s", v.NotRun)
	}
	editEvidence(t, path, func(bb *evidence.BlackBox) { bb.Claims = bbverify.Claims(v.Layer) })
}

// rewrite replaces a file of the bundle and, with redigest, records its
// new size and sha256 in the evidence (a forger who knows the format).
func rewrite(t *testing.T, path, rel string, data []byte, redigest bool) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(rel)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !redigest {
		return
	}
	sum := sha256.Sum256(data)
	editEvidence(t, path, func(bb *evidence.BlackBox) {
		if bb.Profile.Path == rel {
			bb.Profile.Size, bb.Profile.SHA256 = int64(len(data)), hex.EncodeToString(sum[:])
		}
		if c := bb.Client.File; c != nil && c.Path == rel {
			c.Size, c.SHA256 = int64(len(data)), hex.EncodeToString(sum[:])
		}
		if w := bb.Witness; w != nil && w.Database != nil {
			for i, f := range w.Database.Files {
				if f.Path == rel {
					w.Database.Files[i].Size, w.Database.Files[i].SHA256 = int64(len(data)), hex.EncodeToString(sum[:])
				}
			}
		}
	})
}

// TestWrappedReferencePasses: every scenario of the committed reference
// bundle that runs the pipeline, wrapped into a black-box bundle under
// profiles/reference.yaml, verifies PASS from its witnesses alone, with
// no bundle reason, the claims it recorded matching.
func TestWrappedReferencePasses(t *testing.T) {
	ref, _, err := evidence.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range ref.Scenarios {
		if len(sc.Topics) == 0 {
			continue
		}
		n++
		t.Run(sc.ID, func(t *testing.T) {
			v := verify(t, wrap(t, bbtest.Wrap{Scenario: sc.ID}))
			if v.Status != blackbox.Pass || len(v.Reasons) != 0 || v.Layer == nil || v.Layer.Stats.Events == 0 {
				t.Fatalf("verdict %s, reasons %v, layer %+v; want PASS from the witnesses", v.Status, v.Reasons, v.Layer)
			}
			if v.Profile.SHA256 != profiles.ReferenceSHA256() || v.Target.Database != sc.Database || v.Liveness.Bound != "30s" {
				t.Errorf("verdict names profile %+v, target %+v, bound %s", v.Profile, v.Target, v.Liveness.Bound)
			}
		})
	}
	if n < 10 {
		t.Errorf("%d scenarios with a topic; want the pipeline's 14", n)
	}
}

// TestTamperedFiles: a file of the bundle changed after the run fails the
// verdict by the rule the reference's witnesses fail by (witness-digest,
// witness-size, witness-file-missing, witness-unlisted), or by the
// profile's, the client's or an output's own; a tampered profile or
// binlog stops the rules from running at all.
func TestTamperedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   string
		noRun  bool
	}{
		{"binlog byte flipped", func(t *testing.T, path string) {
			flip(t, filepath.Join(filepath.Dir(path), "audit", "witness", "db", "binlog.000001"), 1000)
		}, "witness-digest", true},
		{"binlog cut", func(t *testing.T, path string) {
			p := filepath.Join(filepath.Dir(path), "audit", "witness", "db", "binlog.000001")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, "witness-size", true},
		{"binlog cut and redigested", func(t *testing.T, path string) {
			// The files pass the gate; the binlog, read as it streams,
			// ends inside an event.
			rel := "audit/witness/db/binlog.000001"
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(rel)))
			rewrite(t, path, rel, b[:len(b)-7], true)
		}, "witness-damaged", true},
		{"broker file deleted", func(t *testing.T, path string) {
			os.Remove(filepath.Join(filepath.Dir(path), "audit", "witness", "kafka", "groups.log"))
		}, "witness-file-missing", false},
		{"file slipped into the broker's directory", func(t *testing.T, path string) {
			os.WriteFile(filepath.Join(filepath.Dir(path), "audit", "witness", "kafka", "extra.dat"), []byte("x"), 0o644)
		}, "witness-unlisted", false},
		{"file slipped into the bundle", func(t *testing.T, path string) {
			os.WriteFile(filepath.Join(filepath.Dir(path), "audit", "notes.txt"), []byte("x"), 0o644)
		}, "bundle-unlisted", false},
		{"profile edited", func(t *testing.T, path string) {
			p := filepath.Join(filepath.Dir(path), "audit", "profile.yaml")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("duplicates: allowed"), []byte("duplicates: none   "), 1), 0o644)
		}, "profile-digest", true},
		{"output edited", func(t *testing.T, path string) {
			flip(t, filepath.Join(filepath.Dir(path), "audit", "roles", "relay-1.stderr"), 0)
		}, "output-digest", false},
		{"binlog replaced by a symlink", func(t *testing.T, path string) {
			p := filepath.Join(filepath.Dir(path), "audit", "witness", "db", "binlog.000001")
			os.Rename(p, p+".moved")
			os.Symlink(p+".moved", p)
		}, "witness-path", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := wrap(t, bbtest.Wrap{Scenario: "normalChain", Output: []byte("relay started\n")})
			tc.tamper(t, path)
			v := verify(t, path)
			if v.Status != blackbox.Fail || !slices.Contains(rules(v, blackbox.Fail), tc.want) {
				t.Fatalf("verdict %s, failed rules %v, reasons %v; want FAIL by %s", v.Status, rules(v, blackbox.Fail), v.Reasons, tc.want)
			}
			if (v.Layer == nil) != tc.noRun {
				t.Errorf("rules ran: %v (not run: %q); want ran=%v", v.Layer != nil, v.NotRun, !tc.noRun)
			}
		})
	}
}

func flip(t *testing.T, p string, at int) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x20
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedWitnesses: the witnesses of a run with a planted bug, wrapped
// into a black-box bundle, fail the rule that shows the bug (as
// checks/blackbox's planted test finds on the reference's bundles), and
// the bundle's own claims agree: the failure is the witnesses', not the
// bundle's.
func TestPlantedWitnesses(t *testing.T) {
	for _, tc := range []struct {
		plant string
		want  []string
	}{
		{"no-inbox-dedupe", []string{blackbox.RuleEffectOutsideInbox, blackbox.RuleEffects, blackbox.RuleInvariants}},
		{"offset-before-effect", []string{blackbox.RuleEffects, blackbox.RuleInvariants}},
	} {
		t.Run(tc.plant, func(t *testing.T) {
			v := verify(t, wrap(t, bbtest.Wrap{Reference: planted(tc.plant)}))
			if got := rules(v, blackbox.Fail); v.Status != blackbox.Fail || !slices.Equal(got, tc.want) {
				t.Fatalf("verdict %s, failed %v; want FAIL by exactly %v", v.Status, got, tc.want)
			}
			if len(v.Reasons) != 0 {
				t.Errorf("bundle reasons %v; want none (the claims record the failure)", v.Reasons)
			}
		})
	}
}

// TestWindowAndClaims: what the evidence states about the run is held to
// the witnesses: a window that ends past the binlog is a hole
// (INCONCLUSIVE), claims that differ from the recomputed verdict FAIL, a
// bound longer than the profile promises FAILs, a shorter one is what the
// pending rule applies, and a target with nothing in it audits nothing.
func TestWindowAndClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*evidence.BlackBox)
		reclaim bool
		st      blackbox.Status
		rule    string
	}{
		{"window ends past the binlog", func(bb *evidence.BlackBox) { bb.Window.Binlog.GTIDEnd = "0-1-99999" }, true, blackbox.Inconclusive, blackbox.RuleHoles},
		{"window's start names another domain too", func(bb *evidence.BlackBox) { bb.Window.Binlog.GTIDStart = "0-1-0,1-1-5" }, true, blackbox.Pass, ""},
		{"window's start GTID after its start position", func(bb *evidence.BlackBox) { bb.Window.Binlog.GTIDStart = "0-1-5" }, true, blackbox.Inconclusive, blackbox.RuleHoles},
		{"window's start GTID before the binlog's first", func(bb *evidence.BlackBox) { bb.Window.Binlog.StartPos = 100000 }, true, blackbox.Inconclusive, blackbox.RuleHoles},
		{"window's end unclaimed", func(bb *evidence.BlackBox) { bb.Window.Binlog.GTIDEnd = "0-1-99999" }, false, blackbox.Fail, "claims"},
		{"claims a PASS the witnesses do not give", func(bb *evidence.BlackBox) { bb.Claims.Rules[0].Count = 3 }, false, blackbox.Fail, "claims"},
		{"claims another status", func(bb *evidence.BlackBox) { bb.Claims.Status = "FAIL" }, false, blackbox.Fail, "claims"},
		{"claims a rule that does not exist", func(bb *evidence.BlackBox) {
			bb.Claims.Rules = append(bb.Claims.Rules, evidence.ClaimedRule{ID: "made-up", Status: "PASS"})
		}, false, blackbox.Fail, "claims"},
		{"bound longer than promised", func(bb *evidence.BlackBox) { bb.Liveness.Bound = "5m" }, false, blackbox.Fail, "liveness-bound"},
		{"nothing in the target", func(bb *evidence.BlackBox) { bb.Target.Topic, bb.Target.Database = "nope", "nope" }, false, blackbox.Inconclusive, "nothing-audited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := wrap(t, bbtest.Wrap{Scenario: "normalChain"})
			editEvidence(t, path, tc.edit)
			if tc.reclaim {
				reclaim(t, path)
			}
			v := verify(t, path)
			if v.Status != tc.st || (tc.rule != "" && !slices.Contains(rules(v, tc.st), tc.rule)) {
				t.Fatalf("verdict %s, rules %v %v, layer %+v; want %s by %s", v.Status, rules(v, blackbox.Fail), rules(v, blackbox.Inconclusive), v.Layer, tc.st, tc.rule)
			}
		})
	}
}

// TestLivenessRecorded: the pending rule applies the bound the evidence
// records. Audited against a topic that does not exist, under a profile
// whose relay leaves no progress in the binlog, every event of the
// scenario is pending: FAIL past a short recorded bound, INCONCLUSIVE
// (the run ended within it) under a long one.
func TestLivenessRecorded(t *testing.T) {
	prof := bytes.Replace(profiles.Reference(), []byte("kind: status\n    column: state\n    done: [SENT]"), []byte("kind: none"), 1)
	if bytes.Equal(prof, profiles.Reference()) {
		t.Fatal("the reference profile's progress is not where the test looks for it")
	}
	path := wrap(t, bbtest.Wrap{Scenario: "normalChain", Profile: prof})
	for _, tc := range []struct {
		bound string
		want  blackbox.Status
	}{{"1ms", blackbox.Fail}, {"1h", blackbox.Inconclusive}} {
		editEvidence(t, path, func(bb *evidence.BlackBox) { bb.Liveness.Bound, bb.Target.Topic = tc.bound, "nope" })
		v := verify(t, path)
		if v.Layer == nil {
			t.Fatalf("bound %s: rules not run: %s", tc.bound, v.NotRun)
		}
		for _, r := range v.Layer.Rules {
			if r.ID == blackbox.RulePending && (r.Status != tc.want || r.Count == 0) {
				t.Errorf("bound %s: pending %s with %d reason(s); want %s", tc.bound, r.Status, r.Count, tc.want)
			}
		}
	}
}

// TestClientHistory: the load client's history is read from the bundle
// and checked by the answer rule: answers that agree with the binlog
// PASS, a success for a row that never committed FAILs, a timeout is
// settled and counted.
func TestClientHistory(t *testing.T) {
	// The reference profile's load correlates by the order's quantity;
	// these histories name their requests by event id.
	prof := bytes.Replace(profiles.Reference(), []byte(`correlate: "payload$.quantity"`), []byte("correlate: event_id"), 1)
	if bytes.Equal(prof, profiles.Reference()) {
		t.Fatal("profiles/reference.yaml has no load.correlate to replace")
	}
	ids := eventIDs(t, "normalChain")
	var ok []evidence.ClientRequest
	for i, id := range ids {
		ok = append(ok, evidence.ClientRequest{N: i + 1, Token: id, Outcome: evidence.ClientOK, Status: 201})
	}
	unknown := append(slices.Clone(ok), evidence.ClientRequest{N: 99, Token: "never", Outcome: evidence.ClientUnknown})
	bad := append(slices.Clone(ok), evidence.ClientRequest{N: 99, Token: "never", Outcome: evidence.ClientOK, Status: 201})
	for _, tc := range []struct {
		name    string
		client  []evidence.ClientRequest
		want    blackbox.Status
		unknown int
	}{
		{"answers agree", ok, blackbox.Pass, 0},
		{"a timeout settled", unknown, blackbox.Pass, 1},
		{"a success that never committed", bad, blackbox.Fail, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verify(t, wrap(t, bbtest.Wrap{Scenario: "normalChain", Profile: prof, Client: tc.client}))
			if v.Status != tc.want || v.ClientRequests == nil || *v.ClientRequests != len(tc.client) || v.Layer.Stats.Unknown != tc.unknown {
				t.Fatalf("verdict %s (%v), client %v, stats %+v", v.Status, rules(v, blackbox.Fail), v.ClientRequests, v.Layer.Stats)
			}
			if tc.want == blackbox.Fail && !slices.Contains(rules(v, blackbox.Fail), blackbox.RuleAnswer) {
				t.Errorf("failed %v; want answer", rules(v, blackbox.Fail))
			}
		})
	}
	t.Run("damaged history", func(t *testing.T) {
		path := wrap(t, bbtest.Wrap{Scenario: "normalChain", Profile: prof, Client: ok})
		rewrite(t, path, "audit/client.jsonl", []byte(`{"n":1,"token":"x","outcome":"maybe"}`+"\n"), true)
		v := verify(t, path)
		if v.Status != blackbox.Fail || !slices.Contains(rules(v, blackbox.Fail), "client-damaged") {
			t.Fatalf("verdict %s, %v", v.Status, v.Reasons)
		}
	})
}

// eventIDs reads the event ids of a scenario's records from the example
// bundle's broker witness.
func eventIDs(t *testing.T, scenario string) []string {
	t.Helper()
	ref, _, err := evidence.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	log, err := broker.ReadDataDir(t.Context(), filepath.Join(filepath.Dir(example), "u80", "witness", "kafka"), broker.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sc := range ref.Scenarios {
		if sc.ID != scenario {
			continue
		}
		for _, p := range log.Topics[sc.Topics[0]] {
			for _, r := range p.Records {
				if v, ok := r.Header("event_id"); ok && !slices.Contains(ids, string(v)) {
					ids = append(ids, string(v))
				}
			}
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no event of %s", scenario)
	}
	return ids
}

// TestMaliciousProfile: a profile inside the bundle whose digest the
// evidence records (a forger rewrote both) but that is not a valid
// profile is bad input (evidence.ErrBadInput, *profile.Error naming the
// line), never a panic and never a verdict; its secrets are not echoed.
func TestMaliciousProfile(t *testing.T) {
	bomb := "name: x\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for i := range 8 {
		cur := string(rune('b' + i))
		bomb += cur + ": &" + cur + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n"
		prev = cur
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"not YAML", "name: [unclosed\n", "profile.yaml:"},
		{"unknown field", string(profiles.Reference()) + "run_this: rm -rf /\n", "run_this"},
		{"alias bomb", bomb, "profile.yaml:"},
		{"wrong types", "name: 7\ntopic: yes\noutbox: []\n", "profile.yaml:"},
		{"password", "name: x\ndatabase: {dsn: \"u:hunter2secret@tcp(db:3306)/s\", extra: 1}\n", "extra"},
		{"NUL and escapes", "name: \"\\x1b[2J\"\n\x00\n", "profile.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := wrap(t, bbtest.Wrap{Scenario: "normalChain"})
			rewrite(t, path, "audit/profile.yaml", []byte(tc.text), true)
			v, err := bbverify.Verify(t.Context(), path, bbverify.Options{})
			var pe *profile.Error
			if v != nil || !errors.Is(err, evidence.ErrBadInput) || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, %v; want bad input naming %q", v, err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2secret") {
				t.Errorf("the profile's password is in the error: %v", err)
			}
		})
	}
	t.Run("larger than a profile", func(t *testing.T) {
		path := wrap(t, bbtest.Wrap{Scenario: "normalChain"})
		editEvidence(t, path, func(bb *evidence.BlackBox) { bb.Profile.Size = profile.MaxBytes + 1 })
		if _, err := bbverify.Verify(t.Context(), path, bbverify.Options{}); !errors.Is(err, evidence.ErrBadInput) {
			t.Fatalf("Verify = %v; want bad input", err)
		}
	})
}

// TestHoldMemory: MemoryLimit is 3.5 bytes a byte of binlog, at least
// 256 MiB; Verify with HoldMemory gives the verdict it gives without, and
// leaves the process's memory limit as it found it.
func TestHoldMemory(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{{0, 256 << 20}, {76_695_844, 256 << 20}, {76_695_845, 268_435_457}, {135_000_000, 472_500_000}, {1 << 30, 7 << 29}} {
		if got := bbverify.MemoryLimit(c.in); got != c.want {
			t.Errorf("MemoryLimit(%d) = %d; want %d", c.in, got, c.want)
		}
	}
	path := wrap(t, bbtest.Wrap{Scenario: "normalChain"})
	before := debug.SetMemoryLimit(-1)
	held, err := bbverify.Verify(t.Context(), path, bbverify.Options{HoldMemory: true, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("the memory limit is %d after Verify; want %d, as before", after, before)
	}
	free, err := bbverify.Verify(t.Context(), path, bbverify.Options{Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if held.Status != blackbox.Pass || !reflect.DeepEqual(held, free) {
		t.Errorf("with HoldMemory %+v; without %+v; want PASS both, the same", held, free)
	}
}
