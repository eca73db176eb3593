package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
)

func inject(site, mode string) model.CallEvent {
	return model.CallEvent{Actor: "scenario", Inject: true, Site: site, Mode: mode}
}

func record(actor, site, outcome string) model.CallEvent {
	return model.CallEvent{Actor: actor, Site: site, Outcome: outcome}
}

// TestCallRecords: the sweep's condition holds each injection to its
// actor's record. Each broken history names the run; each legal one
// passes.
func TestCallRecords(t *testing.T) {
	const a, u = model.CallAnswered, model.CallUnknown
	cases := []struct {
		name  string
		calls []model.CallEvent
		want  []string // substrings of the failed conditions, in order; none: legal
	}{
		{"publish refused and unknown, as recorded", []model.CallEvent{
			inject("relay.publish", "before"), record("relay-a", model.SitePublish, a),
			inject("relay.publish", "after"), record("relay-a", model.SitePublish, u),
		}, nil},
		{"publish before without its record", []model.CallEvent{
			inject("relay.publish", "before"),
		}, []string{"relay.publish failed before and its actor left no record"}},
		{"publish after read as answered", []model.CallEvent{
			inject("relay.publish", "after"), record("relay-a", model.SitePublish, a),
		}, []string{"relay.publish failed after and relay-a recorded it answered, not unknown"}},
		{"a killed produce connection the client retried: no record needed", []model.CallEvent{
			inject("relay.publish", "kill"),
		}, nil},
		{"a killed produce connection read as answered", []model.CallEvent{
			inject("relay.publish", "kill"), record("relay-a", model.SitePublish, a),
		}, []string{"recorded it answered, not unknown"}},
		{"an offset commit that failed before, swallowed", []model.CallEvent{
			inject("consumer.offset.commit", "before"),
			inject("consumer.offset.commit", "after"), record("consumer-1", "consumer.offset.commit", u),
		}, []string{"consumer.offset.commit failed before and its actor left no record"}},
		{"the record of the next run does not count for this one", []model.CallEvent{
			inject("consumer.fetch", "before"), inject("consumer.fetch", "after"), record("consumer-1", "consumer.fetch", u),
		}, []string{"consumer.fetch failed before and its actor left no record"}},
		{"a record of another site does not count", []model.CallEvent{
			inject("consumer.fetch", "after"), record("relay-a", model.SitePublish, u),
		}, []string{"consumer.fetch failed after and its actor left no record"}},
		{"the first record of the site decides", []model.CallEvent{
			inject("consumer.fetch", "before"), record("consumer-1", "consumer.fetch", u), record("consumer-1", "consumer.fetch", a),
		}, []string{"consumer.fetch failed before and consumer-1 recorded it unknown, not answered"}},
		{"effect statements roll back whatever the mode", []model.CallEvent{
			inject("consumer.effect.inbox", "before"), record("consumer-1", model.SiteEffect, a),
			inject("consumer.effect.inbox", "after"), record("consumer-1", model.SiteEffect, a),
			inject("consumer.effect.notification", "kill"), record("consumer-1", model.SiteEffect, a),
		}, nil},
		{"an inbox error taken for a duplicate leaves no record", []model.CallEvent{
			inject("consumer.effect.inbox", "before"),
		}, []string{"consumer.effect.inbox failed before and its actor left no record"}},
		{"a killed COMMIT read as answered", []model.CallEvent{
			inject("consumer.effect.commit", "kill"), record("consumer-1", model.SiteEffect, a),
		}, []string{"consumer.effect.commit failed kill and consumer-1 recorded it answered, not unknown"}},
		{"a COMMIT whose answer was lost read as answered", []model.CallEvent{
			inject("consumer.effect.commit", "after"), record("consumer-1", model.SiteEffect, a),
		}, []string{"consumer.effect.commit failed after and consumer-1 recorded it answered, not unknown"}},
		{"a COMMIT answered with an error read as unknown", []model.CallEvent{
			inject("consumer.effect.commit", "before"), record("consumer-1", model.SiteEffect, u),
		}, []string{"consumer.effect.commit failed before and consumer-1 recorded it unknown, not answered"}},
		{"the batch COMMIT: before falls back without a record, after is unknown", []model.CallEvent{
			inject("consumer.batch.commit", "before"),
			inject("consumer.batch.commit", "after"), record("consumer-1", model.SiteEffect, u),
		}, nil},
		{"the batch COMMIT after without its record", []model.CallEvent{
			inject("consumer.batch.commit", "after"),
		}, []string{"consumer.batch.commit failed after and its actor left no record"}},
		{"a relay statement needs no record", []model.CallEvent{
			inject("relay.claim.update", "before"), inject("relay.mark.commit", "after"),
		}, nil},
		{"a claim the witness settled: its relay took a lost answer for a rollback", []model.CallEvent{
			inject("relay.claim.commit", "after"), {Actor: model.WitnessActor, Site: model.SiteUnlogged, Outcome: "claim of e-3"},
		}, []string{"the claim of e-3 committed and no relay logged it"}},
	}
	for _, c := range cases {
		got := callRecords(c.calls)
		if len(got) != len(c.want) {
			t.Errorf("%s: conditions %q; want %d like %q", c.name, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: condition %q; want it to say %q", c.name, got[i], w)
			}
		}
	}
}

// TestSweptCalls: the sites, runs and modes metrics count injections
// only, each site once.
func TestSweptCalls(t *testing.T) {
	calls := []model.CallEvent{
		inject("relay.publish", "before"), record("relay-a", model.SitePublish, model.CallAnswered),
		inject("relay.publish", "after"), inject("consumer.fetch", "after"), inject("consumer.fetch", "kill"),
		record("consumer-1", "consumer.fetch", model.CallUnknown),
	}
	sites, runs, modes := sweptCalls(calls)
	if sites != 2 || runs != 4 || modes != "before:1/after:2/kill:1" {
		t.Fatalf("sweptCalls = %d, %d, %q; want 2, 4, before:1/after:2/kill:1", sites, runs, modes)
	}
	if s, r, m := sweptCalls(nil); s != 0 || r != 0 || m != "before:0/after:0/kill:0" {
		t.Fatalf("sweptCalls(nil) = %d, %d, %q", s, r, m)
	}
}

// TestRecordSite: the effect transaction's records name the
// transaction, whichever of its calls failed.
func TestRecordSite(t *testing.T) {
	for site, want := range map[string]string{
		"consumer.effect.commit": model.SiteEffect, "consumer.batch.inbox": model.SiteEffect,
		"consumer.offset.commit": "consumer.offset.commit", "relay.publish": model.SitePublish,
	} {
		if got := recordSite(site); got != want {
			t.Errorf("recordSite(%s) = %s; want %s", site, got, want)
		}
	}
	if !slices.Contains(callModes, "kill") || len(callModes) != 3 {
		t.Fatalf("callModes = %v", callModes)
	}
}
