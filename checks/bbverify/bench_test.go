package bbverify_test

import (
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// BenchmarkVerifyBlackBox1M verifies, end to end (the bundle gate with
// every file's sha256, the binlog and the broker's data directory read,
// the window cut, every rule, the claims), the black-box bundle named by
// $OFA_BB1M: the one `go run ./scripts/bbshapes -bulk 1000000 -o
// DIR/audit.json` writes from a private MariaDB and kfake (a million
// committed events, their records and effects). Skipped when unset: the
// bundle takes minutes and a server to make. See BENCHMARKS.md.
func BenchmarkVerifyBlackBox1M(b *testing.B) { benchVerify1M(b, bbverify.Options{}) }

// BenchmarkVerifyBlackBox1MHeld is BenchmarkVerifyBlackBox1M as the
// commands verify: with HoldMemory (the heap held near MemoryLimit of the
// binlog's size). Run it in a process of its own: the peak RSS is the
// process's.
func BenchmarkVerifyBlackBox1MHeld(b *testing.B) {
	benchVerify1M(b, bbverify.Options{HoldMemory: true})
}

func benchVerify1M(b *testing.B, opt bbverify.Options) {
	path := os.Getenv("OFA_BB1M")
	if path == "" {
		b.Skip("OFA_BB1M is not set (go run ./scripts/bbshapes -bulk 1000000 -o DIR/audit.json)")
	}
	evidencetest.ResetPeakRSS()
	var v *bbverify.Verdict
	for b.Loop() {
		var err error
		if v, err = bbverify.Verify(b.Context(), path, opt); err != nil {
			b.Fatal(err)
		}
	}
	if v.Status != blackbox.Pass || v.Layer == nil {
		b.Fatalf("verdict %s (%s), reasons %+v; want PASS", v.Status, v.NotRun, v.Reasons)
	}
	b.ReportMetric(float64(v.Layer.Stats.Events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(evidencetest.PeakRSS())/(1<<20), "peak-MB")
}
