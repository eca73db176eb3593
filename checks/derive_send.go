package checks

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// sendDerivations are the derivations of this file's scenarios, by id
// (derivations). The send boundary (spec/send.go).
var sendDerivations = map[string]derivation{
	"sendBeforeMarkCrash": {
		metrics: func(f facts) []metricValue {
			return []metricValue{f.deliveries("deliveries"), f.effects("businessEffects"),
				f.lastMarkRows("oldTokenCas", 1), f.rowState("state")}
		},
	},
	"concurrentRelays": {
		metrics: func(f facts) []metricValue {
			sent, _ := f.sent()
			n := f.m.Counts()
			return []metricValue{num("claims", n.Claims), num("doubleClaims", n.DoubleClaims), flag("overlap", n.Overlaps > 0),
				num("sent", sent), num("effects", n.Notifications)}
		},
		exercised: func(f facts) string {
			if f.m.Counts().Overlaps > 0 {
				return ""
			}
			return "no claim was made while another relay held a live claim: the two relays never held claims at the same time"
		},
	},
	"relayKill9": {metrics: func(f facts) []metricValue {
		killed := slices.Contains(f.m.Faults(), string(spec.AfterPublishBeforeMark))
		return []metricValue{
			flag("killed", killed),
			f.perIntent("takeoverVersion", func(e string) metricValue {
				var v int64
				var first string
				for _, t := range f.m.Tokens(e) {
					if !t.Claimed {
						continue
					}
					if first == "" {
						first = t.ID
					} else if t.ID != first {
						v = t.Version
						break
					}
				}
				return num("takeoverVersion", v)
			}),
			f.deliveries("deliveries"), f.effects("businessEffects"), f.rowState("state"),
		}
	}},
}

// lastMarkRows: the rows of the last mark of the scenario's intent with
// claim_version version (a stale mark, once a newer claim exists).
func (f facts) lastMarkRows(name string, version int64) metricValue {
	return f.perIntent(name, func(e string) metricValue {
		var marked []model.Token
		for _, t := range f.m.Tokens(e) {
			if t.Version == version && t.Marked {
				marked = append(marked, t)
			}
		}
		if len(marked) == 0 {
			return unknown(name, "no mark of "+e+" with claim_version "+strconv.FormatInt(version, 10))
		}
		last := slices.MaxFunc(marked, func(a, b model.Token) int { return cmp.Compare(a.MarkAt, b.MarkAt) })
		return num(name, last.MarkRows)
	})
}
