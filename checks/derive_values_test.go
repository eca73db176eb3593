package checks

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The derivations on small replays: each case pins a count, a bound or a
// condition of a derivation that the fixtures' scenarios left free (found
// with gremlins on checks: the U80 fixture has none of the U79 and EXT
// scenarios, and its runs take only the passing path).

func ev(kind evidence.Kind, eventID string, set ...func(e *evidence.Event)) evidence.Event {
	e := evidence.Event{Kind: kind, EventID: eventID, Actor: "relay-a"}
	for _, f := range set {
		f(&e)
	}
	return e
}

func seedStock(n int64) evidence.Event {
	return ev(evidence.KindSeedStock, "", func(e *evidence.Event) { e.SKU, e.Stock = "SKU", &n })
}

// committed is order id's transaction leaving stock; writes default to
// all five.
func committed(id, stock int64, writes ...string) evidence.Event {
	if writes == nil {
		writes = []string{evidence.WriteStock, evidence.WriteOrders, evidence.WriteOrderLines, evidence.WriteIdempotency, evidence.WriteOutbox}
	}
	return ev(evidence.KindOrderCommitted, evidence.EventIDFor(id), func(e *evidence.Event) {
		e.OrderID, e.SKU, e.Quantity, e.Stock, e.Status, e.Writes = &id, "SKU", evidence.Ptr[int64](1), &stock, 201, writes
	})
}

func answered(status int, orderID *int64) evidence.Event {
	return ev(evidence.KindOrderReplayed, "", func(e *evidence.Event) { e.Status, e.OrderID = status, orderID })
}

func claimed(id string, v int64, claimID string) evidence.Event {
	return ev(evidence.KindClaim, id, func(e *evidence.Event) { e.ClaimVersion, e.ClaimID, e.StateBefore = &v, claimID, "PENDING" })
}

func marked(id string, v int64, claimID string, rows int64) evidence.Event {
	return ev(evidence.KindMark, id, func(e *evidence.Event) { e.ClaimVersion, e.ClaimID, e.Rows = &v, claimID, &rows })
}

func seeded(id string, agg int64, state string, v int64, sha string) evidence.Event {
	return ev(evidence.KindSeedOutbox, id, func(e *evidence.Event) {
		e.OrderID, e.State, e.ClaimVersion, e.PayloadSHA256 = &agg, state, &v, sha
	})
}

func observed(id, state string, v int64, orderID *int64, sha string) evidence.Event {
	return ev(evidence.KindObserve, id, func(e *evidence.Event) {
		e.State, e.ClaimVersion, e.OrderID, e.PayloadSHA256 = state, &v, orderID, sha
	})
}

// derivedMetrics replays events and returns scenario id's metrics as
// "name=value ..." (value ? when unknown) and what its injection check
// says ("" when it has none or the events show the injection).
func derivedMetrics(t *testing.T, id string, events ...evidence.Event) (string, string) {
	t.Helper()
	d, ok := derivations[id]
	if !ok {
		t.Fatalf("no derivation %s", id)
	}
	m := model.New(nil, nil)
	for i := range events {
		m.Step(&events[i], Source{Seq: int64(i + 1)})
	}
	m.Finish(false)
	var parts []string
	for _, v := range d.metrics(facts{m: m}) {
		value := v.value
		if !v.ok {
			value = "?"
		}
		parts = append(parts, v.name+"="+value)
	}
	s, _ := spec.Lookup(id)
	why := d.injection(s)(facts{m: m})
	return strings.Join(parts, " "), why
}

func TestDerivedMetrics(t *testing.T) {
	one, two := evidence.Ptr[int64](1), evidence.Ptr[int64](2)
	fault := ev(evidence.KindFault, "", func(e *evidence.Event) { e.Point = string(spec.AfterPublishBeforeMark) })
	reject := ev(evidence.KindInboxReject, "e-1")
	for _, c := range []struct {
		name, scenario string
		events         []evidence.Event
		want           string
	}{
		{"placement", "placement", []evidence.Event{seedStock(10), committed(1, 9)},
			"status=201 orders=1 stock=9 idemRows=1 outbox=1"},
		{"every write of a token request", "tokenMissing", []evidence.Event{seedStock(10), committed(1, 9)}, "status=201 writes=5"},
		{"stock moved up", "tokenMissing", []evidence.Event{seedStock(10), seedStock(12), answered(401, nil)}, "status=401 writes=2"},
		{"replay of the same order", "idempotentReplay", []evidence.Event{answered(201, one), answered(201, one)},
			"status=201 replayStatus=201 sameOrder=true orders=0 idemRows=0"},
		{"replay of another order", "idempotentReplay", []evidence.Event{answered(201, one), answered(201, two)},
			"status=201 replayStatus=201 sameOrder=false orders=0 idemRows=0"},
		{"replay without an order", "idempotentReplay", []evidence.Event{answered(201, one), answered(201, nil)},
			"status=201 replayStatus=201 sameOrder=false orders=0 idemRows=0"},
		{"first answer without an order", "idempotentReplay", []evidence.Event{answered(201, nil), answered(201, one)},
			"status=201 replayStatus=201 sameOrder=false orders=0 idemRows=0"},
		{"one answer", "idempotentReplay", []evidence.Event{answered(201, one)},
			"status=201 replayStatus=? sameOrder=? orders=0 idemRows=0"},
		{"orders without lines or records", "keyReuseOtherBody", []evidence.Event{committed(1, 9, evidence.WriteOrders), answered(422, nil)},
			"status=422 orders=1 idemRows=0"},
		{"answers counted", "concurrentDuplicates", []evidence.Event{answered(201, one), answered(201, one), answered(200, two), answered(409, nil)},
			"requests=4 orders=0 distinctOrderIds=2 created=0"},
		{"accepted and rejected", "noOversell", []evidence.Event{seedStock(2), answered(201, one), answered(409, nil), answered(409, nil)},
			"requests=3 accepted=1 rejected=2 stock=2"},
		{"last mark of claim 1 hit", "sendBeforeMarkCrash",
			[]evidence.Event{committed(1, 9), claimed("e-1", 1, "a"), marked("e-1", 1, "a", 0), marked("e-1", 1, "x", 1)},
			"deliveries=0 businessEffects=0 oldTokenCas=1 state=SENT"},
		{"last mark of claim 1 missed", "sendBeforeMarkCrash",
			[]evidence.Event{committed(1, 9), claimed("e-1", 1, "a"), marked("e-1", 1, "x", 1), marked("e-1", 1, "a", 0)},
			"deliveries=0 businessEffects=0 oldTokenCas=0 state=SENT"},
		{"no mark of claim 1", "sendBeforeMarkCrash", []evidence.Event{committed(1, 9), claimed("e-1", 1, "a"), marked("e-1", 2, "a", 1)},
			"deliveries=0 businessEffects=0 oldTokenCas=? state=SENT"},
		{"takeover", "relayKill9", []evidence.Event{committed(1, 9), fault, claimed("e-1", 1, "a"), claimed("e-1", 2, "b")},
			"killed=true takeoverVersion=2 deliveries=0 businessEffects=0 state=CLAIMED"},
		{"takeover after a reclaim", "relayKill9",
			[]evidence.Event{committed(1, 9), claimed("e-1", 1, "a"), claimed("e-1", 2, "a"), claimed("e-1", 3, "b")},
			"killed=false takeoverVersion=3 deliveries=0 businessEffects=0 state=CLAIMED"},
		{"no takeover", "relayKill9", []evidence.Event{committed(1, 9), marked("e-1", 1, "b", 0), claimed("e-1", 1, "a")},
			"killed=false takeoverVersion=0 deliveries=0 businessEffects=0 state=CLAIMED"},
		{"claims and sent", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8, evidence.WriteOutbox), claimed("e-1", 1, "a"), marked("e-1", 1, "a", 1),
				claimed("e-2", 1, "a"), marked("e-2", 1, "a", 1), seeded("e-9", 9, "SENT", 1, "")},
			"claims=2 doubleClaims=0 overlap=false sent=3 effects=0"},
		{"linked orders", "businessInvariants",
			[]evidence.Event{committed(1, 9), committed(2, 8, evidence.WriteOutbox), marked("e-1", 0, "", 1), marked("e-2", 0, "", 1),
				seeded("e-9", 9, "SENT", 1, "")},
			"sent=3 effects=0 inbox=0 linkedOrders=1 orphanSent=? sentWithoutEffect=? effectWithoutInbox=? duplicatedEffects=? orphanEffects=?"},
		{"no reject", "offsetReplay", []evidence.Event{committed(1, 9)}, "replay=0 inboxRejected=false effects=0"},
		{"a reject", "offsetReplay", []evidence.Event{committed(1, 9), reject}, "replay=0 inboxRejected=true effects=0"},
		{"states observed", "normalChain",
			[]evidence.Event{committed(1, 9), observed("e-1", "PENDING", 0, nil, ""), observed("e-1", "SENT", 0, nil, ""), reject},
			"outboxTx=PENDING→SENT deliveries=0 effects=0 duplicateBlocked=unique"},
		{"nothing observed", "normalChain", []evidence.Event{committed(1, 9)},
			"outboxTx=? deliveries=0 effects=0 duplicateBlocked=none"},
		{"orders and intents", "orderCrashWindow", []evidence.Event{committed(1, 9), committed(2, 8, evidence.WriteOrders)},
			"orders=2 outbox=1 ordersWithoutIntent=?"},
		{"decoy untouched", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 3, evidence.Ptr[int64](-1), "aa")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=true"},
		{"decoy observed without order or payload", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 3, nil, "")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=true"},
		{"decoy observed with another order", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 3, one, "aa")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"decoy observed with another payload", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 3, nil, "bb")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"decoy observed in another state", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "PENDING", 3, nil, "")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"decoy observed with another version", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 2, nil, "")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"decoy not observed", "txBoundaryRollback", []evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa")},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"decoy touched", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-9", -1, "SENT", 3, "aa"), observed("e-9", "SENT", 3, nil, ""), marked("e-9", 3, "", 0)},
			"stock=10 idemRows=0 outboxRollback=true seedUntouched=false"},
		{"no decoy", "txBoundaryRollback",
			[]evidence.Event{seedStock(10), seeded("e-5", 5, "SENT", 3, "aa"), observed("e-5", "SENT", 3, nil, "aa"), committed(1, 9)},
			"stock=9 idemRows=1 outboxRollback=false seedUntouched=false"},
		{"no seed", "txBoundaryRollback", nil, "stock=? idemRows=0 outboxRollback=true seedUntouched=false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := derivedMetrics(t, c.scenario, c.events...); got != c.want {
				t.Errorf("%s: %s; want %s", c.scenario, got, c.want)
			}
		})
	}
}

func brokerFault(p spec.Point) evidence.Event {
	return ev(evidence.KindFault, "", func(e *evidence.Event) { e.Point = string(p) })
}

// TestFaultInjectionShown: a boundary scenario's PASS needs the events of
// its fault injection.
func TestFaultInjectionShown(t *testing.T) {
	rolledBack := func(id string) evidence.Event { return ev(evidence.KindOrderRolledBack, id) }
	decoy := seeded("e-9", -1, "SENT", 3, "aa")
	for _, c := range []struct {
		name, scenario string
		events         []evidence.Event
		shown          bool
	}{
		{"rollback on the decoy", "txBoundaryRollback", []evidence.Event{decoy, rolledBack("e-9")}, true},
		{"rollback on an intent that is no decoy", "txBoundaryRollback", []evidence.Event{committed(1, 9), rolledBack("e-1")}, false},
		{"rollback on no intent", "txBoundaryRollback", []evidence.Event{decoy, rolledBack("e-404")}, false},
		{"fault at its point", "sendBeforeMarkCrash",
			[]evidence.Event{ev(evidence.KindFault, "", func(e *evidence.Event) { e.Point = string(spec.AfterPublishBeforeMark) })}, true},
		{"fault at another point", "sendBeforeMarkCrash",
			[]evidence.Event{ev(evidence.KindFault, "", func(e *evidence.Event) { e.Point = string(spec.AfterEffectBeforeOffsetCommit) })}, false},
		{"every broker fault", "publishFailures", []evidence.Event{brokerFault(spec.PublishRefused), brokerFault(spec.PublishTimeout),
			brokerFault(spec.PublishAckLost)}, true},
		{"two of the broker faults", "publishFailures", []evidence.Event{brokerFault(spec.PublishRefused), brokerFault(spec.PublishAckLost)}, false},
		// The spec's faults decide, not a list in the derivation: the kill
		// must show too, and a point only a planted bug opens, or a
		// nemesis's, need not.
		{"a kill without its fault event", "relayKill9", []evidence.Event{committed(1, 9)}, false},
		{"a window only a planted bug opens", "orderCrashWindow", []evidence.Event{committed(1, 9)}, true},
		{"a schedule that drew no fault", "chaos", []evidence.Event{committed(1, 9)}, true},
	} {
		if _, why := derivedMetrics(t, c.scenario, c.events...); (why == "") != c.shown {
			t.Errorf("%s: injection check says %q; want shown=%v", c.name, why, c.shown)
		}
	}
}

// claimedAt is claimed with a time and a lease until.
func claimedAt(id string, v int64, claimID string, at, until time.Time, before string) evidence.Event {
	e := claimed(id, v, claimID)
	e.Time, e.LeaseUntil, e.StateBefore, e.Actor = at, &until, before, "relay-"+claimID
	return e
}

func published(id string, v int64, claimID string, offset *int64, kind evidence.Kind) evidence.Event {
	return ev(kind, id, func(e *evidence.Event) {
		e.ClaimVersion, e.ClaimID, e.Topic, e.Offset = &v, claimID, "t", offset
		if offset != nil {
			e.Partition = evidence.Ptr[int32](0)
		} else {
			e.Err = "failed"
		}
	})
}

func received(id string, offset int64) evidence.Event {
	return ev(evidence.KindReceive, id, func(e *evidence.Event) {
		e.Topic, e.Partition, e.Offset, e.Consumer = "t", evidence.Ptr[int32](0), &offset, "g"
	})
}

// The derivations of the relay scenarios (publish failures, leases,
// concurrent relays) on small replays.
func TestDerivedRelayMetrics(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	live := func(id string, v int64, claimID string, at int, before string) evidence.Event {
		return claimedAt(id, v, claimID, sec(at), sec(at+30), before)
	}
	lease := func(id string, v int64, claimID string, at int, until time.Time, before string) evidence.Event {
		e := claimedAt(id, v, claimID, sec(at), until, before)
		e.LeaseMS = evidence.Ptr[int64](30000)
		return e
	}
	expired := func(id string, v int64, claimID string) evidence.Event {
		return ev(evidence.KindLeaseExpired, id, func(e *evidence.Event) { e.ClaimVersion, e.ClaimID, e.Rows = &v, claimID, evidence.Ptr[int64](1) })
	}
	for _, c := range []struct {
		name, scenario string
		events         []evidence.Event
		want           string
	}{
		{"two relays hold claims at once", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), live("e-2", 1, "b", 2, "PENDING")},
			"claims=2 doubleClaims=0 overlap=true sent=0 effects=0"},
		{"one relay after the other's mark", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), marked("e-1", 1, "a", 1),
				live("e-2", 1, "b", 2, "PENDING")},
			"claims=2 doubleClaims=0 overlap=false sent=1 effects=0"},
		{"one relay after the other's lease", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), live("e-2", 1, "b", 40, "PENDING")},
			"claims=2 doubleClaims=0 overlap=false sent=0 effects=0"},
		{"one relay after the other's lease was aged", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), expired("e-1", 1, "a"),
				live("e-2", 1, "b", 2, "PENDING")},
			"claims=2 doubleClaims=0 overlap=false sent=0 effects=0"},
		{"one relay twice", "concurrentRelays",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), live("e-2", 1, "a", 2, "PENDING")},
			"claims=2 doubleClaims=0 overlap=false sent=0 effects=0"},
		{"a row taken over from another relay", "concurrentRelays",
			[]evidence.Event{committed(1, 9), live("e-1", 1, "a", 1, "PENDING"), live("e-1", 2, "b", 2, "CLAIMED")},
			"claims=2 doubleClaims=1 overlap=false sent=0 effects=0"},
		{"self takeover", "selfTakeover",
			[]evidence.Event{committed(1, 9), live("e-1", 1, "a", 1, "PENDING"), expired("e-1", 1, "a"), live("e-1", 2, "a", 2, "CLAIMED"),
				marked("e-1", 1, "a", 0), marked("e-1", 2, "a", 1)},
			"sameClaimId=true takeoverVersion=2 stolen=0 staleMark=0 deliveries=0 effects=0 state=SENT"},
		{"taken over by another, then stolen", "selfTakeover",
			[]evidence.Event{committed(1, 9), live("e-1", 1, "a", 1, "PENDING"), expired("e-1", 1, "a"), live("e-1", 2, "b", 2, "CLAIMED"),
				live("e-1", 3, "a", 3, "CLAIMED"), live("e-1", 4, "c", 4, "CLAIMED"), marked("e-1", 1, "a", 1)},
			"sameClaimId=false takeoverVersion=3 stolen=2 staleMark=1 deliveries=0 effects=0 state=SENT"},
		{"one claim", "selfTakeover", []evidence.Event{committed(1, 9), live("e-1", 1, "a", 1, "PENDING")},
			"sameClaimId=? takeoverVersion=0 stolen=0 staleMark=? deliveries=0 effects=0 state=CLAIMED"},
		{"leases on the claims' clock", "relayClockSkew",
			[]evidence.Event{committed(1, 9), committed(2, 8), lease("e-1", 1, "a", 1, sec(31), "PENDING"),
				lease("e-2", 1, "b", 2, sec(32).Add(model.LeaseTolerance), "PENDING")},
			"claims=2 leasesOffClock=0 steals=0 sent=0 effects=0"},
		{"leases an hour off, a steal", "relayClockSkew",
			[]evidence.Event{committed(1, 9), committed(2, 8), lease("e-1", 1, "a", 1, sec(3631), "PENDING"),
				lease("e-2", 1, "b", 2, sec(-3568), "PENDING"), lease("e-2", 2, "a", 3, sec(3633), "CLAIMED"),
				lease("e-1", 2, "a", 4, sec(3634), "CLAIMED")},
			"claims=4 leasesOffClock=4 steals=1 sent=0 effects=0"},
		{"publish failures retried", "publishFailures",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), live("e-2", 1, "a", 1, "PENDING"),
				published("e-1", 1, "a", nil, evidence.KindPublish), published("e-2", 1, "a", nil, evidence.KindPublishUnknown),
				expired("e-1", 1, "a"), expired("e-2", 1, "a"), live("e-1", 2, "a", 2, "CLAIMED"), live("e-2", 2, "b", 2, "CLAIMED"),
				published("e-1", 2, "a", evidence.Ptr[int64](1), evidence.KindPublish), marked("e-1", 2, "a", 1),
				received("e-2", 0), received("e-1", 1), received("e-1", 1), ev(evidence.KindInboxReject, "e-1")},
			"refused=1 unknown=1 marksAfterFailure=0 retried=1 records=2 effects=0 duplicatesAbsorbed=1 sent=1"},
		{"marks after failed publishes", "publishFailures",
			[]evidence.Event{committed(1, 9), committed(2, 8), live("e-1", 1, "a", 1, "PENDING"), live("e-2", 1, "a", 1, "PENDING"),
				published("e-1", 1, "a", nil, evidence.KindPublish), marked("e-1", 1, "a", 1),
				published("e-2", 1, "a", nil, evidence.KindPublishUnknown), marked("e-2", 1, "a", 0)},
			"refused=1 unknown=1 marksAfterFailure=1 retried=0 records=0 effects=0 duplicatesAbsorbed=0 sent=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := derivedMetrics(t, c.scenario, c.events...); got != c.want {
				t.Errorf("%s: %s; want %s", c.scenario, got, c.want)
			}
		})
	}
}

// TestScenarioNotExercised: concurrentRelays claims PASS; unless two
// relays held live claims at the same moment, the verdict on it is
// inconclusive (scenario-not-exercised), never a plain PASS.
func TestScenarioNotExercised(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(id, claimID string, at int) evidence.Event {
		return claimedAt(id, 1, claimID, t0.Add(time.Duration(at)*time.Second), t0.Add(time.Duration(at+30)*time.Second), "PENDING")
	}
	s, _ := spec.Lookup("concurrentRelays")
	for _, c := range []struct {
		name   string
		events []evidence.Event
		want   bool
	}{
		{"held at once", []evidence.Event{committed(1, 9), committed(2, 8), claim("e-1", "a", 1), claim("e-2", "b", 2)}, false},
		{"one after the other", []evidence.Event{committed(1, 9), committed(2, 8), claim("e-1", "a", 1), marked("e-1", 1, "a", 1),
			claim("e-2", "b", 2)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := model.New(nil, nil)
			for i := range c.events {
				m.Step(&c.events[i], Source{Seq: int64(i + 1)})
			}
			m.Finish(false)
			ck := &checker{v: &Verdict{}}
			sc := &evidence.Scenario{ID: s.ID, Suite: s.Suite, Status: evidence.StatusPass}
			ck.metrics(sc, s, derivations[s.ID], facts{m: m})
			got := slices.ContainsFunc(ck.v.Reasons, func(r Reason) bool {
				return r.Rule == "scenario-not-exercised" && r.Status == Inconclusive
			})
			if got != c.want {
				t.Errorf("scenario-not-exercised reported = %v; want %v (reasons %v)", got, c.want, ck.v.Reasons)
			}
		})
	}
}
