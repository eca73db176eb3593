package runner

import (
	"context"
	"fmt"

	"github.com/orderflow-audit/orderflow-audit/runner/sut"
)

// twoConsumersRuns are the scenarios this file runs, by id (runs). Two
// consumers of one topic, each its own group and inbox (spec/consumer.go).
var twoConsumersRuns = map[string]runFunc{
	"twoConsumers": twoConsumers,
}

// The two inbox consumers of twoConsumers: the usual notifier, and a
// second whose name is longer than 16 characters, so that an inbox whose
// consumer column is too narrow for it shows.
const (
	inboxNotifier = "notifier"
	inboxLedger   = "ledger-projection-2"
)

// twoConsumers runs the scenario twoConsumers of spec/consumer.go, which
// says what it does and what its metrics mean.
func twoConsumers(ctx context.Context, e *Env) error {
	topic, err := e.Topic(ctx, "")
	if err != nil {
		return err
	}
	if _, _, err := e.placeOrders(ctx, "two", 3); err != nil {
		return err
	}
	r, err := e.Relay("relay-a", topic, nil)
	if err != nil {
		return err
	}
	claims, err := r.Claim(ctx, 3)
	if err != nil {
		return err
	}
	if len(claims) != 3 {
		return fmt.Errorf("relay claimed %d intents, want 3", len(claims))
	}
	// e-3 twice: a producer retry that the broker appended twice.
	for _, c := range append(claims, claims[2]) {
		if _, _, err := r.Publish(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range claims {
		if _, err := r.Mark(ctx, c); err != nil {
			return err
		}
	}
	a, err := e.drainAs(ctx, "consumer-a", topic, "notify-"+e.RunID, inboxNotifier)
	if err != nil {
		return err
	}
	b, err := e.drainAs(ctx, "consumer-b", topic, "ledger-"+e.RunID, inboxLedger)
	if err != nil {
		return err
	}
	return e.measureTwoConsumers(ctx, a, b)
}

// drainAs starts member of group writing to the inbox as inbox, drains
// topic and stops it.
func (e *Env) drainAs(ctx context.Context, member, topic, group, inbox string) (sut.ConsumerStats, error) {
	c, err := e.ConsumerOf(ctx, member, topic, group, inbox, nil)
	if err != nil {
		return sut.ConsumerStats{}, err
	}
	st, err := e.drain(ctx, c, topic)
	c.Close()
	return st, err
}

// measureTwoConsumers records each consumer's effects (its notification
// rows) and rejected duplicates (its stats), and the event ids with a
// notification of each.
func (e *Env) measureTwoConsumers(ctx context.Context, a, b sut.ConsumerStats) error {
	for _, c := range []struct {
		name, metric string
		st           sut.ConsumerStats
	}{{inboxNotifier, "notifier", a}, {inboxLedger, "ledger", b}} {
		n, err := e.Count(ctx, "notification", "consumer = ?", c.name)
		if err != nil {
			return err
		}
		e.Result.Metric(c.metric+"Effects", n)
		e.Result.Metric(c.metric+"Rejects", int64(c.st.InboxRejected))
	}
	both, err := e.QueryInt(ctx, `SELECT COUNT(*) FROM (SELECT event_id FROM notification WHERE consumer IN (?, ?)
		GROUP BY event_id HAVING COUNT(DISTINCT consumer) = 2) q`, inboxNotifier, inboxLedger)
	if err != nil {
		return err
	}
	e.Result.Metric("bothApplied", both)
	return nil
}
