package relay_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// produceFaults returns the chain's broker faults (the test needs the
// embedded broker), cleared at the end of the test.
func (b *bundle) produceFaults(t *testing.T) *infra.ProduceFaults {
	t.Helper()
	pf, err := b.Kafka.ProduceFaults()
	if err != nil {
		t.Skipf("produce faults: %v", err)
	}
	t.Cleanup(pf.Clear)
	return pf
}

// A publish the broker refuses, leaves unanswered, or appends without an
// acknowledgement is never marked: the first is a publish event with its
// error, the other two a publish_unknown; the row stays CLAIMED v1, and
// once its lease has run out the same relay takes it over (same claim_id,
// claim_version 2), publishes it again and marks it. Only the lost
// acknowledgement leaves a record behind: the retry is its duplicate.
func TestPublishFailuresAreRetriedNotMarked(t *testing.T) {
	tests := []struct {
		name      string
		inject    func(*infra.ProduceFaults, string)
		wantKind  evidence.Kind
		appended  int64 // records the failed publish left on the topic
		wantCount func(relay.Result) int
	}{
		{"refused", (*infra.ProduceFaults).Refuse, evidence.KindPublish, 0,
			func(r relay.Result) int { return r.PublishFailed }},
		{"timed out", (*infra.ProduceFaults).Swallow, evidence.KindPublishUnknown, 0,
			func(r relay.Result) int { return r.PublishUnknown }},
		{"ack lost", (*infra.ProduceFaults).LoseAck, evidence.KindPublishUnknown, 1,
			func(r relay.Result) int { return r.PublishUnknown }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			pf := b.produceFaults(t)
			insertIntents(t, b.DB, 5)
			r := b.relay(t, "relay-a", func(c *relay.Config) { c.PublishTimeout = 300 * time.Millisecond })

			tt.inject(pf, "e-5")
			res, err := r.RunOnce(ctx)
			if err != nil {
				t.Fatalf("RunOnce: %v", err)
			}
			if tt.wantCount(res) != 1 || res.Published != 0 || res.Marked != 0 || res.LeaseLost != 0 {
				t.Fatalf("RunOnce = %+v; want one %s publish, nothing marked", res, tt.name)
			}
			if pf.Hits("e-5") == 0 {
				t.Fatalf("the broker fault never fired")
			}
			if row := readRow(t, b.DB, "e-5"); row.State != evidence.StateClaimed || row.ClaimVersion != 1 {
				t.Fatalf("row = %+v; want CLAIMED v1", row)
			}
			if got := b.endOffset(t); got != tt.appended {
				t.Fatalf("records on the topic = %d; want %d", got, tt.appended)
			}
			pubs := evidencetest.Of(b.events(t), tt.wantKind)
			if len(pubs) != 1 || pubs[0].Err == "" || pubs[0].Offset != nil || pubs[0].RecordEventID != "e-5" {
				t.Fatalf("%s events = %+v; want one with err, no offset, record_event_id e-5", tt.wantKind, pubs)
			}

			pf.Clear()
			if n, err := relay.ExpireLease(ctx, b.DB, "e-5"); err != nil || n != 1 {
				t.Fatalf("ExpireLease = %d, %v", n, err)
			}
			res, err = r.RunOnce(ctx)
			if err != nil {
				t.Fatalf("retry RunOnce: %v", err)
			}
			c := res.Claimed
			if len(c) != 1 || c[0].ClaimVersion != 2 || c[0].ClaimID != r.ClaimID() || c[0].StateBefore != evidence.StateClaimed ||
				res.Published != 1 || res.Marked != 1 {
				t.Fatalf("retry = %+v; want a takeover v2 by the same claim id, published and marked", res)
			}
			if row := readRow(t, b.DB, "e-5"); row.State != evidence.StateSent || row.ClaimVersion != 2 {
				t.Fatalf("row = %+v; want SENT v2", row)
			}
		})
	}
}

// A publish to a topic the broker does not have never gets an answer that
// settles it within the timeout: unknown, not refused.
func TestPublishUnknownTopicIsUnknown(t *testing.T) {
	b := setup(t)
	insertIntents(t, b.DB, 5)
	r := b.relay(t, "relay-a", func(c *relay.Config) {
		c.Topic = "ofa-missing-" + infratest.RandomID()
		c.PublishTimeout = 500 * time.Millisecond
	})
	res, err := r.RunOnce(t.Context())
	if err != nil || res.PublishUnknown != 1 || res.Marked != 0 {
		t.Fatalf("RunOnce = %+v, %v; want one unknown publish, nothing marked", res, err)
	}
	if got := readRow(t, b.DB, "e-5").State; got != evidence.StateClaimed {
		t.Fatalf("state = %s; want CLAIMED", got)
	}
}

// The planted MarkAfterFailedPublish marks a refused publish SENT: the
// intent is SENT and no record exists.
func TestMarkAfterFailedPublish(t *testing.T) {
	b := setup(t)
	pf := b.produceFaults(t)
	insertIntents(t, b.DB, 5)
	pf.Refuse("e-5")
	r := b.relay(t, "relay-a", func(c *relay.Config) { c.Plant = plant.MarkAfterFailedPublish })
	res, err := r.RunOnce(t.Context())
	if err != nil || res.PublishFailed != 1 || res.Marked != 1 {
		t.Fatalf("RunOnce = %+v, %v; want a refused publish marked (the planted bug)", res, err)
	}
	if row := readRow(t, b.DB, "e-5"); row.State != evidence.StateSent || b.endOffset(t) != 0 {
		t.Fatalf("row = %+v with %d records; want SENT and no record", row, b.endOffset(t))
	}
}

// Every publish event says what the record carried: key = the aggregate id,
// event_id header = the claimed row's. The planted PublishWithoutKey drops
// the key; the planted RetryNewEventID gives a retry (claim_version 2) a
// new event id, in the header and in the payload.
func TestRecordIdentity(t *testing.T) {
	tests := []struct {
		name                 string
		bug                  plant.Bug
		wantKey, wantRetryID string
	}{
		{"correct", plant.None, "5", "e-5"},
		{"planted publish-without-key", plant.PublishWithoutKey, "", "e-5"},
		{"planted retry-new-event-id", plant.RetryNewEventID, "5", "e-5.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 5)
			r := b.relay(t, "relay-a", func(c *relay.Config) { c.Plant = tt.bug })
			cs, err := r.Claim(ctx, 1)
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim = %v, %v", cs, err)
			}
			if _, _, err := r.Publish(ctx, cs[0]); err != nil {
				t.Fatal(err)
			}
			if _, err := relay.ExpireLease(ctx, b.DB, "e-5"); err != nil {
				t.Fatal(err)
			}
			retry, err := r.Claim(ctx, 1)
			if err != nil || len(retry) != 1 || retry[0].ClaimVersion != 2 {
				t.Fatalf("retry claim = %v, %v", retry, err)
			}
			if _, _, err := r.Publish(ctx, retry[0]); err != nil {
				t.Fatal(err)
			}
			pubs := evidencetest.Of(b.events(t), evidence.KindPublish)
			recs := b.records(t, 2)
			for i, want := range []string{"e-5", tt.wantRetryID} {
				if p := pubs[i]; p.RecordKey != tt.wantKey || p.RecordEventID != want || p.EventID != "e-5" {
					t.Errorf("publish %d: record_key %q record_event_id %q event_id %q; want %q %q e-5",
						i+1, p.RecordKey, p.RecordEventID, p.EventID, tt.wantKey, want)
				}
				rec := recs[i]
				var payload struct{ EventID string }
				if err := json.Unmarshal(rec.Value, &payload); err != nil {
					t.Fatal(err)
				}
				if string(rec.Key) != tt.wantKey || header(rec, relay.HeaderEventID) != want || payload.EventID != want {
					t.Errorf("record %d: key %q, event_id header %q, payload eventId %q; want %q, %q, %q",
						i+1, rec.Key, header(rec, relay.HeaderEventID), payload.EventID, tt.wantKey, want, want)
				}
			}
		})
	}
}

// records reads the first n records of the topic.
func (b *bundle) records(t *testing.T, n int) []*kgo.Record {
	t.Helper()
	cons, err := kgo.NewClient(b.Kafka.ClientOpts(
		kgo.ConsumeTopics(b.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
