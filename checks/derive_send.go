package checks

import (
	"slices"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The send boundary (spec/send.go).
func init() {
	derive("sendBeforeMarkCrash", derivation{
		metrics: func(f facts) []metricValue {
			return []metricValue{f.deliveries("deliveries"), f.effects("businessEffects"),
				f.perIntent("oldTokenCas", func(e string) metricValue {
					if in := f.m.intentOf(e); in != nil {
						var last *tokenState
						for i := range in.tokens {
							if t := &in.tokens[i]; t.version == 1 && t.marked && (last == nil || t.markAt > last.markAt) {
								last = t
							}
						}
						if last != nil {
							return num("oldTokenCas", last.markRows)
						}
					}
					return unknown("oldTokenCas", "no mark of "+e+" with claim_version 1")
				}),
				f.rowState("state")}
		},
		injected: faultHit(spec.AfterPublishBeforeMark),
	})
	derive("concurrentRelays", derivation{metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		return []metricValue{num("claims", f.m.claims), num("doubleClaims", f.m.doubleClaims), num("sent", sent),
			num("effects", int64(len(f.m.notifs)))}
	}})
	// relayKill9: killed = a fault event at after-publish-before-mark
	// exists; takeoverVersion = claim_version of the first claim of e with
	// another claim_id than e's first claim (0 if none); deliveries,
	// businessEffects, state as in sendBeforeMarkCrash.
	derive("relayKill9", derivation{metrics: func(f facts) []metricValue {
		killed := slices.Contains(f.m.faults, string(spec.AfterPublishBeforeMark))
		return []metricValue{
			flag("killed", killed),
			f.perIntent("takeoverVersion", func(e string) metricValue {
				var v int64
				if in := f.m.intentOf(e); in != nil {
					var first string
					for _, t := range in.tokens {
						if !t.claimed {
							continue
						}
						if first == "" {
							first = t.id
						} else if t.id != first {
							v = t.version
							break
						}
					}
				}
				return num("takeoverVersion", v)
			}),
			f.deliveries("deliveries"), f.effects("businessEffects"), f.rowState("state"),
		}
	}})
}
