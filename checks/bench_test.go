package checks

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// BenchmarkVerify1M verifies a generated evidence file whose logs hold
// 1,000,000 events (124,999 orders through the whole chain, four logs),
// end to end: schema, integrity, replay, SQLite load, invariants, digests,
// metrics. Run it with -benchtime 1x (see BENCHMARKS.md).
func BenchmarkVerify1M(b *testing.B) {
	path, events := bulkEvidence(b, b.TempDir(), (1_000_000-8)/8)
	evidencetest.ResetPeakRSS()
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
	b.ReportMetric(float64(evidencetest.PeakRSS())/(1<<20), "peak-MB")
}
