package checks

import (
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// sweepDerivations are the derivations of this file's scenarios, by id
// (derivations). The call sweep (spec/sweep.go).
var sweepDerivations = map[string]derivation{
	"callSweep": {
		metrics: func(f facts) []metricValue {
			sites, runs, modes := sweptCalls(f.m.Calls())
			return []metricValue{num("sites", sites), num("runs", runs), text("modes", modes),
				num("late", lateIntents(f.m)), num("unsettled", unsettledIntents(f.m)), num("lag", f.m.Counts().Lag)}
		},
		exercised: func(f facts) string {
			if _, runs, _ := sweptCalls(f.m.Calls()); runs == 0 {
				return "no call failed: the sweep swept nothing"
			}
			return ""
		},
		conditions: func(f facts) []string { return callRecords(f.m.Calls()) },
	},
}

// callModes are the sweep's modes in its order (runner/fault.CallModes).
var callModes = []string{"before", "after", "kill"}

// sweptCalls counts the injections: distinct sites, runs, and runs per mode
// as the modes metric prints them.
func sweptCalls(calls []model.CallEvent) (sites, runs int64, modes string) {
	seen := map[string]bool{}
	per := map[string]int{}
	for _, c := range calls {
		if !c.Inject {
			continue
		}
		runs++
		per[c.Mode]++
		if !seen[c.Site] {
			seen[c.Site] = true
			sites++
		}
	}
	parts := make([]string, len(callModes))
	for i, m := range callModes {
		parts[i] = fmt.Sprintf("%s:%d", m, per[m])
	}
	return sites, runs, strings.Join(parts, "/")
}

// lateIntents counts the intents whose first observation (the scenario's,
// at the end of the run that placed them) is not SENT.
func lateIntents(m *Model) int64 {
	var n int64
	for in := range m.Intents() {
		if st := m.ObservedStates(in.EventID); len(st) > 0 && st[0] != evidence.StateSent {
			n++
		}
	}
	return n
}

// unsettledIntents counts the outbox intents that are not SENT or do not
// have exactly one effect.
func unsettledIntents(m *Model) int64 {
	var n int64
	for in := range m.Intents() {
		if in.State != evidence.StateSent || m.Deliveries(in.EventID).Effects != 1 {
			n++
		}
	}
	return n
}

// callExpect is what an injection at a site in a mode needs of its actor's
// record: whether one is required, and the outcome it must read ("" for
// any).
type callExpect struct {
	required bool
	outcome  string
}

// expectRecord says what a failed call at site in mode must leave on
// record (docs/scenarios.md, callSweep): the relay's publish, the
// consumer's effect transaction, its fetch and its offset commit record
// every failure they see; a call that fails before it took effect reads
// answered, after it unknown; a statement inside the effect transaction
// rolls the transaction back whatever its mode (answered), its COMMIT on
// a killed connection is unknown. A killed connection of a call the
// client retries on a new connection (a produce, a fetch, an offset
// commit, a statement outside a transaction) may leave no record; one it
// leaves must not read answered where the call may have taken effect.
func expectRecord(site, mode string) callExpect {
	switch site {
	case model.SitePublish, "consumer.offset.commit", "consumer.fetch":
		switch mode {
		case "before":
			return callExpect{true, model.CallAnswered}
		case "after":
			return callExpect{true, model.CallUnknown}
		}
		return callExpect{false, model.CallUnknown}
	case "consumer.effect.inbox", "consumer.effect.notification":
		return callExpect{true, model.CallAnswered}
	case "consumer.effect.commit":
		if mode == "before" {
			return callExpect{true, model.CallAnswered}
		}
		return callExpect{true, model.CallUnknown}
	case "consumer.batch.commit":
		if mode == "before" {
			return callExpect{} // the batch rolled back: its records are settled one by one
		}
		return callExpect{true, model.CallUnknown}
	}
	return callExpect{}
}

// recordSite is the site an actor's record of a failed call at site
// names: the effect transaction's events name the transaction, not the
// statement.
func recordSite(site string) string {
	if strings.HasPrefix(site, "consumer.effect.") || strings.HasPrefix(site, "consumer.batch.") {
		return model.SiteEffect
	}
	return site
}

// callRecords holds each injection to the first record of its site that
// follows it before the next injection, and returns, in words, each one
// whose record is missing or reads the wrong outcome.
func callRecords(calls []model.CallEvent) []string {
	var out []string
	for i, c := range calls {
		if c.Site == model.SiteUnlogged {
			out = append(out, fmt.Sprintf("the %s committed and no relay logged it (the binlog witness settled it): "+
				"a COMMIT or statement whose answer was lost was taken for a rollback", c.Outcome))
			continue
		}
		if !c.Inject {
			continue
		}
		want := expectRecord(c.Site, c.Mode)
		var rec *model.CallEvent
		for j := i + 1; j < len(calls) && !calls[j].Inject; j++ {
			if calls[j].Site == recordSite(c.Site) && calls[j].Site != model.SiteUnlogged {
				rec = &calls[j]
				break
			}
		}
		switch {
		case rec == nil && want.required:
			out = append(out, fmt.Sprintf("the call %s failed %s and its actor left no record of it", c.Site, c.Mode))
		case rec != nil && want.outcome != "" && rec.Outcome != want.outcome:
			out = append(out, fmt.Sprintf("the call %s failed %s and %s recorded it %s, not %s", c.Site, c.Mode, rec.Actor, rec.Outcome, want.outcome))
		}
	}
	return out
}
