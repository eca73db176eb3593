package evidencetest

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Bulk describes a generated evidence file with one scenario that ran
// Orders orders through the whole chain, logged as the real actors log
// them: the order service (order_committed), one relay (claim, publish,
// mark), one consumer (receive, inbox_insert, effect, offset_commit) and
// the scenario driver (seed, invariants), in four logs. It is the
// million-event input of the verifier's and the report's benchmarks.
type Bulk struct {
	Orders int
	// Scenario is the scenario's id. Default: businessInvariants.
	Scenario string
	// LogDir is the folder of the logs, relative to the evidence file,
	// and File the evidence file's name. Defaults: "u80" and "u80.json".
	LogDir, File string
	// Invariants are the ids of the invariant events the driver logs at
	// the end (each 0 rows), also listed as the live results.
	Invariants []string
	// Anomalies adds, in the middle, a fault event (after order n/3), a
	// stale mark (0 rows, order n/2) and a receive replaying offset 0
	// (order 2n/3). The tables are then not what the events give: use it
	// without Digests.
	Anomalies bool
	// Digests digests the live tables, as the system would have left
	// them, from the generator's own simple picture of them (independent
	// of the verifier's model). Without it the evidence lists no tables.
	Digests bool
	// Status, Reason and Metrics are what the scenario claims; Args are
	// run.args (for display; run.selection selects the one scenario).
	// Defaults: PASS, no reason, no metrics, no args.
	Status  string
	Reason  string
	Metrics []evidence.Metric
	Args    []string
}

// Constants of every bulk evidence file.
const (
	BulkRunID   = "20260101t000000_bulk"
	bulkSKU     = "SKU-BULK"
	bulkClaimID = "relay-a-" + BulkRunID
	bulkGroup   = "notify-" + BulkRunID
)

// bulkStart is the time of the first event; order i's events follow at
// 8i µs after it, one µs apart.
var bulkStart = time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)

// bulkEnd is the time of the first invariant event after n orders.
func bulkEnd(n int) time.Time { return bulkStart.Add(time.Duration(n+2) * 8 * time.Microsecond) }

// bulkLog is one actor's log being written.
type bulkLog struct {
	name string
	f    *os.File
	w    *bufio.Writer
	log  *evidence.Log
}

// bulkWriter writes the four logs of a Bulk, with one clock for all.
type bulkWriter struct {
	tb     testing.TB
	dir    string
	now    time.Time
	logs   []*bulkLog
	events int64
}

func (w *bulkWriter) open(name, scenario string) *bulkLog {
	f, err := os.Create(filepath.Join(w.dir, name+".jsonl"))
	if err != nil {
		w.tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	l := &bulkLog{name: name, f: f, w: bw, log: evidence.NewLog(bw, BulkRunID, scenario, func() time.Time { return w.now })}
	w.logs = append(w.logs, l)
	return l
}

func (w *bulkWriter) emit(l *bulkLog, at time.Time, e evidence.Event) {
	w.now = at
	e.Actor = l.name
	if err := l.log.Emit(e); err != nil {
		w.tb.Fatal(err)
	}
	w.events++
}

// close flushes and closes the logs and returns their references.
func (w *bulkWriter) close(relDir string) []evidence.LogRef {
	var refs []evidence.LogRef
	for _, l := range w.logs {
		if err := l.w.Flush(); err != nil {
			w.tb.Fatal(err)
		}
		if err := l.f.Close(); err != nil {
			w.tb.Fatal(err)
		}
		sum, lines, err := evidence.FileDigest(filepath.Join(w.dir, l.name+".jsonl"))
		if err != nil {
			w.tb.Fatal(err)
		}
		refs = append(refs, evidence.LogRef{Path: relDir + "/" + l.name + ".jsonl", Actor: l.name, SHA256: sum, Lines: lines})
	}
	return refs
}

// chain logs the seed, b.Orders orders through the chain and the
// invariants, and returns the stock left and the live invariant results.
func (w *bulkWriter) chain(b Bulk, scenario string) (stock int64, results []evidence.InvariantResult) {
	n := b.Orders
	topic := "ofa." + BulkRunID + "." + scenario
	p32, p64 := evidence.Ptr[int32], evidence.Ptr[int64]
	sc, ord, rel, con := w.open("scenario", scenario), w.open("orders", scenario), w.open("relay-a", scenario), w.open("consumer-1", scenario)
	stock = int64(10 * n)
	w.emit(sc, bulkStart, evidence.Event{Kind: evidence.KindSeedStock, SKU: bulkSKU, Stock: p64(stock)})
	writes := []string{evidence.WriteStock, evidence.WriteOrders, evidence.WriteOrderLines, evidence.WriteIdempotency, evidence.WriteOutbox}
	for i := 1; i <= n; i++ {
		id := int64(i)
		e := evidence.EventIDFor(id)
		base := bulkStart.Add(time.Duration(i) * 8 * time.Microsecond)
		at := func(k int) time.Time { return base.Add(time.Duration(k) * time.Microsecond) }
		stock--
		w.emit(ord, at(0), evidence.Event{Kind: evidence.KindOrderCommitted, OrderID: p64(id), EventID: e,
			Key: "bulk-" + strconv.Itoa(i), SKU: bulkSKU, Quantity: p64(1), Stock: p64(stock), Status: 201, Writes: writes})
		w.emit(rel, at(1), evidence.Event{Kind: evidence.KindClaim, EventID: e, OrderID: p64(id),
			ClaimVersion: p64(1), ClaimID: bulkClaimID, LeaseUntil: evidence.Ptr(at(1).Add(30 * time.Second)),
			StateBefore: evidence.StatePending})
		w.emit(rel, at(2), evidence.Event{Kind: evidence.KindPublish, EventID: e, OrderID: p64(id),
			ClaimVersion: p64(1), ClaimID: bulkClaimID, Topic: topic, Partition: p32(0), Offset: p64(id - 1)})
		rows := int64(1)
		if b.Anomalies && i == n/2 {
			rows = 0 // a stale mark in the middle
		}
		w.emit(rel, at(3), evidence.Event{Kind: evidence.KindMark, EventID: e, OrderID: p64(id),
			ClaimVersion: p64(1), ClaimID: bulkClaimID, Rows: p64(rows)})
		if b.Anomalies && i == n/3 {
			w.emit(sc, at(3), evidence.Event{Kind: evidence.KindFault, Point: "after-publish-before-mark", Detail: "bulk"})
		}
		off := id - 1
		if b.Anomalies && i == 2*n/3 {
			off = 0 // a replay of the first record
		}
		w.emit(con, at(4), evidence.Event{Kind: evidence.KindReceive, EventID: e, OrderID: p64(id), Topic: topic,
			Partition: p32(0), Offset: p64(off), Consumer: bulkGroup})
		w.emit(con, at(5), evidence.Event{Kind: evidence.KindInboxInsert, EventID: e, Consumer: "notifier", Topic: topic,
			Partition: p32(0), Offset: p64(off)})
		w.emit(con, at(6), evidence.Event{Kind: evidence.KindEffect, EventID: e, OrderID: p64(id),
			NotificationID: p64(id), Consumer: "notifier"})
		w.emit(con, at(7), evidence.Event{Kind: evidence.KindOffsetCommit, Topic: topic, Partition: p32(0),
			Offset: p64(id), Consumer: bulkGroup})
	}
	end := bulkEnd(n)
	results = []evidence.InvariantResult{}
	for k, inv := range b.Invariants {
		w.emit(sc, end.Add(time.Duration(k)*time.Microsecond), evidence.Event{Kind: evidence.KindInvariant, Invariant: inv, Rows: p64(0)})
		results = append(results, evidence.InvariantResult{ID: inv, Rows: 0})
	}
	return stock, results
}

// WriteBulk writes the evidence file b describes into dir, with its logs,
// and returns its path and how many events the logs hold: 8 per order, one
// seed, one per invariant, plus one fault with Anomalies.
func WriteBulk(tb testing.TB, dir string, b Bulk) (path string, events int64) {
	tb.Helper()
	scenario := cmp.Or(b.Scenario, "businessInvariants")
	logRel := cmp.Or(b.LogDir, "u80") + "/" + scenario
	n := b.Orders
	w := &bulkWriter{tb: tb, dir: filepath.Join(dir, filepath.FromSlash(logRel))}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	stock, results := w.chain(b, scenario)
	tables := []evidence.TableDigest{}
	if b.Digests {
		tables = bulkTables(n, stock)
	}
	status := cmp.Or(b.Status, evidence.StatusPass)
	metrics := b.Metrics
	if metrics == nil {
		metrics = []evidence.Metric{}
	}
	args := b.Args
	if args == nil {
		args = []string{}
	}
	scen := evidence.Scenario{
		ID: scenario, Suite: "U80", Boundary: evidence.BoundaryNone, Description: fmt.Sprintf("%d orders through the chain", n),
		FaultPoints: []string{}, Status: status, Reason: b.Reason, Metrics: metrics,
		Line:   evidence.FormatLine("U80", scenario, status, metrics),
		Topics: []string{"ofa." + BulkRunID + "." + scenario}, Logs: w.close(logRel), Invariants: results, Tables: tables, ElapsedMS: 1,
	}
	ev := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: "test", Revision: "generated"},
		Run: evidence.Run{ID: BulkRunID, Start: bulkStart, End: bulkEnd(n).Add(time.Second), Seed: 1, Args: args,
			Selection: &evidence.Selection{Scenarios: []string{scenario}}},
		Environment: evidence.Environment{
			Database: evidence.DatabaseEnv{Flavour: "MariaDB", Version: "10.11", Isolation: "REPEATABLE-READ", DSN: "root@tcp(127.0.0.1:3306)/"},
			Kafka:    evidence.KafkaEnv{Mode: "embedded", Implementation: "kfake", Brokers: []string{"127.0.0.1:1"}},
			Go:       "go1.26", OS: "linux", Arch: "amd64",
		},
		Scenarios: []evidence.Scenario{scen},
		// Generated evidence has no run behind it, so nothing witnessed it.
		Witness: &evidence.Witness{Missing: []string{
			"database: generated evidence (evidencetest), no server ran",
			"broker: generated evidence (evidencetest), no broker ran",
		}},
	}
	ev.Summary = evidence.Summarize(ev.Scenarios)
	ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
	// The scenario declares no fault point: there is nothing to claim.
	ev.ProofClaims = &evidence.ProofClaims{Faults: []evidence.FaultClaim{}}
	ev.ProofBoundary = evidence.RenderProofBoundary(ev, ev.ProofClaims)
	path = filepath.Join(dir, cmp.Or(b.File, "u80.json"))
	if err := evidence.WriteFile(path, ev); err != nil {
		tb.Fatal(err)
	}
	return path, w.events
}

// bulkTables digests the live tables as n orders through the chain leave
// them, with stock units left.
func bulkTables(n int, stock int64) []evidence.TableDigest {
	s := func(v string) *string { return &v }
	d := func(v int64) *string { return s(strconv.FormatInt(v, 10)) }
	table := func(name string, row func(i int64) []*string) evidence.TableDigest {
		rows := make([][]*string, 0, n)
		for i := int64(1); i <= int64(n); i++ {
			rows = append(rows, row(i))
		}
		return evidence.TableDigest{Table: name, Rows: int64(n), SHA256: evidence.DigestRows(rows)}
	}
	return []evidence.TableDigest{
		{Table: "stock", Rows: 1, SHA256: evidence.DigestRows([][]*string{{s(bulkSKU), d(stock)}})},
		table("orders", func(i int64) []*string { return []*string{d(i), s(bulkSKU), d(1)} }),
		table("order_lines", func(i int64) []*string { return []*string{d(i), s(bulkSKU), d(1)} }),
		table("idempotency_records", func(i int64) []*string { return []*string{s("bulk-" + strconv.FormatInt(i, 10)), d(i), d(201)} }),
		table("outbox", func(i int64) []*string {
			return []*string{s(evidence.EventIDFor(i)), d(i), s(evidence.StateSent), d(1), s(bulkClaimID)}
		}),
		table("inbox", func(i int64) []*string { return []*string{s("notifier"), s(evidence.EventIDFor(i))} }),
		table("notification", func(i int64) []*string { return []*string{d(i), s("notifier"), s(evidence.EventIDFor(i)), d(i)} }),
	}
}
