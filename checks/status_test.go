package checks

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// TestFlippedStatusFails: the runner failed each of these planted runs; a
// copy whose status is flipped to PASS (reason dropped, line rewritten to
// match), with every log untouched, must fail verification on the
// recomputed status, not only on the planted bug's own rule. For
// created-on-rollback every metric of the line holds: only the condition
// beyond the line (the client got 201, not 500) shows the failure.
func TestFlippedStatusFails(t *testing.T) {
	for _, bug := range []string{"created-on-rollback", "idem-key-across-users", "amount-ignores-quantity", "token-alg-none"} {
		t.Run(bug, func(t *testing.T) {
			p := copyFixture(t, filepath.Join("planted", bug))
			ev := readEvidence(t, p)
			sc := &ev.Scenarios[0]
			if sc.Status != evidence.StatusFail {
				t.Fatalf("fixture %s: %s, want the runner's FAIL", bug, sc.Line)
			}
			sc.Status, sc.Reason = evidence.StatusPass, ""
			sc.Line = evidence.FormatLine(sc.Suite, sc.ID, sc.Status, sc.Metrics)
			ev.Summary = evidence.Summarize(ev.Scenarios)
			ev.Boundaries = evidence.ComputeBoundaries(ev.Scenarios)
			ev.ProofBoundary = evidence.ComputeProofBoundary(ev)
			writeEvidence(t, p, ev)
			v := verify(t, p)
			if v.Status != Fail || !hasRule(v, "status-mismatch") || hasRule(v, "scenario-failed") {
				t.Fatalf("verdict %s, rules %v; want FAIL with status-mismatch (and no scenario-failed: the runner's word is gone)",
					v.Status, rules(v))
			}
		})
	}
}

// TestConditions: each condition a scenario needs beyond its line (what
// the runner checks with Result.Failf) holds on a history that meets it and
// fails on one that breaks it.
func TestConditions(t *testing.T) {
	const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
	const (
		seed     = `{"actor":"scenario","kind":"seed_stock","sku":"SKU","stock":10,"price_cents":1250}`
		decoy    = `{"actor":"scenario","kind":"seed_outbox","event_id":"e-1","order_id":-1,"state":"PENDING","claim_version":0,"payload_sha256":"` + zeros + `"}`
		rollback = `{"actor":"orders","kind":"order_rolled_back","order_id":1,"event_id":"e-1","key":"k","status":500,"err":"insert outbox intent: Error 1062 (23000): Duplicate entry","principal":"alice"}`
		answer   = `{"actor":"scenario","kind":"order_request","key":"k","status":%s,"principal":"alice","lines":["quantity=2 sku=SKU"],"token_alg":"HS256","token_key":"service","token_claims":"{}"}`
		commit   = `{"actor":"orders","kind":"order_committed","order_id":%d,"event_id":"e-%d","key":"k%d","sku":"SKU","quantity":1,"stock":%d,"status":201,"writes":["stock","orders","order_lines","idempotency_records","outbox"]}`
	)
	f := func(format string, a ...any) string { return fmt.Sprintf(format, a...) }
	for _, tc := range []struct {
		name, scenario string
		events         []string
		want           string // a failed condition contains it; "" = every condition holds
	}{
		{"rollback ok", "txBoundaryRollback", []string{seed, decoy, rollback, f(answer, "500")}, ""},
		{"rollback answered 201", "txBoundaryRollback", []string{seed, decoy, rollback, f(answer, "201")}, "answered 201, not 500"},
		{"rollback not on a duplicate key", "txBoundaryRollback",
			[]string{seed, decoy, strings.Replace(rollback, "1062", "1213", 1), f(answer, "500")}, "duplicate key (1062)"},
		{"rollback not on the decoy", "txBoundaryRollback", []string{seed, rollback, f(answer, "500")}, "duplicate key (1062)"},
		{"rollback left an order", "txBoundaryRollback", []string{seed, decoy, rollback, f(answer, "500"), f(commit, 2, 2, 2, 9)}, "left 1 orders"},
		{"rollback answer from the service", "txBoundaryRollback", []string{seed, decoy, rollback}, ""},
		{"rollback no answer", "txBoundaryRollback", []string{seed, decoy}, "no answer on record"},
		{"reuse ok", "keyReuseOtherBody", []string{seed, f(commit, 1, 1, 1, 9)}, ""},
		{"reuse wrote", "keyReuseOtherBody", []string{seed, f(commit, 1, 1, 1, 9), f(commit, 2, 2, 2, 8)}, "wrote rows"},
		{"duplicates ok", "concurrentDuplicates", []string{seed, f(answer, "201"), f(answer, "409")}, ""},
		{"duplicates 500", "concurrentDuplicates", []string{seed, f(answer, "201"), f(answer, "500")}, "answered 500"},
		{"oversell ok", "noOversell", []string{seed, f(answer, "201"), f(answer, "409")}, ""},
		{"oversell 400", "noOversell", []string{seed, f(answer, "400")}, "answered 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := model.New(nil, []string{"outbox-unique-conflict"})
			for i, line := range tc.events {
				e, err := evidence.DecodeEvent([]byte(line))
				if err != nil {
					t.Fatalf("event %d: %v", i+1, err)
				}
				m.Step(&e, model.Source{Seq: int64(i + 1)})
			}
			m.Finish(false)
			got := strings.Join(derivations[tc.scenario].conditions(facts{m: m}), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("conditions = %q; want %q", got, orDefault(tc.want, "none failed"))
			}
		})
	}
}

// TestSameOrderReadsTheAnswers: idempotentReplay's sameOrder needs the
// client's two answers to name one order with the same body, byte for
// byte (as the runner compares them).
func TestSameOrderReadsTheAnswers(t *testing.T) {
	const answer = `{"actor":"scenario","kind":"order_request","key":"k","status":201,"order_id":%d,"payload_sha256":"%s"}`
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		name   string
		events []string
		want   string
	}{
		{"same order, same body", []string{fmt.Sprintf(answer, 1, a), fmt.Sprintf(answer, 1, a)}, "true"},
		{"same order, another body", []string{fmt.Sprintf(answer, 1, a), fmt.Sprintf(answer, 1, b)}, "false"},
		{"another order", []string{fmt.Sprintf(answer, 1, a), fmt.Sprintf(answer, 2, a)}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := model.New(nil, nil)
			for i, line := range tc.events {
				e, err := evidence.DecodeEvent([]byte(line))
				if err != nil {
					t.Fatal(err)
				}
				m.Step(&e, model.Source{Seq: int64(i + 1)})
			}
			m.Finish(false)
			for _, mv := range derivations["idempotentReplay"].metrics(facts{m: m}) {
				if mv.name == "sameOrder" && mv.value != tc.want {
					t.Errorf("sameOrder = %s; want %s", mv.value, tc.want)
				}
			}
		})
	}
}
