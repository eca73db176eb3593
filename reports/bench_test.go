package reports

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// bulkReportEvidence writes an evidence file with one scenario whose four
// logs hold 8n+7 events: n orders through the whole chain (order service,
// relay, consumer, as the real actors log them), with a fault, a stale mark
// and a replayed receive in the middle. It is for the report only (the
// verifier is not run on it), so its tables are not digested.
func bulkReportEvidence(tb testing.TB, dir string, n int) (path string, events int64) {
	tb.Helper()
	const (
		runID    = "20260101t000000_bulk"
		scenario = "bulkChain"
		sku      = "SKU-BULK"
		claimID  = "relay-a-" + runID
	)
	topic := "ofa." + runID + "." + scenario
	t0 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	logDir := filepath.Join(dir, "logs", scenario)
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
	p32, p64 := evidence.Ptr[int32], evidence.Ptr[int64]
	stock := int64(10 * n)
	emit(sc, t0, evidence.Event{Kind: evidence.KindSeedStock, SKU: sku, Stock: p64(stock)})
	writes := []string{evidence.WriteStock, evidence.WriteOrders, evidence.WriteOrderLines, evidence.WriteIdempotency, evidence.WriteOutbox}
	for i := 1; i <= n; i++ {
		id := int64(i)
		e := evidence.EventIDFor(id)
		base := t0.Add(time.Duration(i) * 8 * time.Microsecond)
		at := func(k int) time.Time { return base.Add(time.Duration(k) * time.Microsecond) }
		stock--
		emit(ord, at(0), evidence.Event{Kind: evidence.KindOrderCommitted, OrderID: p64(id), EventID: e,
			Key: "bulk-" + strconv.Itoa(i), SKU: sku, Quantity: p64(1), Stock: p64(stock), Status: 201, Writes: writes})
		emit(rel, at(1), evidence.Event{Kind: evidence.KindClaim, EventID: e, OrderID: p64(id),
			ClaimVersion: p64(1), ClaimID: claimID, LeaseUntil: evidence.Ptr(at(1).Add(30 * time.Second)),
			StateBefore: evidence.StatePending})
		emit(rel, at(2), evidence.Event{Kind: evidence.KindPublish, EventID: e, ClaimVersion: p64(1), ClaimID: claimID,
			Topic: topic, Partition: p32(0), Offset: p64(id - 1)})
		rows := int64(1)
		if i == n/2 {
			rows = 0 // a stale mark in the middle
		}
		emit(rel, at(3), evidence.Event{Kind: evidence.KindMark, EventID: e, ClaimVersion: p64(1), ClaimID: claimID, Rows: p64(rows)})
		if i == n/3 {
			emit(sc, at(3), evidence.Event{Kind: evidence.KindFault, Point: "after-publish-before-mark", Detail: "bulk"})
		}
		off := id - 1
		if i == 2*n/3 {
			off = 0 // a replay of the first record
		}
		emit(con, at(4), evidence.Event{Kind: evidence.KindReceive, EventID: e, OrderID: p64(id), Topic: topic,
			Partition: p32(0), Offset: p64(off), Consumer: "notify-" + runID})
		emit(con, at(5), evidence.Event{Kind: evidence.KindInboxInsert, EventID: e, Consumer: "notifier", Topic: topic,
			Partition: p32(0), Offset: p64(off)})
		emit(con, at(6), evidence.Event{Kind: evidence.KindEffect, EventID: e, OrderID: p64(id), NotificationID: p64(id), Consumer: "notifier"})
		emit(con, at(7), evidence.Event{Kind: evidence.KindOffsetCommit, Topic: topic, Partition: p32(0), Offset: p64(id), Consumer: "notify-" + runID})
	}
	end := t0.Add(time.Duration(n+2) * 8 * time.Microsecond)
	var results []evidence.InvariantResult
	for k, id := range invariantOrder[:5] {
		emit(sc, end.Add(time.Duration(k)*time.Microsecond), evidence.Event{Kind: evidence.KindInvariant, Invariant: id, Rows: p64(0)})
		results = append(results, evidence.InvariantResult{ID: id, Rows: 0})
	}
	var refs []evidence.LogRef
	for _, a := range logs {
		if err := a.w.Flush(); err != nil {
			tb.Fatal(err)
		}
		if err := a.f.Close(); err != nil {
			tb.Fatal(err)
		}
		sum, lines, err := evidence.FileDigest(filepath.Join(logDir, a.name+".jsonl"))
		if err != nil {
			tb.Fatal(err)
		}
		refs = append(refs, evidence.LogRef{Path: "logs/" + scenario + "/" + a.name + ".jsonl", Actor: a.name, SHA256: sum, Lines: lines})
	}
	metrics := []evidence.Metric{{Name: "sent", Value: strconv.Itoa(n)}}
	scen := evidence.Scenario{
		ID: scenario, Suite: "U80", Boundary: evidence.BoundaryNone, Description: fmt.Sprintf("%d orders through the chain", n),
		FaultPoints: []string{}, Status: evidence.StatusPass, Metrics: metrics,
		Line:   evidence.FormatLine("U80", scenario, evidence.StatusPass, metrics),
		Topics: []string{topic}, Logs: refs, Invariants: results, Tables: []evidence.TableDigest{}, ElapsedMS: 1,
	}
	ev := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: "test", Revision: "generated"},
		Run:           evidence.Run{ID: runID, Start: t0, End: end.Add(time.Second), Seed: 1, Args: []string{"generated"}},
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
	path = filepath.Join(dir, "evidence.json")
	if err := evidence.WriteFile(path, ev); err != nil {
		tb.Fatal(err)
	}
	return path, events
}

// peakHeap runs fn while sampling the bytes of live and not yet collected
// heap objects every millisecond, and returns the largest sample minus the
// heap before fn.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	base := read()
	var (
		peak uint64
		mu   sync.Mutex
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			v := read()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}

// TestTimelineMemoryBounded: the memory a timeline needs does not grow
// with its log. 200k events take tens of MB as JSON lines and several
// hundred MB as decoded events held at once (409 MB when the report read
// whole logs); the report may hold what it draws and per-kind counts, not
// the log.
func TestTimelineMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200k events")
	}
	const orders = 25_000 // 200,007 events
	path, events := bulkReportEvidence(t, t.TempDir(), orders)
	v := &checks.Verdict{Status: checks.Pass}
	var (
		md  []byte
		err error
	)
	peak := peakHeap(func() { md, err = FromFile(path, v) })
	if err != nil {
		t.Fatal(err)
	}
	const limit = 32 << 20
	if peak > limit {
		t.Errorf("report of %d events: heap peaked %d MB above its start; want under %d MB (memory bounded by the drawing, not the log)",
			events, peak>>20, limit>>20)
	}
	s := section(string(md), "### bulkChain: PASS")
	for _, want := range []string{
		fmt.Sprintf("%d events: ", events),
		"stale CAS: 0 rows", "FAULT after-publish-before-mark: bulk", "REPLAY receive e-16666: p0 offset 0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline lacks %q:\n%s", want, s)
		}
	}
	t.Logf("%d events: heap peak +%.1f MB", events, float64(peak)/(1<<20))
}

// readPeakRSS returns the process's peak resident set size (VmHWM) in
// bytes, or 0 where /proc is not available.
func readPeakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkReportLarge renders the report of a generated evidence whose
// logs hold OFA_BENCH_EVENTS events (default 200,000), timelines included,
// under a given verdict (the verifier is not part of it). Run it with
// -benchtime 1x.
func BenchmarkReportLarge(b *testing.B) {
	n := 200_000
	if s := os.Getenv("OFA_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	path, events := bulkReportEvidence(b, b.TempDir(), (n-8)/8)
	v := &checks.Verdict{Status: checks.Pass}
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM to the current RSS
	b.ResetTimer()
	for b.Loop() {
		if _, err := FromFile(path, v); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(readPeakRSS())/(1<<20), "peak-MB")
}
