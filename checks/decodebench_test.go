//go:build jsonbench

package checks

// The decoders of event lines (checks/eventline's candidates.go) compared
// end to end, each as the verifier's decoder (BENCHMARKS.md, "Decoding:
// the hand-written scanner against the libraries"); per line, they are
// compared in checks/eventline (candidates_test.go). Behind the jsonbench
// build tag, as the candidates are.
//
//	OFA_BULK_DIR=/tmp/bulk1m go test -count=1 -run TestWriteBulkEvidence ./checks
//	for i in 1 2 3 4 5; do OFA_BULK_DIR=/tmp/bulk1m go test -tags jsonbench -run '^$' \
//	    -bench 'BenchmarkVerify1MDecoders' -benchtime 1x -count 1 ./checks; done

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/eventline"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
)

// BenchmarkVerify1MDecoders: BenchmarkVerify1M with each candidate as the
// verifier's decoder, on one generated file: the one TestWriteBulkEvidence
// wrote into $OFA_BULK_DIR if it is set (so that runs of separate
// processes, interleaved, share it), else a new one.
func BenchmarkVerify1MDecoders(b *testing.B) {
	const orders = (1_000_000 - 8) / 8
	path, events := filepath.Join(os.Getenv("OFA_BULK_DIR"), "u80.json"), int64(8*orders+8)
	if _, err := os.Stat(path); os.Getenv("OFA_BULK_DIR") == "" || err != nil {
		path, events = bulkEvidence(b, b.TempDir(), orders)
	}
	defer func(old func() evidence.Decoder) { newLineDecoder = old }(newLineDecoder)
	for _, c := range eventline.Candidates {
		b.Run(c.Name, func(b *testing.B) {
			newLineDecoder = c.New
			evidencetest.ResetPeakRSS()
			var v *Verdict
			for b.Loop() {
				var err error
				if v, err = Verify(b.Context(), path, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			if v.Events != events || !bulkReasonsOK(v) {
				b.Fatalf("verdict over %d events with reasons %+v", v.Events, v.Reasons)
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(evidencetest.PeakRSS())/(1<<20), "peak-MB")
		})
	}
}
