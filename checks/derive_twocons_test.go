package checks

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Two inbox consumers on small replays: twoConsumers' line, and the chaos
// scenario's missing and lag per inbox consumer and group.

// consumerRun is what one member of group, writing as inbox, did with the
// records at offsets (event e-<offset+1>, the last one repeated when dup):
// an effect of each, or an inbox_reject when reject says so.
func consumerRun(member, group, inbox string, offsets []int64, reject func(off int64) bool, nid *int64) []evidence.Event {
	var out []evidence.Event
	at := func(kind evidence.Kind, off int64, id string, set func(e *evidence.Event)) {
		e := evidence.Event{Kind: kind, Actor: member, EventID: id, Topic: "t", Partition: evidence.Ptr[int32](0),
			Offset: evidence.Ptr(off)}
		if set != nil {
			set(&e)
		}
		out = append(out, e)
	}
	for _, off := range offsets {
		order := min(off+1, 3)
		id := evidence.EventIDFor(order)
		at(evidence.KindReceive, off, id, func(e *evidence.Event) { e.Consumer, e.OrderID = group, evidence.Ptr(order) })
		if reject(off) {
			at(evidence.KindInboxReject, off, id, func(e *evidence.Event) { e.Consumer = inbox })
		} else {
			at(evidence.KindInboxInsert, off, id, func(e *evidence.Event) { e.Consumer = inbox })
			*nid++
			n := *nid
			out = append(out, evidence.Event{Kind: evidence.KindEffect, Actor: member, EventID: id, Consumer: inbox,
				OrderID: evidence.Ptr(order), NotificationID: &n})
		}
		at(evidence.KindOffsetCommit, off+1, "", func(e *evidence.Event) { e.Consumer, e.EventID = group, "" })
	}
	return out
}

// threeOrders are three committed orders and four records on t/0: e-1,
// e-2, e-3 and e-3 again.
func threeOrders() []evidence.Event {
	out := []evidence.Event{seedStock(10), committed(1, 9), committed(2, 8), committed(3, 7)}
	for off := range int64(4) {
		order := min(off+1, 3)
		out = append(out, ev(evidence.KindPublish, evidence.EventIDFor(order), func(e *evidence.Event) {
			e.OrderID, e.Topic, e.Partition, e.Offset = evidence.Ptr(order), "t", evidence.Ptr[int32](0), evidence.Ptr(off)
		}))
	}
	return out
}

func replayed(events []evidence.Event) *model.Model {
	m := model.New(nil, nil)
	for i := range events {
		m.Step(&events[i], Source{Seq: int64(i + 1)})
	}
	m.Finish(false)
	return m
}

func lineOf(vs []metricValue) string {
	var parts []string
	for _, v := range vs {
		value := v.value
		if !v.ok {
			value = "?"
		}
		parts = append(parts, v.name+"="+value)
	}
	return strings.Join(parts, " ")
}

func TestTwoConsumersDerived(t *testing.T) {
	all := []int64{0, 1, 2, 3}
	dup := func(off int64) bool { return off == 3 }
	every := func(int64) bool { return true }
	for _, c := range []struct {
		name string
		b    func(nid *int64) []evidence.Event
		want string
	}{
		{"each its own effects", func(nid *int64) []evidence.Event {
			return consumerRun("consumer-b", "gb", "ledger-projection-2", all, dup, nid)
		}, "notifierEffects=3 notifierRejects=1 ledgerEffects=3 ledgerRejects=1 bothApplied=3"},
		{"the second rejects every record (inbox looked up by event id)", func(nid *int64) []evidence.Event {
			return consumerRun("consumer-b", "gb", "ledger-projection-2", all, every, nid)
		}, "notifierEffects=3 notifierRejects=1 ledgerEffects=0 ledgerRejects=4 bothApplied=0"},
		{"the second writes under the first's name", func(nid *int64) []evidence.Event {
			return consumerRun("consumer-b", "gb", "notifier", all, every, nid)
		}, "notifierEffects=3 notifierRejects=5 ledgerEffects=0 ledgerRejects=0 bothApplied=0"},
		{"the second applies one event only", func(nid *int64) []evidence.Event {
			return consumerRun("consumer-b", "gb", "ledger-projection-2", all, func(off int64) bool { return off != 1 }, nid)
		}, "notifierEffects=3 notifierRejects=1 ledgerEffects=1 ledgerRejects=3 bothApplied=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var nid int64
			events := append(threeOrders(), consumerRun("consumer-a", "ga", "notifier", all, dup, &nid)...)
			m := replayed(append(events, c.b(&nid)...))
			if got := lineOf(twoConsumersMetrics(facts{m: m})); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestChaosPerInbox(t *testing.T) {
	all := []int64{0, 1, 2, 3}
	dup := func(off int64) bool { return off == 3 }
	both := []string{"notifier", "ledger-projection-2"}
	for _, c := range []struct {
		name     string
		declared []string
		consumed func(nid *int64) []evidence.Event
		missing  int64
		lag      string
	}{
		{"two inboxes, each applied everything", both, func(nid *int64) []evidence.Event {
			return append(consumerRun("consumer-1", "ga", "notifier", all, dup, nid),
				consumerRun("consumer-3", "gb", "ledger-projection-2", all, dup, nid)...)
		}, 0, "lag=0"},
		{"the second inbox declared, never ran", both, func(nid *int64) []evidence.Event {
			return consumerRun("consumer-1", "ga", "notifier", all, dup, nid)
		}, 3, "lag=0"},
		{"the second inbox undeclared, named by its events, lacks one", []string{"notifier"}, func(nid *int64) []evidence.Event {
			return append(consumerRun("consumer-1", "ga", "notifier", all, dup, nid),
				consumerRun("consumer-3", "gb", "ledger-projection-2", all, func(off int64) bool { return off == 2 || off == 3 }, nid)...)
		}, 1, "lag=0"},
		{"the first group one record short", both, func(nid *int64) []evidence.Event {
			return append(consumerRun("consumer-1", "ga", "notifier", all[:3], dup, nid),
				consumerRun("consumer-3", "gb", "ledger-projection-2", all, dup, nid)...)
		}, 0, "lag=1"},
		{"the second group one record short", both, func(nid *int64) []evidence.Event {
			return append(consumerRun("consumer-1", "ga", "notifier", all, dup, nid),
				consumerRun("consumer-3", "gb", "ledger-projection-2", all[:3], dup, nid)...)
		}, 0, "lag=1"},
		{"both groups short", both, func(nid *int64) []evidence.Event {
			return append(consumerRun("consumer-1", "ga", "notifier", all[:3], dup, nid),
				consumerRun("consumer-3", "gb", "ledger-projection-2", all[:2], dup, nid)...)
		}, 1, "lag=3"},
		{"the second inbox undeclared, its effects rolled back or unknown", []string{"notifier"}, func(nid *int64) []evidence.Event {
			out := consumerRun("consumer-1", "ga", "notifier", all, dup, nid)
			for _, k := range []evidence.Kind{evidence.KindEffectRolledBack, evidence.KindCommitUnknown} {
				out = append(out, evidence.Event{Kind: k, Actor: "consumer-3", EventID: "e-1", Consumer: "ledger-projection-" + string(k),
					Topic: "t", Partition: evidence.Ptr[int32](0), Offset: evidence.Ptr[int64](0)})
			}
			return out
		}, 6, "lag=0"},
		{"no consumer, none declared", nil, func(*int64) []evidence.Event { return nil }, 3, "lag=?"},
		{"no consumer, one declared", []string{"notifier"}, func(*int64) []evidence.Event { return nil }, 3, "lag=?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var nid int64
			f := facts{m: replayed(append(threeOrders(), c.consumed(&nid)...)), inboxes: c.declared}
			if got := f.missingEffects(); got != c.missing {
				t.Errorf("missing = %d; want %d", got, c.missing)
			}
			if got := lineOf([]metricValue{f.chaosLag()}); got != c.lag {
				t.Errorf("%s; want %s", got, c.lag)
			}
		})
	}
}
