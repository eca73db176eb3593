package model

import (
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

const histories = "testdata/histories"

// replay folds a history's events into a model reporting layers, finishes
// it and returns the model.
func replay(t *testing.T, h modeltest.History, layers []spec.Layer) *Model {
	t.Helper()
	m := New(layers, h.FaultPoints)
	for i := range h.Events {
		m.Step(&h.Events[i], Source{Log: "events.jsonl", Line: int64(i + 1), Seq: h.Events[i].Seq})
	}
	m.Finish(false)
	return m
}

// reported returns the rules of the violations, sorted.
func reported(m *Model) []string {
	vs, _ := m.Violations()
	var got []string
	for _, v := range vs {
		got = append(got, string(v.Rule))
	}
	slices.Sort(got)
	return got
}

// TestHistories replays every recorded history under testdata/histories
// (one directory each: events.jsonl, want, optional fault_points) and
// compares the rules the model reports with want.
func TestHistories(t *testing.T) {
	for _, dir := range modeltest.Histories(t, histories) {
		h := modeltest.Load(t, dir)
		t.Run(h.Name, func(t *testing.T) {
			m := replay(t, h, nil)
			vs, _ := m.Violations()
			for _, v := range vs {
				if v.Source.Seq == 0 || v.Message == "" {
					t.Errorf("violation %+v lacks its seq or message", v)
				}
			}
			want := slices.Sorted(slices.Values(h.Want))
			if got := reported(m); !slices.Equal(got, want) {
				for _, v := range vs {
					t.Logf("%s at %s: %s", v.Rule, v.Source, v.Message)
				}
				t.Fatalf("rules = %v; want %v", got, want)
			}
		})
	}
}

// TestFinishTruncated: a missing cause is inconclusive when a log was cut.
func TestFinishTruncated(t *testing.T) {
	events := modeltest.Events(t, histories+"/receive-without-publish/events.jsonl")
	for _, truncated := range []bool{false, true} {
		m := New(nil, nil)
		for i := range events {
			m.Step(&events[i], Source{Seq: events[i].Seq})
		}
		m.Finish(truncated)
		vs, _ := m.Violations()
		if len(vs) != 1 || vs[0].Inconclusive != truncated {
			t.Fatalf("truncated=%v: violations %+v; want one, inconclusive=%v", truncated, vs, truncated)
		}
	}
}

func TestViolationCap(t *testing.T) {
	m := New(nil, nil)
	e := evidence.Event{Kind: evidence.KindClaim, EventID: "e-404", ClaimVersion: evidence.Ptr[int64](1)}
	for i := range 1000 {
		m.Step(&e, Source{Seq: int64(i + 1)})
	}
	vs, more := m.Violations()
	if len(vs) != maxViolationsPerRule || more[RuleUnknownIntent] != 1000-maxViolationsPerRule {
		t.Fatalf("kept %d, suppressed %v; want %d kept and the rest counted", len(vs), more, maxViolationsPerRule)
	}
}

// TestModelTablesBusiness: an order of two lines writes two order_lines
// rows with their prices; orders and idempotency records carry the
// principal and the amount.
func TestModelTablesBusiness(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-business-answers"), nil)
	got := map[string][][]any{}
	for _, tr := range m.Tables() {
		for i := range tr.N {
			got[tr.Spec.Table] = append(got[tr.Spec.Table], tr.Row(i, nil))
		}
	}
	want := map[string][][]any{
		"stock":  {{"SKU-A", int64(7)}, {"SKU-B", int64(4)}},
		"orders": {{int64(1), "SKU-A", int64(3), "alice", int64(2899)}, {int64(2), "SKU-A", int64(1), "bob", int64(1250)}},
		"order_lines": {{int64(1), "SKU-A", int64(2), int64(1250)}, {int64(1), "SKU-B", int64(1), int64(399)},
			{int64(2), "SKU-A", int64(1), int64(1250)}},
		"idempotency_records": {{"k", int64(1), int64(201), "alice"}, {"k", int64(2), int64(201), "bob"}},
	}
	for table, rows := range want {
		if !slices.EqualFunc(got[table], rows, func(a, b []any) bool { return slices.Equal(a, b) }) {
			t.Errorf("%s = %v; want %v", table, got[table], rows)
		}
	}
}

func TestModelTables(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-send-before-mark-crash"), nil)
	got := map[string][][]any{}
	for _, tr := range m.Tables() {
		for i := range tr.N {
			got[tr.Spec.Table] = append(got[tr.Spec.Table], tr.Row(i, nil))
		}
	}
	want := map[string][][]any{
		"stock":               {{"SKU", int64(9)}},
		"orders":              {{int64(1), "SKU", int64(1), nil, nil}}, // a log without principal and amount
		"order_lines":         {{int64(1), "SKU", int64(1), nil}},
		"idempotency_records": {{"k1", int64(1), int64(201), nil}},
		"outbox":              {{"e-1", int64(1), "SENT", int64(2), "relay-b"}},
		"inbox":               {{"notifier", "e-1"}},
		"notification":        {{int64(1), "notifier", "e-1", int64(1)}},
	}
	for table, rows := range want {
		if !slices.EqualFunc(got[table], rows, func(a, b []any) bool { return slices.Equal(a, b) }) {
			t.Errorf("%s = %v; want %v", table, got[table], rows)
		}
	}
	if d := m.Deliveries("e-1"); d.Received != 2 || d.Effects != 1 || m.Counts().Replays != 0 || m.KeyIntent() != "e-1" {
		t.Errorf("deliveries %+v replays %d key %q; want 2 received, 1 effect, 0, e-1", d, m.Counts().Replays, m.KeyIntent())
	}
}

// TestConcurrentStock: orders that log out of commit order leave the
// lowest stock any of them reported.
func TestConcurrentStock(t *testing.T) {
	m := replay(t, modeltest.Load(t, histories+"/ok-concurrent-stock"), nil)
	if got := m.StockOf("SKU"); got != 7 {
		t.Fatalf("stock = %d; want 7 (the lowest reported)", got)
	}
}

// TestLateClaimLine: a claim whose line came after the takeover of its
// row (its relay stopped between the COMMIT and the line) is checked where
// the database put it. The two histories under testdata/late break two
// rules each, which a late line cannot avoid: a lease that starts after
// its own late line was live at the takeover; a takeover whose lease is
// not later than the late claim's ended before the takeover's line.
func TestLateClaimLine(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		want   []string
		double int64
	}{
		{"testdata/late/lease-off-claim--late-line", []string{"claim-on-live-lease", "lease-off-claim"}, 1},
		{"testdata/late/takeover-old-lease--late-line", []string{"lease-off-claim", "takeover-old-lease"}, 0},
	} {
		m := replay(t, modeltest.Load(t, tc.dir), nil)
		if got := reported(m); !slices.Equal(got, tc.want) {
			t.Errorf("%s: rules = %v, want %v", tc.dir, got, tc.want)
		}
		if n := m.Counts().DoubleClaims; n != tc.double {
			t.Errorf("%s: %d double claims, want %d", tc.dir, n, tc.double)
		}
		if n := m.Counts().Takeovers; n != 1 {
			t.Errorf("%s: %d takeovers counted, want 1 (the takeover of the late claim)", tc.dir, n)
		}
	}
	m := replay(t, modeltest.Load(t, histories+"/ok-claim-line-after-takeover"), nil)
	if c := m.Counts(); c.Takeovers != 1 || c.SelfTakeovers != 0 || c.Claims != 2 {
		t.Errorf("ok-claim-line-after-takeover: %d claims, %d takeovers (%d self), want 2, 1, 0", c.Claims, c.Takeovers, c.SelfTakeovers)
	}
	var versions []int64
	for _, tk := range m.Tokens("e-1") {
		versions = append(versions, tk.Version)
	}
	if !slices.Equal(versions, []int64{1, 2}) {
		t.Errorf("tokens of e-1 in versions %v, want [1 2] (claim order, the late line's in its place)", versions)
	}
}
