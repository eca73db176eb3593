package checks

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/invariants"
)

// bulkEvidence writes an evidence file whose scenario businessInvariants
// runs n orders through the whole chain (evidencetest.WriteBulk): 8n+8
// events in four logs, with the live tables digested. The scenario
// honestly claims FAIL (its acceptance wants 3 orders), and run.args
// select that scenario alone, so a correct verifier's only reasons are
// scenario-failed and the three boundaries left unproven (see
// bulkReasonsOK).
func bulkEvidence(tb testing.TB, dir string, n int) (path string, events int64) {
	tb.Helper()
	invs, err := invariants.All()
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, len(invs))
	for i, inv := range invs {
		ids[i] = inv.ID
	}
	const scenario = "businessInvariants"
	nn := strconv.Itoa(n)
	return evidencetest.WriteBulk(tb, dir, evidencetest.Bulk{
		Orders: n, Scenario: scenario, Invariants: ids, Digests: true,
		Status: evidence.StatusFail, Reason: "sent=" + nn + ", want 3",
		Metrics: []evidence.Metric{{Name: "sent", Value: nn}, {Name: "effects", Value: nn}, {Name: "inbox", Value: nn},
			{Name: "linkedOrders", Value: nn}, {Name: "orphanSent", Value: "0"}, {Name: "sentWithoutEffect", Value: "0"},
			{Name: "effectWithoutInbox", Value: "0"}, {Name: "duplicatedEffects", Value: "0"}, {Name: "orphanEffects", Value: "0"}},
		Args: []string{"--scenarios", scenario, "--out", "u80.json"},
	})
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
	return slices.Equal(got, []string{"boundary-not-run", "boundary-not-run", "boundary-not-run", "scenario-failed",
		"witness-missing", "witness-missing"})
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
