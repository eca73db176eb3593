package checks

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// peakRSS returns the process's peak resident set size (VmHWM) in bytes,
// or 0 where /proc is not available.
func peakRSS() int64 {
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

// resetPeakRSS sets VmHWM to the current RSS (Linux: clear_refs 5), so
// that the peak measured afterwards is the verification's, not the
// generator's.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// BenchmarkVerify1M verifies a generated evidence file whose logs hold
// 1,000,000 events (124,999 orders through the whole chain, four logs),
// end to end: schema, integrity, replay, SQLite load, invariants, digests,
// metrics. Run it with -benchtime 1x (see BENCHMARKS.md).
func BenchmarkVerify1M(b *testing.B) {
	path, events := bulkEvidence(b, b.TempDir(), (1_000_000-8)/8)
	resetPeakRSS()
	b.ResetTimer()
	var v *Verdict
	for b.Loop() {
		var err error
		if v, err = Verify(b.Context(), path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if v.Events != events || !bulkReasonsOK(v) {
		b.Fatalf("verdict over %d events with reasons %+v; want only scenario-failed and boundary-not-run over %d",
			v.Events, v.Reasons, events)
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-MB")
}
