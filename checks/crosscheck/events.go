package crosscheck

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// Event is an actor's event that a witness can confirm or refute, copied
// out of the replay (the decoder reuses its storage) with where it was
// logged. Keep makes them.
type Event struct {
	e   evidence.Event
	src model.Source
}

// witnessKinds are the kinds the cross-checks hold against the witnesses:
// every write to the database and every call to the broker.
var witnessKinds = map[evidence.Kind]bool{
	evidence.KindSeedStock: true, evidence.KindSeedOutbox: true,
	evidence.KindOrderCommitted: true, evidence.KindOutboxWritten: true, evidence.KindOrderRolledBack: true,
	evidence.KindClaim: true, evidence.KindPublish: true, evidence.KindPublishUnknown: true, evidence.KindMark: true,
	evidence.KindLeaseExpired: true, evidence.KindReceive: true, evidence.KindInboxInsert: true,
	evidence.KindInboxReject: true, evidence.KindEffect: true, evidence.KindOffsetCommit: true,
	evidence.KindOrderRequest: true, evidence.KindOrderAdvanced: true, evidence.KindEffectRolledBack: true, evidence.KindCommitUnknown: true,
	// Not a write: which actor died, for the publishes it left in flight
	// (diedHolding).
	evidence.KindProcessExit: true,
	// Not writes either: the faults, for the waits they excuse
	// (claimWaits).
	evidence.KindFault: true, evidence.KindHeal: true, evidence.KindCallFailed: true,
}

// Keep appends to out a copy of e, logged at src, if a witness can speak
// to it (its kind is a write to the database, a call to the broker, or a
// process's exit); else it returns out as it is.
func Keep(out []Event, e *evidence.Event, src model.Source) []Event {
	if !witnessKinds[e.Kind] {
		return out
	}
	c := *e
	c.OrderID = clonePtr(e.OrderID)
	c.ClaimVersion = clonePtr(e.ClaimVersion)
	c.LeaseUntil = clonePtr(e.LeaseUntil)
	c.Rows = clonePtr(e.Rows)
	c.Partition = clonePtr(e.Partition)
	c.Offset = clonePtr(e.Offset)
	c.NotificationID = clonePtr(e.NotificationID)
	c.Quantity = clonePtr(e.Quantity)
	c.Stock = clonePtr(e.Stock)
	c.LeaseMS = clonePtr(e.LeaseMS)
	c.Batch = clonePtr(e.Batch)
	c.PollMS = clonePtr(e.PollMS)
	c.PublishTimeoutMS = clonePtr(e.PublishTimeoutMS)
	c.AggregateVersion = clonePtr(e.AggregateVersion)
	c.PriceCents = clonePtr(e.PriceCents)
	c.AmountCents = clonePtr(e.AmountCents)
	c.Lines = slices.Clone(e.Lines)
	c.Writes = slices.Clone(e.Writes)
	return append(out, Event{e: c, src: src})
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Accessors for the optional fields: absent reads as the zero value, and
// the event schema requires the fields each kind needs.

func i64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func i32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// reason is a cross-check finding about an event.
func (w Event) reason(rule string, where, format string, args ...any) finding.Reason {
	return finding.Reason{Rule: rule, Status: finding.Fail, Log: w.src.Log, Seq: w.src.Seq, Line: w.src.Line, Witness: where,
		Message: fmt.Sprintf(format, args...)}
}

// token names a claim token in messages.
func tokenText(v int64, claimID string) string {
	return "claim_version " + strconv.FormatInt(v, 10) + ", claim_id " + strconv.Quote(claimID)
}

// sameInstant compares a logged time with a binlog DATETIME(6) value to
// the microsecond.
func sameInstant(logged *time.Time, v any) bool {
	t, ok := v.(time.Time)
	if logged == nil || !ok {
		return logged == nil && v == nil
	}
	return logged.UTC().Truncate(time.Microsecond).Equal(t.UTC().Truncate(time.Microsecond))
}
