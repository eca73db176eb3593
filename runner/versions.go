package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// versionsRuns are the scenarios this file runs, by id (runs). The
// versions of one order under a publish failure (spec/publish.go).
var versionsRuns = map[string]runFunc{
	"versionsAfterRefusal": versionsAfterRefusal,
}

// versionsPublishTimeout is the relay's publish timeout in
// versionsAfterRefusal: short, the refusal answers at once.
const versionsPublishTimeout = 300 * time.Millisecond

// versionsAfterRefusal runs the scenario versionsAfterRefusal of
// spec/publish.go, which says what it does and what its metrics mean.
func versionsAfterRefusal(ctx context.Context, e *Env) error {
	topic, err := e.topicN(ctx, "", 1)
	if err != nil {
		return err
	}
	placed, err := e.placeN(ctx, "vers", 1)
	if err != nil {
		return err
	}
	o := placed[0]
	for _, step := range lifecycleSteps {
		if err := e.advanceOrder(ctx, o.OrderID, step.from, step.to, step.version); err != nil {
			return err
		}
	}
	pf, err := e.Kafka.ProduceFaults()
	if err != nil {
		return err
	}
	e.Defer(pf.Clear)
	faults := []brokerFault{{spec.PublishRefused, pf.Refuse, o.EventID, "answered INVALID_RECORD and appended nothing"}}
	pf.Refuse(o.EventID)
	r, err := e.RelayWith("relay-a", topic, nil, func(c *sut.RelayConfig) {
		c.PublishTimeout, c.Batch = versionsPublishTimeout, 1
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
	// The refused intent's lease runs out (aged by SQL, as the clock
	// would); the relay takes it over and goes on with the versions after
	// it.
	for _, c := range first.Claimed {
		if c.EventID != o.EventID {
			continue
		}
		if _, err := e.ExpireLease(ctx, c); err != nil {
			return err
		}
	}
	if _, err := runRounds(ctx, r); err != nil {
		return err
	}
	return e.measureVersions(ctx, topic, first)
}

// measureVersions drains the topic with a fresh consumer and records the
// scenario's metrics: the broker's log in offset order gives the records
// ahead of their version, the notification table the effects out of it.
func (e *Env) measureVersions(ctx context.Context, topic string, first sut.RelayResult) error {
	c, err := e.Consumer(ctx, "consumer-1", topic, "notify-"+e.RunID, nil)
	if err != nil {
		return err
	}
	if _, err := e.drain(ctx, c, topic); err != nil {
		return err
	}
	records, err := e.Kafka.EndOffset(ctx, topic)
	if err != nil {
		return err
	}
	recs, err := e.Records(ctx, topic, int(records))
	if err != nil {
		return err
	}
	version := map[string]int64{}
	rows, err := e.DB.QueryContext(ctx, `SELECT event_id, aggregate_version FROM outbox`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return err
		}
		version[id] = v
	}
	if err := rows.Close(); err != nil {
		return err
	}
	ahead := 0
	top := map[string]int64{} // record key -> highest version seen
	seen := map[string]bool{}
	for _, rec := range recs {
		id := relay.HeaderValue(rec, relay.HeaderEventID)
		if seen[id] {
			continue
		}
		seen[id] = true
		v, ok := version[id]
		if !ok {
			return fmt.Errorf("record %s/%d@%d carries event id %q, which no intent has", rec.Topic, rec.Partition, rec.Offset, id)
		}
		if v < top[string(rec.Key)] {
			ahead++
		}
		top[string(rec.Key)] = max(top[string(rec.Key)], v)
	}
	outOfOrder, err := e.effectsOutOfVersion(ctx)
	if err != nil {
		return err
	}
	effects, err := e.Count(ctx, "notification", "")
	if err != nil {
		return err
	}
	sent, err := e.Count(ctx, "outbox", "state = 'SENT'")
	if err != nil {
		return err
	}
	e.Result.Metric("refused", first.PublishFailed)
	e.Result.Metric("aheadOfVersion", ahead)
	e.Result.Metric("records", records)
	e.Result.Metric("outOfOrder", outOfOrder)
	e.Result.Metric("effects", effects)
	e.Result.Metric("sent", sent)
	return nil
}
