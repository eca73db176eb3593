package reports

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// bulkReportEvidence writes an evidence file with one scenario whose four
// logs hold 8n+7 events: n orders through the whole chain
// (evidencetest.WriteBulk), with a fault, a stale mark and a replayed
// receive in the middle. It is for the report only (the verifier is not
// run on it), so its tables are not digested.
func bulkReportEvidence(tb testing.TB, dir string, n int) (path string, events int64) {
	tb.Helper()
	metrics := []evidence.Metric{{Name: "sent", Value: strconv.Itoa(n)}}
	return evidencetest.WriteBulk(tb, dir, evidencetest.Bulk{
		Orders: n, Scenario: "bulkChain", LogDir: "logs", File: "evidence.json",
		Invariants: invariantOrder[:5], Anomalies: true, Metrics: metrics, Args: []string{"generated"},
	})
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
	evidencetest.ResetPeakRSS()
	b.ResetTimer()
	for b.Loop() {
		if _, err := FromFile(path, v); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(evidencetest.PeakRSS())/(1<<20), "peak-MB")
}
