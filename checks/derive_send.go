package checks

import (
	"cmp"
	"slices"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The send boundary (spec/send.go).
func init() {
	derive("sendBeforeMarkCrash", derivation{
		metrics: func(f facts) []metricValue {
			return []metricValue{f.deliveries("deliveries"), f.effects("businessEffects"),
				f.perIntent("oldTokenCas", func(e string) metricValue {
					var marked []model.Token // of claim_version 1
					for _, t := range f.m.Tokens(e) {
						if t.Version == 1 && t.Marked {
							marked = append(marked, t)
						}
					}
					if len(marked) > 0 { // the rows of the last mark
						last := slices.MaxFunc(marked, func(a, b model.Token) int { return cmp.Compare(a.MarkAt, b.MarkAt) })
						return num("oldTokenCas", last.MarkRows)
					}
					return unknown("oldTokenCas", "no mark of "+e+" with claim_version 1")
				}),
				f.rowState("state")}
		},
		injected: faultHit(spec.AfterPublishBeforeMark),
	})
	derive("concurrentRelays", derivation{metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		n := f.m.Counts()
		return []metricValue{num("claims", n.Claims), num("doubleClaims", n.DoubleClaims), num("sent", sent),
			num("effects", n.Notifications)}
	}})
	// relayKill9: killed = a fault event at after-publish-before-mark
	// exists; takeoverVersion = claim_version of the first claim of e with
	// another claim_id than e's first claim (0 if none); deliveries,
	// businessEffects, state as in sendBeforeMarkCrash.
	derive("relayKill9", derivation{metrics: func(f facts) []metricValue {
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
	}})
}
