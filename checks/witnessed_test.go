package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
)

// The cross-checks, each against testdata/witnessed: a clean run of every
// scenario by the real runner, with its binlog and the embedded broker's
// data directory (checks/testdata/regen.sh). Each scenario alone passes;
// each edit of an actor's log (resealed, as a forger would) that makes the
// log disagree with the witnesses fails with the named rule, located at
// the edited event and in the witness.

// pristine reads the witnessed fixture's witnesses once per shape (with
// its database witness or not, its broker's or not): the tests below edit
// logs only, so they reuse them (readWitnesses) instead of serving the
// broker's directory once per case.
var pristine struct {
	once  sync.Once
	err   error
	runID string
	mu    sync.Mutex
	read  map[[2]bool]*crosscheck.Witnesses
}

// pristineWitnesses returns the fixture's witnesses as Verify reads them
// for evidence that lists the database's witness when db is set and the
// broker's when broker is.
func pristineWitnesses(db, broker bool) (*crosscheck.Witnesses, error) {
	pristine.mu.Lock()
	defer pristine.mu.Unlock()
	if ws, ok := pristine.read[[2]bool{db, broker}]; ok {
		return ws, nil
	}
	p := filepath.Join("testdata", "witnessed", "u80.json")
	ev, _, err := evidence.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if !db {
		ev.Witness.Database = nil
	}
	if !broker {
		ev.Witness.Broker = nil
	}
	b, err := bundle.Open(p)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	ws, rs := crosscheck.Read(context.Background(), ev, b)
	if len(rs) > 0 || ws.HasDatabase() != db || ws.HasBroker() != broker {
		return nil, fmt.Errorf("the witnessed fixture's witnesses do not read cleanly: %+v", rs)
	}
	if pristine.read == nil {
		pristine.read = map[[2]bool]*crosscheck.Witnesses{}
	}
	pristine.read[[2]bool{db, broker}] = ws
	return ws, nil
}

func useCachedWitness(t *testing.T) string {
	t.Helper()
	pristine.once.Do(func() {
		ev := readEvidence(t, filepath.Join("testdata", "witnessed", "u80.json"))
		if m := crosscheck.Missing(ev); len(m) > 0 {
			pristine.err = fmt.Errorf("the witnessed fixture says witnesses are missing: %v", m)
			return
		}
		_, pristine.err = pristineWitnesses(true, true)
		pristine.runID = ev.Run.ID
	})
	if pristine.err != nil {
		t.Fatal(pristine.err)
	}
	old := readWitnesses
	readWitnesses = func(_ context.Context, ev *evidence.Evidence, _ *bundle.Bundle) (*crosscheck.Witnesses, []Reason) {
		ws, err := pristineWitnesses(ev.Witness != nil && ev.Witness.Database != nil, ev.Witness != nil && ev.Witness.Broker != nil)
		if err != nil {
			return nil, []Reason{{Rule: "witness-damaged", Status: Fail, Message: err.Error()}}
		}
		return ws, nil
	}
	t.Cleanup(func() { readWitnesses = old })
	return pristine.runID
}

// scenarioCopies are single-scenario copies of the witnessed fixture
// (only), made once per test process without its witness files (the tests
// that use them read the witnesses through useCachedWitness), so that a
// case copies a few kilobytes.
var scenarioCopies struct {
	once sync.Once
	base string
	err  error
}

// witnessedScenario copies the witnessed fixture keeping one scenario and
// returns the path of the copy's evidence file.
func witnessedScenario(t *testing.T, scenario string) string {
	t.Helper()
	scenarioCopies.once.Do(func() {
		scenarioCopies.base, scenarioCopies.err = os.MkdirTemp("", "ofa-checks-witnessed-")
		if scenarioCopies.err != nil {
			return
		}
		src := filepath.Join("testdata", "witnessed")
		for _, sc := range readEvidence(t, filepath.Join(src, "u80.json")).Scenarios {
			dir := filepath.Join(scenarioCopies.base, sc.ID)
			logs := filepath.Join(dir, "u80", sc.ID)
			if err := os.MkdirAll(logs, 0o755); err != nil {
				scenarioCopies.err = err
				return
			}
			if err := os.CopyFS(logs, os.DirFS(filepath.Join(src, "u80", sc.ID))); err != nil {
				scenarioCopies.err = err
				return
			}
			b, _ := os.ReadFile(filepath.Join(src, "u80.json"))
			if err := os.WriteFile(filepath.Join(dir, "u80.json"), b, 0o644); err != nil {
				scenarioCopies.err = err
				return
			}
			onlyWitnessed(t, filepath.Join(dir, "u80.json"), sc.ID)
		}
	})
	if scenarioCopies.err != nil {
		t.Fatal(scenarioCopies.err)
	}
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(scenarioCopies.base, scenario))); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "u80.json")
}

// dropLine marks an edit that deletes the line.
const dropLine = "\x00drop"

// pick selects the n-th event (1-based) of a kind in a log, of event id
// id when id is not empty: the cases find their events so, not by seq, so
// that a fixture regenerated from a runner that logs more stays usable.
type pick struct {
	kind string
	n    int
	id   string
}

// first selects the first event of a kind.
func first(kind string) pick { return pick{kind, 1, ""} }

// none is the selector of no event: a reason about a write or a record
// that no event explains.
var none = pick{}

// decodeLine decodes an event line keeping numbers exact.
func decodeLine(t *testing.T, l string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(l))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// seqOf returns the seq of the event sel selects in log (relative to the
// evidence file at path).
func seqOf(t *testing.T, path, log string, sel pick) int64 {
	t.Helper()
	n := 0
	for _, l := range readLines(t, filepath.Join(filepath.Dir(path), filepath.FromSlash(log))) {
		m := decodeLine(t, l)
		if m["kind"] != sel.kind || (sel.id != "" && m["event_id"] != sel.id) {
			continue
		}
		if n++; n == sel.n {
			seq, _ := m["seq"].(json.Number).Int64()
			return seq
		}
	}
	t.Fatalf("no event %+v in %s", sel, log)
	return 0
}

// editEvent rewrites the event of log (relative to the evidence file) with
// that seq through edit (which may set dropLine to delete it), and
// reseals the logs.
func editEvent(t *testing.T, path, log string, seq int64, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(filepath.Dir(path), filepath.FromSlash(log))
	var out []string
	found := false
	for _, l := range readLines(t, p) {
		m := decodeLine(t, l)
		if m["seq"] != json.Number(fmt.Sprint(seq)) {
			out = append(out, l)
			continue
		}
		found = true
		edit(m)
		if _, drop := m[dropLine]; drop {
			continue
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.String())
	}
	if !found {
		t.Fatalf("no seq %d in %s", seq, log)
	}
	writeLines(t, p, out)
	var e evidence.Evidence
	raw, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(raw, &e)
	}
	if err != nil {
		t.Fatal(err)
	}
	resealFast(t, path, &e, log)
}

func set(kv ...any) func(map[string]any) {
	return func(m map[string]any) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
	}
}

func drop(m map[string]any) { m[dropLine] = true }

// witnessReason returns the first reason of rule.
func witnessReason(v *Verdict, rule string) (Reason, bool) {
	i := slices.IndexFunc(v.Reasons, func(r Reason) bool { return r.Rule == rule })
	if i < 0 {
		return Reason{}, false
	}
	return v.Reasons[i], true
}

// TestWitnessedScenariosPass: each scenario of the witnessed fixture alone
// verifies with no reason but the boundaries it leaves unproven, and the
// verdict says what the witnesses confirmed.
func TestWitnessedScenariosPass(t *testing.T) {
	useCachedWitness(t)
	for _, sc := range readEvidence(t, filepath.Join("testdata", "witnessed", "u80.json")).Scenarios {
		t.Run(sc.ID, func(t *testing.T) {
			v := verify(t, witnessedScenario(t, sc.ID))
			if slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule != "boundary-not-run" }) {
				t.Fatalf("reasons %v: %+v", rules(v), v.Reasons)
			}
			if len(v.Witnessed) != 1 || v.Witnessed[0].Scenario != sc.ID || v.Witnessed[0].Summary == "" {
				t.Fatalf("witnessed = %+v; want one line for %s", v.Witnessed, sc.ID)
			}
		})
	}
}

type crossCase struct {
	name     string
	scenario string
	log      string // under u80/<scenario>/
	target   pick
	edit     func(map[string]any)
	rule     string
	at       pick // the event of log the reason names; none: a write or record no event explains
	more     []lineEdit
}

// lineEdit is a further edit of a case, in the same log.
type lineEdit struct {
	target pick
	edit   func(map[string]any)
}

func runCrossCases(t *testing.T, cases []crossCase) {
	t.Helper()
	useCachedWitness(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := witnessedScenario(t, tc.scenario)
			log := "u80/" + tc.scenario + "/" + tc.log
			var at int64
			if tc.at != none {
				at = seqOf(t, p, log, tc.at) // before the edits move it
			}
			seqs := []int64{seqOf(t, p, log, tc.target)}
			for _, m := range tc.more {
				seqs = append(seqs, seqOf(t, p, log, m.target))
			}
			editEvent(t, p, log, seqs[0], tc.edit)
			for i, m := range tc.more {
				editEvent(t, p, log, seqs[i+1], m.edit)
			}
			v := verify(t, p)
			r, ok := witnessReason(v, tc.rule)
			if !ok {
				t.Fatalf("no %s reason; reasons %v: %+v", tc.rule, rules(v), v.Reasons)
			}
			if r.Status != Fail || v.Status != Fail {
				t.Errorf("%s is %s, verdict %s; want FAIL", tc.rule, r.Status, v.Status)
			}
			switch {
			case at > 0 && (r.Log != log || r.Seq != at):
				t.Errorf("%s at %s seq %d; want %s seq %d", tc.rule, r.Log, r.Seq, log, at)
			case at == 0 && (r.Log != "" || r.Witness == ""):
				t.Errorf("%s at log %q, witness %q; want no log, a place in the witness", tc.rule, r.Log, r.Witness)
			}
			if r.Scenario != tc.scenario {
				t.Errorf("%s of scenario %q; want %s", tc.rule, r.Scenario, tc.scenario)
			}
		})
	}
}

// TestWitnessCommitBoundary: orders, rollbacks and seeds against the
// binlog's transactions.
func TestWitnessCommitBoundary(t *testing.T) {
	rolledBack := set("kind", "order_rolled_back", "err", "insert failed", "status", 500,
		"stock", nil, "quantity", nil, "sku", nil, "writes", nil)
	runCrossCases(t, []crossCase{
		{"order stock left", "normalChain", "orders.jsonl", first("order_committed"), set("lines", []string{"quantity=1 price_cents=1250 stock=8 sku=SKU-MSG"}), "witness-order-tx", first("order_committed"), nil},
		{"order line quantity", "normalChain", "orders.jsonl", first("order_committed"), set("lines", []string{"quantity=2 price_cents=1250 stock=9 sku=SKU-MSG"}), "witness-order-tx", first("order_committed"), nil},
		{"order line price", "normalChain", "orders.jsonl", first("order_committed"), set("lines", []string{"quantity=1 price_cents=999 stock=9 sku=SKU-MSG"}), "witness-order-tx", first("order_committed"), nil},
		{"order line of another sku", "normalChain", "orders.jsonl", first("order_committed"), set("lines", []string{"quantity=1 price_cents=1250 stock=9 sku=SKU-X"}), "witness-order-tx", first("order_committed"), nil},
		{"order without lines, stock left", "normalChain", "orders.jsonl", first("order_committed"), set("lines", nil, "stock", 8), "witness-order-tx", first("order_committed"), nil},
		{"order principal", "normalChain", "orders.jsonl", first("order_committed"), set("principal", "bob"), "witness-order-tx", first("order_committed"), nil},
		{"order quantity", "normalChain", "orders.jsonl", first("order_committed"), set("quantity", 2), "witness-order-tx", first("order_committed"), nil},
		{"order sku", "normalChain", "orders.jsonl", first("order_committed"), set("sku", "SKU-OTHER"), "witness-order-tx", first("order_committed"), nil},
		{"order key", "normalChain", "orders.jsonl", first("order_committed"), set("key", "normal-2"), "witness-order-tx", first("order_committed"), nil},
		{"order status", "normalChain", "orders.jsonl", first("order_committed"), set("status", 200), "witness-order-tx", first("order_committed"), nil},
		{"order writes", "normalChain", "orders.jsonl", first("order_committed"),
			set("writes", []string{"stock", "orders", "idempotency_records", "outbox"}), "witness-order-tx", first("order_committed"), nil},
		{"order intent", "normalChain", "orders.jsonl", first("order_committed"), set("event_id", "e-9"), "witness-order-tx", first("order_committed"), nil},
		{"order never committed", "normalChain", "orders.jsonl", first("order_committed"), set("order_id", 7, "event_id", "e-7"), "witness-order-tx", first("order_committed"), nil},
		{"rolled back but committed", "normalChain", "orders.jsonl", first("order_committed"), rolledBack, "witness-rollback-wrote", first("order_committed"), nil},
		{"seed stock", "normalChain", "scenario.jsonl", first("seed_stock"), set("stock", 11), "witness-write", first("seed_stock"), nil},
		{"answer of another order", "businessInvariants", "scenario.jsonl", first("order_request"), set("order_id", 2), "witness-answer", first("order_request"), nil},
		{"answer for another key", "normalChain", "scenario.jsonl", first("order_request"), set("key", "normal-9"), "witness-answer", first("order_request"), nil},
		{"answer body", "normalChain", "scenario.jsonl", first("order_request"), set("payload_sha256", strings.Repeat("0", 64)), "witness-answer", first("order_request"), nil},
		{"seed stock price", "normalChain", "scenario.jsonl", first("seed_stock"), set("price_cents", 999), "witness-write", first("seed_stock"), nil},
		{"seed outbox payload", "txBoundaryRollback", "scenario.jsonl", first("seed_outbox"), set("payload_sha256", strings.Repeat("0", 64)), "witness-write", first("seed_outbox"), nil},
		{"seed outbox version", "txBoundaryRollback", "scenario.jsonl", first("seed_outbox"), set("claim_version", 1), "witness-write", first("seed_outbox"), nil},
		{"unlogged seed", "normalChain", "scenario.jsonl", first("seed_stock"), drop, "witness-unlogged-write", none, nil},
		{"advance to another status", "orderLifecycle", "scenario.jsonl", first("order_advanced"), set("order_status", "SHIPPED"), "witness-order-tx", first("order_advanced"), nil},
		{"advance of another version", "orderLifecycle", "scenario.jsonl", first("order_advanced"), set("aggregate_version", 3), "witness-order-tx", first("order_advanced"), nil},
		{"advance writes", "orderLifecycle", "scenario.jsonl", first("order_advanced"), set("writes", []string{"outbox", "orders"}), "witness-order-tx", first("order_advanced"), nil},
		{"advance never made", "orderLifecycle", "scenario.jsonl", first("order_advanced"), set("event_id", "e-1-v9"), "witness-order-tx", first("order_advanced"), nil},
		{"unlogged advance", "orderLifecycle", "scenario.jsonl", first("order_advanced"), drop, "witness-unlogged-write", none, nil},
		{"unlogged order", "placement", "orders.jsonl", first("order_committed"), drop, "witness-unlogged-write", none, nil},
	})
}

// TestWitnessOutboxCAS: claims, marks and lease expiries against the
// outbox row changes.
func TestWitnessOutboxCAS(t *testing.T) {
	later := func(m map[string]any) {
		at, err := time.Parse(time.RFC3339Nano, m["lease_until"].(string))
		if err != nil {
			panic(err)
		}
		m["lease_until"] = at.Add(time.Microsecond).Format(time.RFC3339Nano)
	}
	runCrossCases(t, []crossCase{
		{"claim lease", "normalChain", "relay-a.jsonl", first("claim"), later, "witness-claim", first("claim"), nil},
		{"claim state before", "normalChain", "relay-a.jsonl", first("claim"), set("state_before", "CLAIMED"), "witness-claim", first("claim"), nil},
		{"claim never made", "normalChain", "relay-a.jsonl", first("claim"), set("claim_id", "relay-z"), "witness-claim", first("claim"), nil},
		{"claim of another row", "normalChain", "relay-a.jsonl", first("claim"), set("event_id", "e-2"), "witness-claim", first("claim"), nil},
		{"claim lease not on the database clock", "normalChain", "relay-a.jsonl", first("claim"), set("lease_ms", 29999), "witness-lease-clock", first("claim"), nil},
		{"claim round past its batch", "concurrentRelays", "relay-a.jsonl", first("claim"), set("batch", 1), "witness-claim-batch", none, nil},
		{"unlogged claim", "relayKill9", "relay-a.jsonl", first("claim"), drop, "witness-unlogged-write", none, nil},
		{"mark 1 row logged as 0", "normalChain", "relay-a.jsonl", first("mark"), set("rows", 0), "witness-mark", first("mark"), nil},
		{"mark 0 rows logged as 1", "sendBeforeMarkCrash", "relay-a.jsonl", first("mark"), set("rows", 1), "witness-mark", first("mark"), nil},
		{"mark under another version", "normalChain", "relay-a.jsonl", first("mark"), set("claim_version", 2), "witness-mark", first("mark"), nil},
		{"mark under another claim id", "normalChain", "relay-a.jsonl", first("mark"), set("claim_id", "relay-z"), "witness-mark", first("mark"), nil},
		{"mark of 2 rows", "normalChain", "relay-a.jsonl", first("mark"), set("rows", 2), "witness-mark", first("mark"), nil},
		{"lease expiry logged as 0 rows", "sendBeforeMarkCrash", "scenario.jsonl", first("lease_expired"), set("rows", 0), "witness-lease-expired", first("lease_expired"), nil},
		{"lease expiry never made", "sendBeforeMarkCrash", "scenario.jsonl", first("lease_expired"), set("claim_id", "relay-z"), "witness-lease-expired", first("lease_expired"), nil},
		{"unlogged lease expiry", "sendBeforeMarkCrash", "scenario.jsonl", first("lease_expired"), drop, "witness-unlogged-write", none, nil},
	})
}

// TestWitnessAckBoundary: effects and rejected duplicates against the
// inbox and notification rows.
func TestWitnessAckBoundary(t *testing.T) {
	runCrossCases(t, []crossCase{
		{"effect never committed", "normalChain", "consumer-1.jsonl", first("effect"), set("notification_id", 2), "witness-effect-tx", first("effect"), nil},
		{"effect of another order", "normalChain", "consumer-1.jsonl", first("effect"), set("order_id", 2), "witness-effect-tx", first("effect"), nil},
		{"effect of another consumer", "normalChain", "consumer-1.jsonl", first("effect"), set("consumer", "other"), "witness-effect-tx", first("effect"), nil},
		{"inbox row elsewhere", "normalChain", "consumer-1.jsonl", first("inbox_insert"), set("offset", 1), "witness-effect-tx", first("effect"), nil},
		{"inbox row not logged", "normalChain", "consumer-1.jsonl", first("inbox_insert"), drop, "witness-effect-tx", first("effect"), nil},
		{"inbox row without effect", "businessInvariants", "consumer-1.jsonl", first("effect"), drop, "witness-unlogged-write", none, nil},
		{"notification of a reject", "normalChain", "consumer-1.jsonl", first("effect"), drop, "witness-reject-wrote", first("inbox_reject"), nil},
		{"reject that wrote", "normalChain", "consumer-1.jsonl", first("inbox_insert"), set("kind", "inbox_reject"), "witness-reject-wrote",
			first("inbox_insert"), []lineEdit{{first("effect"), drop}}},
		{"effect in another transaction", "effectDbError", "consumer-1.jsonl", pick{"effect", 1, "e-1"}, set("trx_id", "0-1-1"), "witness-effect-tx", pick{"effect", 1, "e-1"}, nil},
		{"inbox row in another transaction", "effectDbError", "consumer-1.jsonl", pick{"inbox_insert", 1, "e-1"}, set("trx_id", "0-1-1"), "witness-effect-tx", pick{"effect", 1, "e-1"}, nil},
		{"inbox row under another key", "effectDbError", "consumer-1.jsonl", pick{"inbox_insert", 1, "e-1"}, set("inbox_key", "e-9"), "witness-effect-tx", pick{"effect", 1, "e-1"}, nil},
		{"rolled-back effect that wrote", "effectDbError", "consumer-1.jsonl", pick{"inbox_insert", 1, "e-2"}, drop, "witness-reject-wrote",
			pick{"effect_rolled_back", 1, "e-2"}, []lineEdit{{pick{"effect", 1, "e-2"}, drop}}},
	})
}

// TestWitnessBroker: publishes, receives, records and offsets against the
// broker's log.
func TestWitnessBroker(t *testing.T) {
	refused := set("partition", nil, "offset", nil, "err", "INVALID_RECORD: refused")
	runCrossCases(t, []crossCase{
		{"publish at another offset", "normalChain", "relay-a.jsonl", first("publish"), set("offset", 1), "witness-publish", first("publish"), nil},
		{"publish with another key", "normalChain", "relay-a.jsonl", first("publish"), set("record_key", "2"), "witness-publish", first("publish"), nil},
		{"publish with another event id", "normalChain", "relay-a.jsonl", first("publish"), set("record_event_id", "e-2"), "witness-publish", first("publish"), nil},
		{"publish refused but appended", "normalChain", "relay-a.jsonl", first("publish"), refused, "witness-publish-refused", first("publish"), nil},
		{"unlogged record", "normalChain", "relay-a.jsonl", first("publish"), drop, "witness-unlogged-record", none, nil},
		{"unknown publish of another token", "publishFailures", "relay-a.jsonl", pick{"publish_unknown", 1, "e-2"}, set("claim_id", "relay-z"), "witness-unlogged-record", none, nil},
		{"receive of no record", "normalChain", "consumer-1.jsonl", first("receive"), set("offset", 5), "witness-receive", first("receive"), nil},
		{"receive of another event", "normalChain", "consumer-1.jsonl", first("receive"), set("event_id", "e-2"), "witness-receive", first("receive"), nil},
		{"last offset commit", "normalChain", "consumer-1.jsonl", pick{"offset_commit", 2, ""}, set("offset", 2), "witness-offset", pick{"offset_commit", 2, ""}, nil},
		{"offset commit of another group", "normalChain", "consumer-1.jsonl", pick{"offset_commit", 2, ""}, set("consumer", "other-group"), "witness-offset", pick{"offset_commit", 2, ""}, nil},
	})
}

// TestWitnessUnknownCommit: an effect commit of unknown outcome is
// resolved by the binlog: not committed in the fixture (the record was
// replayed and applied); committed when the rows of its record are there
// and no effect explains them.
func TestWitnessUnknownCommit(t *testing.T) {
	useCachedWitness(t)
	const log = "u80/effectDbError/consumer-1.jsonl"
	for _, tc := range []struct {
		name  string
		drops []pick
		want  string
	}{
		{"not committed", nil, "1 commit of unknown outcome: 0 committed"},
		{"committed", []pick{{"inbox_insert", 1, "e-1"}, {"effect", 1, "e-1"}}, "1 commit of unknown outcome: 1 committed (GTID 0-1-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := witnessedScenario(t, "effectDbError")
			for _, sel := range tc.drops {
				editEvent(t, p, log, seqOf(t, p, log, sel), drop)
			}
			v := verify(t, p)
			if len(v.Witnessed) != 1 || !strings.Contains(v.Witnessed[0].Summary, tc.want) || hasRule(v, "witness-unlogged-write") {
				t.Fatalf("witnessed %+v, rules %v; want %q and no unlogged write", v.Witnessed, rules(v), tc.want)
			}
		})
	}
}

// TestWitnessStateProblem: an end state that cannot be rebuilt from the
// binlog (crosscheck.TestWitnessStateChains) fails witness-state, naming
// why, and nothing is loaded into the SQL engine.
func TestWitnessStateProblem(t *testing.T) {
	const problem = "GTID 0-1-2 (binlog.000001@200): the update changes a stock row that the history before it never wrote"
	c := &checker{v: &Verdict{}}
	c.witnessState(t.Context(), &evidence.Scenario{ID: "normalChain"}, nil, problem)
	if !hasRule(c.v, "witness-state") || c.v.Reasons[0].Status != Fail || !strings.Contains(c.v.Reasons[0].Message, problem) {
		t.Errorf("witnessState: %+v; want a witness-state failure naming the problem", c.v.Reasons)
	}
}

// fixtureBinlog is the witnessed fixture's binlog file, relative to its
// evidence file.
const fixtureBinlog = "u80/witness/db/binlog.000001"

// TestWitnessEndState: the live digests and invariant results of the
// evidence against the end state rebuilt from the binlog.
func TestWitnessEndState(t *testing.T) {
	useCachedWitness(t)
	for _, tc := range []struct {
		name string
		edit func(sc *evidence.Scenario)
		rule string
	}{
		{"live digest", func(sc *evidence.Scenario) { sc.Tables[0].SHA256 = strings.Repeat("0", 64) }, "witness-table-digest"},
		{"live rows", func(sc *evidence.Scenario) { sc.Tables[len(sc.Tables)-1].Rows++ }, "witness-table-digest"},
		{"live invariant", func(sc *evidence.Scenario) { sc.Invariants[0].Rows = 1 }, "witness-invariant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := witnessedScenario(t, "normalChain")
			ev := readEvidence(t, p)
			tc.edit(&ev.Scenarios[0])
			writeEvidence(t, p, ev)
			v := verify(t, p)
			r, ok := witnessReason(v, tc.rule)
			if !ok || r.Status != Fail || r.Scenario != "normalChain" {
				t.Fatalf("%s: %+v; want a failure of normalChain: rules %v", tc.rule, r, rules(v))
			}
		})
	}
}

// TestWitnessMissing: evidence that says a witness could not be had is at
// best INCONCLUSIVE; with AllowUnwitnessed it may pass, and the verdict
// lists what is unwitnessed.
func TestWitnessMissing(t *testing.T) {
	p := witnessedScenario(t, "normalChain")
	ev := readEvidence(t, p)
	ev.Witness.Broker = nil
	ev.Witness.Missing = []string{"broker: the broker was lost during the run"}
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
	writeEvidence(t, p, ev)
	useCachedWitness(t)
	v := verify(t, p)
	r, ok := witnessReason(v, "witness-missing")
	if !ok || r.Status != Inconclusive || v.Status != Inconclusive || !strings.Contains(r.Message, "the broker was lost") {
		t.Fatalf("verdict %s, reason %+v; want INCONCLUSIVE by witness-missing naming why", v.Status, r)
	}
	a, err := Verify(t.Context(), p, Options{AllowUnwitnessed: true})
	if err != nil {
		t.Fatal(err)
	}
	if hasRule(a, "witness-missing") || !slices.Equal(a.Unwitnessed, ev.Witness.Missing) {
		t.Fatalf("allowed: rules %v, unwitnessed %v; want no witness-missing and %v listed", rules(a), a.Unwitnessed, ev.Witness.Missing)
	}
}
