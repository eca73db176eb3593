package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// publishRuns are the scenarios this file runs, by id (runs). Publish
// failures (spec/publish.go).
var publishRuns = map[string]runFunc{
	"publishFailures":     publishFailures,
	"publishBatchTimeout": publishBatchTimeout,
	"relayPoll":           relayPoll,
}

// failuresPublishTimeout is the relay's publish timeout in
// publishFailures: the two unknown outcomes wait for it, and the first
// publish after one needs a retry or two of the client within it (25 and
// 50 ms: relay.ProducerOpts).
const failuresPublishTimeout = 300 * time.Millisecond

// brokerFault is one failure the broker is told to inflict on the
// publish of one intent.
type brokerFault struct {
	point   spec.Point
	inject  func(eventID string)
	eventID string
	what    string
}

// publishFailures runs the scenario publishFailures of spec/publish.go,
// which says what it does and what its metrics mean.
// The broker fails the intents in the order the relay publishes them, so
// that the unanswered request comes last.
func publishFailures(ctx context.Context, e *Env) error {
	topic, placed, err := e.startChain(ctx, "pubfail", 3)
	if err != nil {
		return err
	}
	pf, err := e.Kafka.ProduceFaults()
	if err != nil {
		return err
	}
	e.Defer(pf.Clear)
	faults := []brokerFault{
		{spec.PublishRefused, pf.Refuse, placed[0].EventID, "answered INVALID_RECORD and appended nothing"},
		{spec.PublishAckLost, pf.LoseAck, placed[1].EventID, "appended the record and answered REQUEST_TIMED_OUT"},
		{spec.PublishTimeout, pf.Swallow, placed[2].EventID, "left the request unanswered and appended nothing"},
	}
	for _, f := range faults {
		f.inject(f.eventID)
	}
	// One intent per round: the relay publishes a batch at once, and the
	// broker fails a whole produce request for the record it carries, so
	// three records in one request would share one failure.
	r, err := e.RelayWith("relay-a", topic, nil, func(c *sut.RelayConfig) {
		c.PublishTimeout, c.Batch = failuresPublishTimeout, 1
	})
	if err != nil {
		return err
	}
	first, err := runRounds(ctx, r)
	if err != nil {
		return err
	}
	if err := e.recordBrokerFaults(pf, faults); err != nil {
		return err
	}
	// The leases run out (aged by SQL, as the clock would) and the relay
	// takes its own rows over.
	for _, c := range first.Claimed {
		if _, err := e.ExpireLease(ctx, c); err != nil {
			return err
		}
	}
	retry, err := runRounds(ctx, r)
	if err != nil {
		return err
	}
	retried := 0
	for _, c := range retry.Claimed {
		if c.StateBefore == evidence.StateClaimed && c.ClaimID == r.ClaimID() {
			retried++
		}
	}
	return e.measurePublishFailures(ctx, topic, first, retried)
}

// runRounds runs r's rounds until one claims nothing, and adds up what
// they did.
func runRounds(ctx context.Context, r sut.Relay) (sut.RelayResult, error) {
	var sum sut.RelayResult
	for {
		res, err := r.RunOnce(ctx)
		sum.Claimed = append(sum.Claimed, res.Claimed...)
		sum.Published += res.Published
		sum.PublishFailed += res.PublishFailed
		sum.PublishUnknown += res.PublishUnknown
		sum.Marked += res.Marked
		sum.LeaseLost += res.LeaseLost
		if err != nil || len(res.Claimed) == 0 {
			return sum, err
		}
	}
}

// recordBrokerFaults records, after the round, each fault the broker
// inflicted, with how many produce requests it answered so (the broker's
// own count), then clears them.
func (e *Env) recordBrokerFaults(pf *infra.ProduceFaults, faults []brokerFault) error {
	hits := make([]int, len(faults))
	for i, f := range faults {
		hits[i] = pf.Hits(f.eventID)
	}
	pf.Clear()
	for i, f := range faults {
		if hits[i] == 0 {
			e.Result.Failf("the broker was told to fail the publish of %s at %s, and no produce request carried it", f.eventID, f.point)
			continue
		}
		if err := e.Emit(evidence.Event{Kind: evidence.KindFault, Point: string(f.point), EventID: f.eventID,
			Detail: fmt.Sprintf("the broker %s (%d produce request(s) carrying %s)", f.what, hits[i], f.eventID)}); err != nil {
			return err
		}
	}
	return nil
}

// measurePublishFailures drains the topic with a fresh consumer and
// records the scenario's metrics.
func (e *Env) measurePublishFailures(ctx context.Context, topic string, first sut.RelayResult, retried int) error {
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return err
	}
	st, err := e.drain(ctx, c, topic)
	if err != nil {
		return err
	}
	records, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return err
	}
	sent, err := e.Count(ctx, "outbox", "state = 'SENT'")
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	e.Result.Metric("refused", first.PublishFailed)
	e.Result.Metric("unknown", first.PublishUnknown)
	e.Result.Metric("marksAfterFailure", first.Marked)
	e.Result.Metric("retried", retried)
	e.Result.Metric("records", records)
	e.Result.Metric("effects", effects)
	e.Result.Metric("duplicatesAbsorbed", st.InboxRejected)
	e.Result.Metric("sent", sent)
	return nil
}
