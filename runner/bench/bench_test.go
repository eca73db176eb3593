package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// smallOptions is a bench of n orders a phase on the test server (its
// own scratch database) and the embedded broker.
func smallOptions(t *testing.T, n int) Options {
	t.Helper()
	infratest.Server(t) // skips (or fails with CI) without MariaDB
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("progress:\n%s", progress.String())
		}
	})
	return Options{Events: n, Relays: 2, Consumers: 2, Batch: 50, Partitions: 2, Clients: 4, History: 300,
		MySQL: cfg, Progress: &progress}
}

// A small bench runs every phase, measures every figure and checks
// itself: 2n events, each SENT with exactly one effect.
func TestRunChecksItself(t *testing.T) {
	const n = 150
	res, err := Run(t.Context(), smallOptions(t, n))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := res.Check
	if !c.OK || c.Events != 2*n || c.Effects != 2*n || c.Sent != 2*n || c.Duplicates != 0 || c.Missing != 0 || len(c.Problems) > 0 {
		t.Fatalf("check = %+v; want %d events, each with one effect", c, 2*n)
	}
	for name, v := range map[string]float64{
		"placement": res.PlacementEventsPerS, "relay": res.RelayEventsPerS, "consumers": res.ConsumerEventsPerS,
		"end to end": res.EndToEndEventsPerS, "p50": res.P50CommitToEffectMS, "p99": res.P99CommitToEffectMS,
	} {
		if v <= 0 {
			t.Errorf("%s = %v; want a positive figure", name, v)
		}
	}
	if res.P99CommitToEffectMS < res.P50CommitToEffectMS || res.MaxCommitToEffectMS < res.P99CommitToEffectMS {
		t.Errorf("latencies p50 %v, p99 %v, max %v are not in order", res.P50CommitToEffectMS, res.P99CommitToEffectMS, res.MaxCommitToEffectMS)
	}
	var out bytes.Buffer
	res.WriteText(&out)
	if !strings.Contains(out.String(), "check: OK: every event has exactly one effect") {
		t.Errorf("text output does not say the check passed:\n%s", out.String())
	}
}

// A planted duplicate fails the check: after the run, one record the
// consumers applied is handed again to a consumer planted with
// no-inbox-dedupe, which writes a second effect for its event.
func TestRunCheckCatchesDuplicate(t *testing.T) {
	opts := smallOptions(t, 40)
	opts.beforeCheck = func(p *pipeline) error {
		recs := p.consumers[0].Handled()
		if len(recs) == 0 {
			recs = p.consumers[1].Handled()
		}
		if len(recs) == 0 {
			return errors.New("no record handled")
		}
		ctx := context.Background()
		c, err := consumer.New(ctx, consumer.Config{DB: p.db, ClientOpts: p.kafka.ClientOpts(), Topic: p.topic,
			Group: "planted-" + p.runID, Member: "planted", Plant: plant.NoInboxDedupe})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Handle(ctx, recs[0])
		return err
	}
	res, err := Run(t.Context(), opts)
	if !errors.Is(err, ErrCheckFailed) {
		t.Fatalf("Run = %v; want ErrCheckFailed", err)
	}
	if res == nil || res.Check.OK || res.Check.Duplicates != 1 || res.Check.Effects != 2*40+1 {
		t.Fatalf("check = %+v; want one duplicated event, 81 effects", res.Check)
	}
	if !strings.Contains(strings.Join(res.Check.Problems, "; "), "1 events with more than one effect") {
		t.Errorf("problems %v do not name the duplicate", res.Check.Problems)
	}
}

// A relay-only bench drains intents written by SQL and checks that every
// one is SENT and on the topic; it has no effects to check.
func TestRunRelayOnly(t *testing.T) {
	opts := smallOptions(t, 300)
	opts.RelayOnly = true
	res, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := res.Check
	if !c.OK || c.Events != 300 || c.Sent != 300 || c.Records < 300 || c.Effects != 0 || res.RelayEventsPerS <= 0 {
		t.Fatalf("relay-only result = %+v; want 300 intents SENT and on the topic", res)
	}
	if res.PlacementEventsPerS != 0 || res.EndToEndEventsPerS != 0 {
		t.Errorf("relay-only run reports placement %v, end to end %v; want 0", res.PlacementEventsPerS, res.EndToEndEventsPerS)
	}
}

// Options outside their bounds are refused before anything runs.
func TestValidate(t *testing.T) {
	for _, o := range []Options{{Events: -1}, {Relays: 65}, {Batch: 10001}, {Partitions: -2}, {History: -1}, {Clients: 1000}, {Linger: -1}} {
		if err := o.Validate(); !errors.Is(err, ErrBadOptions) {
			t.Errorf("Validate(%+v) = %v; want ErrBadOptions", o, err)
		}
	}
	var o Options
	if err := o.Validate(); err != nil || o.Events != DefaultEvents || o.Batch != DefaultBatch {
		t.Errorf("Validate(zero) = %v, %+v; want the defaults", err, o)
	}
}

// TestWriteTextNamesTheSpan: the consumers' rate is over the span from the
// first effect, and the line says so beside the phase's whole length (a
// small run spends most of the phase joining the group).
func TestWriteTextNamesTheSpan(t *testing.T) {
	r := &Result{Events: 2000, ConsumerEventsPerS: 4000}
	r.Phases.Consumers = 3.5
	var out bytes.Buffer
	r.WriteText(&out)
	if !strings.Contains(out.String(), "4000 events/s (2000 events in 0.50 s from the first effect; the phase, with the group's join, 3.50 s)") {
		t.Errorf("the consumers' line:\n%s", out.String())
	}
}
