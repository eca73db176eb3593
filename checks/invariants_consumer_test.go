package checks

import (
	"context"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/invariants"
)

// consumerStates are end states of two inbox consumers ("notifier" and
// "ledger-projection-2") of two SENT events, each with the rows of the
// per-consumer invariants it must return: a legal one (one effect of each
// event by each consumer: two notifications of one event by two
// consumers are legal) and one that breaks each.
var consumerStates = []struct {
	name  string
	inbox [][2]string // consumer, event id
	notif [][2]string // consumer, event id (ids 1, 2, ... in order)
	want  map[string]int64
}{
	{name: "legal", inbox: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2"),
		notif: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2")},
	{name: "one consumer lost one effect", inbox: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1"),
		notif: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1"),
		want:  map[string]int64{"sent-without-effect": 1}},
	{name: "one consumer lost both, inbox kept", inbox: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2"),
		notif: pairs("notifier", "e-1", "notifier", "e-2"),
		want:  map[string]int64{"sent-without-effect": 2, "inbox-without-effect": 2}},
	{name: "one consumer applied one event twice", inbox: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2"),
		notif: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2", long, "e-2"),
		want:  map[string]int64{"duplicated-effects": 1}},
	{name: "both consumers applied one event twice", inbox: pairs("notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-2"),
		notif: pairs("notifier", "e-1", "notifier", "e-1", "notifier", "e-2", long, "e-1", long, "e-1", long, "e-2"),
		want:  map[string]int64{"duplicated-effects": 2}},
	{name: "nobody wrote anything", want: map[string]int64{"sent-without-effect": 2}},
}

const long = "ledger-projection-2"

func pairs(s ...string) [][2]string {
	var out [][2]string
	for i := 0; i+1 < len(s); i += 2 {
		out = append(out, [2]string{s[i], s[i+1]})
	}
	return out
}

// consumerState is the end state of c as the tables of evidence.DigestSpecs.
func consumerState(inbox, notif [][2]string) []tableSource {
	s := func(v string) any { return v }
	i := func(v int64) any { return v }
	rows := map[string][][]any{
		"stock":  {{s("SKU"), i(8)}},
		"orders": {{i(1), s("SKU"), i(1), s("alice"), i(1250)}, {i(2), s("SKU"), i(1), s("bob"), i(1250)}},
		"outbox": {{s("e-1"), i(1), s("SENT"), i(1), s("relay-a")}, {s("e-2"), i(2), s("SENT"), i(1), s("relay-a")}},
	}
	for _, p := range inbox {
		rows["inbox"] = append(rows["inbox"], []any{s(p[0]), s(p[1])})
	}
	for n, p := range notif {
		order := int64(1)
		if p[1] == "e-2" {
			order = 2
		}
		rows["notification"] = append(rows["notification"], []any{i(int64(n + 1)), s(p[0]), s(p[1]), i(order)})
	}
	var out []tableSource
	for _, spec := range evidence.DigestSpecs {
		out = append(out, TableRows{Table: spec.Table, Columns: spec.Columns, Rows: rows[spec.Table]}.source())
	}
	return out
}

// checkConsumerStates: the effect invariants hold each inbox consumer to
// one effect per SENT event, on e's engine.
func checkConsumerStates(t *testing.T, e *engine) {
	t.Helper()
	ctx := t.Context()
	invs, err := invariants.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range consumerStates {
		if err := e.reset(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.load(ctx, consumerState(st.inbox, st.notif)); err != nil {
			t.Fatal(err)
		}
		for _, inv := range invs {
			if inv.ID == "order-without-intent" {
				continue // the fixture's orders have no lines; not this test's concern
			}
			n, err := e.countInvariant(ctx, inv)
			if err != nil {
				t.Fatal(err)
			}
			if n != st.want[inv.ID] {
				t.Errorf("%s: invariant %s returned %d row(s); want %d", st.name, inv.ID, n, st.want[inv.ID])
			}
		}
	}
}

func TestInvariantsPerConsumerSQLite(t *testing.T) {
	e, err := openSQLite(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer e.close(context.Background())
	checkConsumerStates(t, e)
}

func TestInvariantsPerConsumerMySQL(t *testing.T) {
	checkConsumerStates(t, openTestMySQL(t))
}
