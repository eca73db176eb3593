package checks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
)

// bulkEvidence writes an evidence file whose scenario businessInvariants
// runs n orders through the whole chain, logged as the real actors log
// them: the order service (order_committed), one relay (claim, publish,
// mark), one consumer (receive, inbox_insert, effect, offset_commit) and
// the scenario driver (seed, invariants). 8n+8 events in four logs. The
// generator keeps its own simple picture of the live tables for the
// digests, independent of the verifier's model. The scenario honestly
// claims FAIL (its acceptance wants 3 orders), and run.args select that
// scenario alone, so a correct verifier's only reasons are scenario-failed
// and the three boundaries left unproven (see bulkReasonsOK).
func bulkEvidence(tb testing.TB, dir string, n int) (path string, events int64) {
	tb.Helper()
	const (
		runID    = "20260101t000000_bulk"
		scenario = "businessInvariants"
		sku      = "SKU-BULK"
		group    = "notify-" + runID
		topic    = "ofa." + runID + "." + scenario
		claimID  = "relay-a-" + runID
	)
	t0 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	logDir := filepath.Join(dir, "u80", scenario)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var now time.Time
	clock := func() time.Time { return now }
	type actorLog struct {
		name string
		f    *os.File
		w    *bufio.Writer
		log  *evidence.Log
	}
	var logs []*actorLog
	open := func(name string) *actorLog {
		f, err := os.Create(filepath.Join(logDir, name+".jsonl"))
		if err != nil {
			tb.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		a := &actorLog{name: name, f: f, w: w, log: evidence.NewLog(w, runID, scenario, clock)}
		logs = append(logs, a)
		return a
	}
	sc, ord, rel, con := open("scenario"), open("orders"), open("relay-a"), open("consumer-1")
	emit := func(a *actorLog, at time.Time, e evidence.Event) {
		now = at
		e.Actor = a.name
		if err := a.log.Emit(e); err != nil {
			tb.Fatal(err)
		}
		events++
	}
	stock := int64(10 * n)
	emit(sc, t0, evidence.Event{Kind: evidence.KindSeedStock, SKU: sku, Stock: evidence.Ptr(stock)})
	writes := []string{evidence.WriteStock, evidence.WriteOrders, evidence.WriteOrderLines, evidence.WriteIdempotency, evidence.WriteOutbox}
	for i := 1; i <= n; i++ {
		id := int64(i)
		e := evidence.EventIDFor(id)
		base := t0.Add(time.Duration(i) * 8 * time.Microsecond)
		at := func(k int) time.Time { return base.Add(time.Duration(k) * time.Microsecond) }
		stock--
		emit(ord, at(0), evidence.Event{Kind: evidence.KindOrderCommitted, OrderID: evidence.Ptr(id), EventID: e,
			Key: "bulk-" + strconv.Itoa(i), SKU: sku, Quantity: evidence.Ptr[int64](1), Stock: evidence.Ptr(stock),
			Status: 201, Writes: writes})
		emit(rel, at(1), evidence.Event{Kind: evidence.KindClaim, EventID: e, OrderID: evidence.Ptr(id),
			ClaimVersion: evidence.Ptr[int64](1), ClaimID: claimID, LeaseUntil: evidence.Ptr(at(1).Add(30 * time.Second)),
			StateBefore: evidence.StatePending})
		emit(rel, at(2), evidence.Event{Kind: evidence.KindPublish, EventID: e, OrderID: evidence.Ptr(id),
			ClaimVersion: evidence.Ptr[int64](1), ClaimID: claimID, Topic: topic, Partition: evidence.Ptr[int32](0),
			Offset: evidence.Ptr(id - 1)})
		emit(rel, at(3), evidence.Event{Kind: evidence.KindMark, EventID: e, OrderID: evidence.Ptr(id),
			ClaimVersion: evidence.Ptr[int64](1), ClaimID: claimID, Rows: evidence.Ptr[int64](1)})
		emit(con, at(4), evidence.Event{Kind: evidence.KindReceive, EventID: e, OrderID: evidence.Ptr(id), Topic: topic,
			Partition: evidence.Ptr[int32](0), Offset: evidence.Ptr(id - 1), Consumer: group})
		emit(con, at(5), evidence.Event{Kind: evidence.KindInboxInsert, EventID: e, Consumer: "notifier", Topic: topic,
			Partition: evidence.Ptr[int32](0), Offset: evidence.Ptr(id - 1)})
		emit(con, at(6), evidence.Event{Kind: evidence.KindEffect, EventID: e, OrderID: evidence.Ptr(id),
			NotificationID: evidence.Ptr(id), Consumer: "notifier"})
		emit(con, at(7), evidence.Event{Kind: evidence.KindOffsetCommit, Topic: topic, Partition: evidence.Ptr[int32](0),
			Offset: evidence.Ptr(id), Consumer: group})
	}
	invs, err := invariants.All()
	if err != nil {
		tb.Fatal(err)
	}
	end := t0.Add(time.Duration(n+2) * 8 * time.Microsecond)
	var results []evidence.InvariantResult
	for k, inv := range invs {
		emit(sc, end.Add(time.Duration(k)*time.Microsecond), evidence.Event{Kind: evidence.KindInvariant,
			Invariant: inv.ID, Rows: evidence.Ptr[int64](0)})
		results = append(results, evidence.InvariantResult{ID: inv.ID, Rows: 0})
	}
	var refs []evidence.LogRef
	for _, a := range logs {
		if err := a.w.Flush(); err != nil {
			tb.Fatal(err)
		}
		if err := a.f.Close(); err != nil {
			tb.Fatal(err)
		}
		p := filepath.Join(logDir, a.name+".jsonl")
		sum, lines, err := evidence.FileDigest(p)
		if err != nil {
			tb.Fatal(err)
		}
		refs = append(refs, evidence.LogRef{Path: "u80/" + scenario + "/" + a.name + ".jsonl", Actor: a.name, SHA256: sum, Lines: lines})
	}

	// The live tables, as the system would have left them.
	s := func(v string) *string { return &v }
	d := func(v int64) *string { return s(strconv.FormatInt(v, 10)) }
	table := func(name string, row func(i int64) []*string) evidence.TableDigest {
		if name == "stock" {
			rows := [][]*string{{s(sku), d(stock)}}
			return evidence.TableDigest{Table: name, Rows: 1, SHA256: evidence.DigestRows(rows)}
		}
		rows := make([][]*string, 0, n)
		for i := int64(1); i <= int64(n); i++ {
			rows = append(rows, row(i))
		}
		return evidence.TableDigest{Table: name, Rows: int64(n), SHA256: evidence.DigestRows(rows)}
	}
	tables := []evidence.TableDigest{
		table("stock", nil),
		table("orders", func(i int64) []*string { return []*string{d(i), s(sku), d(1)} }),
		table("order_lines", func(i int64) []*string { return []*string{d(i), s(sku), d(1)} }),
		table("idempotency_records", func(i int64) []*string { return []*string{s("bulk-" + strconv.FormatInt(i, 10)), d(i), d(201)} }),
		table("outbox", func(i int64) []*string {
			return []*string{s(evidence.EventIDFor(i)), d(i), s(evidence.StateSent), d(1), s(claimID)}
		}),
		table("inbox", func(i int64) []*string { return []*string{s("notifier"), s(evidence.EventIDFor(i))} }),
		table("notification", func(i int64) []*string { return []*string{d(i), s("notifier"), s(evidence.EventIDFor(i)), d(i)} }),
	}
	nn := strconv.Itoa(n)
	metrics := []evidence.Metric{{Name: "sent", Value: nn}, {Name: "effects", Value: nn}, {Name: "inbox", Value: nn},
		{Name: "linkedOrders", Value: nn}, {Name: "orphanSent", Value: "0"}, {Name: "sentWithoutEffect", Value: "0"},
		{Name: "effectWithoutInbox", Value: "0"}, {Name: "duplicatedEffects", Value: "0"}, {Name: "orphanEffects", Value: "0"}}
	scen := evidence.Scenario{
		ID: scenario, Suite: "U80", Boundary: evidence.BoundaryNone, Description: fmt.Sprintf("%d orders through the chain", n),
		FaultPoints: []string{}, Status: evidence.StatusFail, Reason: "sent=" + nn + ", want 3",
		Metrics: metrics, Line: evidence.FormatLine("U80", scenario, evidence.StatusFail, metrics),
		Topics: []string{topic}, Logs: refs, Invariants: results, Tables: tables, ElapsedMS: 1,
	}
	ev := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: "test", Revision: "generated"},
		Run:           evidence.Run{ID: runID, Start: t0, End: end.Add(time.Second), Seed: 1, Args: []string{"--scenarios", scenario, "--out", "u80.json"}},
		Environment: evidence.Environment{
			Database: evidence.DatabaseEnv{Flavour: "MariaDB", Version: "10.11", Isolation: "REPEATABLE-READ", DSN: "root@tcp(127.0.0.1:3306)/"},
			Kafka:    evidence.KafkaEnv{Mode: "embedded", Implementation: "kfake", Brokers: []string{"127.0.0.1:1"}},
			Go:       "go1.26", OS: "linux", Arch: "amd64",
		},
		Scenarios: []evidence.Scenario{scen},
	}
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
	path = filepath.Join(dir, "u80.json")
	if err := evidence.WriteFile(path, ev); err != nil {
		tb.Fatal(err)
	}
	return path, events
}

// bulkReasonsOK reports whether v holds exactly the reasons a correct
// verdict on bulkEvidence has: scenario-failed, and boundary-not-run for
// commit, send and ack.
func bulkReasonsOK(v *Verdict) bool {
	var got []string
	for _, r := range v.Reasons {
		got = append(got, r.Rule)
	}
	slices.Sort(got)
	return slices.Equal(got, []string{"boundary-not-run", "boundary-not-run", "boundary-not-run", "scenario-failed"})
}

func TestBulkEvidence(t *testing.T) {
	path, events := bulkEvidence(t, t.TempDir(), 200)
	if events != 8*200+8 {
		t.Fatalf("generated %d events; want %d", events, 8*200+8)
	}
	v, err := Verify(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Events != events || !bulkReasonsOK(v) {
		t.Fatalf("verdict %s, %d events, reasons %+v; want only scenario-failed and boundary-not-run over %d events",
			v.Status, v.Events, v.Reasons, events)
	}
}

// TestWriteBulkEvidence writes the 1,000,000-event evidence of
// BenchmarkVerify1M into the directory $OFA_BULK_DIR, to measure the verify
// command itself on it (BENCHMARKS.md); skipped when that is unset.
func TestWriteBulkEvidence(t *testing.T) {
	dir := os.Getenv("OFA_BULK_DIR")
	if dir == "" {
		t.Skip("OFA_BULK_DIR is not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path, events := bulkEvidence(t, dir, (1_000_000-8)/8)
	if events != 1_000_000 {
		t.Fatalf("wrote %d events; want 1,000,000", events)
	}
	t.Logf("wrote %s", path)
}
