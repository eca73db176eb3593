package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Settling and measuring the chaos scenario. Once every fault is healed
// the chain has chaoseng.SettleBound to reach quiescence: every request
// answered finally, every intent SENT, every intent with its effect, and
// the group's committed offsets at the end of every partition.

// Quiescent says what is still in flight ("" when nothing is): intents
// not SENT, intents without an effect, the group's lag.
func (cr *chaosRun) Quiescent(ctx context.Context) (string, error) {
	cr.startGenerated(ctx)
	select {
	case <-cr.genDone:
	default:
		return cr.genProgress(), nil
	}
	unsent, err := cr.e.Count(ctx, "outbox", "state <> 'SENT'")
	if err != nil {
		return "", err
	}
	missing, err := cr.missing(ctx)
	if err != nil {
		return "", err
	}
	lag, err := cr.lag(ctx)
	if err != nil {
		return "", err
	}
	if unsent == 0 && missing == 0 && lag == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d intent(s) not SENT, %d without an effect, group lag %d", unsent, missing, lag), nil
}

// missing counts the intents without an effect, per inbox consumer of
// the run: an intent two inboxes lack counts twice.
func (cr *chaosRun) missing(ctx context.Context) (int64, error) {
	var sum int64
	for _, inbox := range cr.inboxes {
		n, err := cr.e.QueryInt(ctx, `SELECT COUNT(*) FROM outbox o
  WHERE NOT EXISTS (SELECT 1 FROM notification n WHERE n.event_id = o.event_id AND n.consumer = ?)`, inbox)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// lag is the lag of the run's groups on the broker, summed.
func (cr *chaosRun) lag(ctx context.Context) (int64, error) {
	var sum int64
	for _, g := range cr.groups {
		n, err := cr.e.Kafka.GroupLag(ctx, cr.topic, g)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// measure records the metrics (spec/chaos.go), after the actors stopped.
func (cr *chaosRun) measure(ctx context.Context, res chaoseng.Result) error {
	e, ls, st := cr.e, res.Load, res.Settled
	orders, err := e.Count(ctx, "orders", "")
	if err != nil {
		return err
	}
	events, err := e.Count(ctx, "outbox", "")
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	missing, err := cr.missing(ctx)
	if err != nil {
		return err
	}
	lag, err := cr.lag(ctx)
	if err != nil {
		return err
	}
	lc, err := cr.logCounts()
	if err != nil {
		return err
	}
	if !st.OK {
		e.Result.Failf("the chain did not settle within %v of healing: %s", chaoseng.SettleBound, st.Last)
	}
	if ls.Unanswered > 0 {
		e.Result.Failf("%d order request(s) got no final answer", ls.Unanswered)
	}
	faults := spec.FormatFaultCounts(res.Injected)
	e.Result.Metric("orders", orders)
	e.Result.Metric("events", events)
	e.Result.Metric("deliveries", lc.receives)
	e.Result.Metric("duplicatesAbsorbed", lc.rejects)
	e.Result.Metric("effects", effects)
	e.Result.Metric("missing", missing)
	e.Result.Metric("lag", lag)
	e.Result.Metric("faults", faults)
	e.Result.Metric("unknownResolved", fmt.Sprintf("%d/%d", lc.resolved, lc.unknown))
	e.Log.Info("chaos settled", "ok", st.OK, "took", st.Took, "requests", ls.Attempts, "created", ls.Created)
	return nil
}

// logCounts are the figures read back from the actors' logs.
type logCounts struct {
	receives, rejects int
	unknown, resolved int
}

// logCounts reads every actor log of the scenario (the processes have
// ended) and counts the receives, the inbox rejects, the effect commits
// of unknown outcome (settled by a later inbox decision of their row) and
// the publishes of unknown outcome, and resolves those: an unknown
// publish of event E is resolved when the records of E received at offsets no acknowledged
// publish produced are no more than the unknown publishes of E (each is
// then one that was appended, the others were not). Once the group's lag
// is 0 every appended record was received, so the receives show them all.
func (cr *chaosRun) logCounts() (logCounts, error) {
	var lc logCounts
	type rec struct {
		topic     string
		partition int32
		offset    int64
	}
	acked := map[rec]bool{}
	received := map[string]map[rec]bool{}
	unknown := map[string]map[string]bool{} // event id -> its tokens with a publish of unknown outcome
	type decision struct {
		at      time.Time
		unknown bool // commit_unknown; else inbox_insert or inbox_reject
	}
	decisions := map[string][]decision{} // inbox row (consumer name/key) -> its effect transactions' outcomes
	decide := func(consumer, key string, at time.Time, unknown bool) {
		decisions[consumer+"/"+key] = append(decisions[consumer+"/"+key], decision{at, unknown})
	}
	cr.e.mu.Lock()
	actors := append([]string{}, cr.e.logOrder...)
	dir := cr.e.logDir
	cr.e.mu.Unlock()
	for _, a := range actors {
		events, err := evidence.ReadEvents(filepath.Join(dir, a+".jsonl"))
		if err != nil && !strings.Contains(err.Error(), "truncated") {
			return lc, fmt.Errorf("read the log of %s: %w", a, err)
		}
		for _, ev := range events {
			switch ev.Kind {
			case evidence.KindReceive:
				lc.receives++
				if ev.Partition != nil && ev.Offset != nil {
					if received[ev.EventID] == nil {
						received[ev.EventID] = map[rec]bool{}
					}
					received[ev.EventID][rec{ev.Topic, *ev.Partition, *ev.Offset}] = true
				}
			case evidence.KindInboxReject:
				lc.rejects++
				decide(ev.Consumer, inboxKey(ev), ev.Time, false)
			case evidence.KindInboxInsert:
				decide(ev.Consumer, inboxKey(ev), ev.Time, false)
			case evidence.KindCommitUnknown:
				decide(ev.Consumer, ev.EventID, ev.Time, true)
			case evidence.KindPublishUnknown:
				if unknown[ev.EventID] == nil {
					unknown[ev.EventID] = map[string]bool{}
				}
				var v int64
				if ev.ClaimVersion != nil {
					v = *ev.ClaimVersion
				}
				unknown[ev.EventID][fmt.Sprintf("%d/%s", v, ev.ClaimID)] = true
			case evidence.KindPublish:
				if ev.Partition != nil && ev.Offset != nil {
					acked[rec{ev.Topic, *ev.Partition, *ev.Offset}] = true
				}
			}
		}
	}
	// An effect commit of unknown outcome is settled by a later inbox
	// decision of its row: an inbox_insert (it did not commit) or an
	// inbox_reject (the last unknown one before it did).
	for _, ds := range decisions {
		slices.SortStableFunc(ds, func(a, b decision) int { return a.at.Compare(b.at) })
		open := 0
		for _, d := range ds {
			if d.unknown {
				open++
				lc.unknown++
				continue
			}
			lc.resolved += open
			open = 0
		}
	}
	for id, tokens := range unknown {
		u := len(tokens)
		lc.unknown += u
		extra := 0
		for r := range received[id] {
			if !acked[r] {
				extra++
			}
		}
		if extra <= u {
			lc.resolved += u
		}
	}
	return lc, nil
}

// inboxKey is the key an inbox event names its row by (the event id when
// it names none).
func inboxKey(e evidence.Event) string {
	if e.InboxKey != "" {
		return e.InboxKey
	}
	return e.EventID
}
