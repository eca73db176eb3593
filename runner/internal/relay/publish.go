package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// Record header names carried by every published record.
const (
	HeaderEventID      = "event_id"
	HeaderClaimVersion = "claim_version"
	HeaderClaimID      = "claim_id"
)

// The outcomes of a publish that did not succeed. Publish wraps one of
// them; neither is marked SENT, and the row stays CLAIMED until its lease
// runs out and a relay (this one or another) takes it over.
var (
	// ErrRefused: the broker answered that it did not append the record
	// (a non-retriable error code).
	ErrRefused = errors.New("publish refused by the broker")
	// ErrUnknown: the relay cannot know whether the record was appended:
	// no answer within PublishTimeout, a lost connection, or an answer a
	// broker also gives after appending (REQUEST_TIMED_OUT,
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrUnknown = errors.New("publish outcome unknown")
)

// ProducerOpts are the client options a relay's producer needs on top of
// the cluster's (infra.Kafka.ClientOpts), for a relay whose publish timeout
// is publishTimeout (0: DefaultPublishTimeout):
//
//   - no linger: the relay waits for each record;
//   - the cancellation of an in-flight idempotent record at the publish
//     timeout. Without it kgo waits for the outcome of a request it has
//     sent however long that takes (it cannot tell "never received" from
//     "written, answer lost"), and the timeout bounds nothing once the
//     request is on the wire. The price is that a record given up on may
//     be in the log: the unknown outcome, which the relay records as such
//     and the inbox absorbs;
//   - a retry backoff that fits several retries into the timeout: 25 ms,
//     doubling, at most a fifth of it. kgo's default starts at 250 ms, so
//     that one failed attempt (such as the first after a request the
//     broker left unanswered) took half of a 500 ms publish timeout.
func ProducerOpts(publishTimeout time.Duration) []kgo.Opt {
	if publishTimeout <= 0 {
		publishTimeout = DefaultPublishTimeout
	}
	maxBackoff := publishTimeout / 5
	return []kgo.Opt{
		kgo.ProducerLinger(0),
		kgo.AllowIdempotentProduceCancellation(),
		kgo.RetryBackoffFn(func(fails int) time.Duration {
			d := 25 * time.Millisecond << min(max(fails-1, 0), 16)
			return min(d, maxBackoff)
		}),
	}
}

// Publish sends one claimed intent outside any transaction, key = the
// aggregate id in decimal, with the event id and the token in the headers,
// and waits at most Config.PublishTimeout for the acknowledgement. It
// emits a publish event with partition and offset, a publish event with
// the error when the broker refused the record (the error wraps
// ErrRefused), or a publish_unknown event when the outcome cannot be known
// (the error wraps ErrUnknown). Each event says the key and event id the
// record carried.
func (r *Relay) Publish(ctx context.Context, c Claimed) (partition int32, offset int64, err error) {
	rec := r.record(c)
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	var got *kgo.Record
	perr := r.broker("relay.publish-one", func() (err error) { got, err = r.cfg.Client.ProduceSync(pctx, rec).First(); return err })
	return r.published(c, rec, got, perr)
}

// Published is the outcome of one record of PublishBatch.
type Published struct {
	Partition int32
	Offset    int64
	// Err is nil when the broker acknowledged the record; else it wraps
	// ErrRefused or ErrUnknown, or is the error of recording the event.
	Err error
}

// PublishBatch publishes every intent of cs at once, without waiting for
// one before the next (the client batches them and keeps its requests in
// flight), then waits for every acknowledgement, all of them within one
// Config.PublishTimeout. It emits one event per intent, as Publish does,
// in the order of cs, and returns the outcomes in that order.
func (r *Relay) PublishBatch(ctx context.Context, cs []Claimed) []Published {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	recs := make([]*kgo.Record, len(cs))
	got := make([]*kgo.Record, len(cs))
	errs := make([]error, len(cs))
	lost := make([]error, len(cs)) // the call hook's error after the record went out
	var wg sync.WaitGroup
	wg.Add(len(cs))
	for i, c := range cs {
		recs[i] = r.record(c)
		sent := false
		err := r.broker("relay.publish", func() error {
			sent = true
			r.cfg.Client.Produce(pctx, recs[i], func(rec *kgo.Record, err error) {
				got[i], errs[i] = rec, err
				wg.Done()
			})
			return nil
		})
		switch {
		case err != nil && sent:
			lost[i] = err // the record went out; its answer is replaced by err once it came
		case err != nil:
			errs[i] = err
			wg.Done()
		}
	}
	wg.Wait()
	out := make([]Published, len(cs))
	for i, c := range cs {
		if lost[i] != nil {
			errs[i] = lost[i]
		}
		out[i].Partition, out[i].Offset, out[i].Err = r.published(c, recs[i], got[i], errs[i])
	}
	return out
}

// published classifies the outcome perr of publishing rec for c, emits its
// event, and returns it as Publish does.
func (r *Relay) published(c Claimed, rec, got *kgo.Record, perr error) (partition int32, offset int64, err error) {
	ev := evidence.Event{
		Actor:         r.cfg.Actor,
		Kind:          evidence.KindPublish,
		EventID:       c.EventID,
		OrderID:       evidence.Ptr(c.OrderID),
		ClaimVersion:  evidence.Ptr(c.ClaimVersion),
		ClaimID:       c.ClaimID,
		Topic:         r.cfg.Topic,
		RecordKey:     string(rec.Key),
		RecordEventID: HeaderValue(rec, HeaderEventID),
	}
	switch {
	case perr == nil:
		ev.Partition = evidence.Ptr(got.Partition)
		ev.Offset = evidence.Ptr(got.Offset)
	case refused(perr):
		ev.Err = perr.Error()
		perr = fmt.Errorf("%w: %w", ErrRefused, perr)
	default:
		ev.Kind = evidence.KindPublishUnknown
		ev.Err = perr.Error()
		perr = fmt.Errorf("%w: %w", ErrUnknown, perr)
	}
	if err := r.cfg.Log.Emit(ev); err != nil {
		if perr != nil {
			return -1, -1, fmt.Errorf("publish %s: %w (and recording it failed: %v)", c.EventID, perr, err)
		}
		return got.Partition, got.Offset, fmt.Errorf("publish %s: record publish: %w", c.EventID, err)
	}
	if perr != nil {
		return -1, -1, fmt.Errorf("publish %s: %w", c.EventID, perr)
	}
	return got.Partition, got.Offset, nil
}

// refused tells whether err is the broker's answer that it did not append
// the record: a Kafka error code that kgo does not retry (it fails the
// record at that answer) and that a broker never gives after appending.
// Everything else (a context deadline, a lost connection, retries or the
// delivery timeout exhausted, REQUEST_TIMED_OUT) leaves the outcome
// unknown.
func refused(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke.Retriable {
		return false
	}
	return ke != kerr.RequestTimedOut && ke != kerr.NotEnoughReplicasAfterAppend
}

// record builds the record of c.
func (r *Relay) record(c Claimed) *kgo.Record {
	eventID, payload := c.EventID, c.Payload
	if r.cfg.Plant == plant.RetryNewEventID && c.ClaimVersion > 1 {
		eventID = c.EventID + "." + strconv.FormatInt(c.ClaimVersion, 10)
		payload = withEventID(payload, eventID)
	}
	rec := &kgo.Record{
		Topic: r.cfg.Topic,
		Key:   []byte(strconv.FormatInt(c.OrderID, 10)),
		Value: payload,
		Headers: []kgo.RecordHeader{
			{Key: HeaderEventID, Value: []byte(eventID)},
			{Key: HeaderClaimVersion, Value: []byte(strconv.FormatInt(c.ClaimVersion, 10))},
			{Key: HeaderClaimID, Value: []byte(c.ClaimID)},
		},
	}
	if r.cfg.Plant == plant.PublishWithoutKey {
		rec.Key = nil
	}
	return rec
}

// withEventID returns payload with its eventId field set to id (for the
// planted RetryNewEventID); a payload that is not a JSON object is
// returned as it is.
func withEventID(payload []byte, id string) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(payload, &fields) != nil || fields == nil {
		return payload
	}
	fields["eventId"], _ = json.Marshal(id)
	out, err := json.Marshal(fields)
	if err != nil {
		return payload
	}
	return out
}

// HeaderValue returns the value of a record's header key ("" when it has
// none): how the relay reads back the event id a record carries.
func HeaderValue(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
