package checks

// leaseDerivations are the derivations of this file's scenarios, by id
// (derivations). Leases (spec/lease.go).
var leaseDerivations = map[string]derivation{
	"selfTakeover": {metrics: func(f facts) []metricValue {
		return []metricValue{
			f.perIntent("sameClaimId", func(e string) metricValue {
				ids := claimIDs(f, e)
				if len(ids) < 2 {
					return unknown("sameClaimId", "fewer than two claims of "+e)
				}
				return flag("sameClaimId", ids[0] == ids[1])
			}),
			f.perIntent("takeoverVersion", func(e string) metricValue {
				var first string
				for _, t := range f.m.Tokens(e) {
					switch {
					case !t.Claimed:
					case first == "":
						first = t.ID
					case t.ID == first:
						return num("takeoverVersion", t.Version)
					}
				}
				return num("takeoverVersion", 0)
			}),
			f.perIntent("stolen", func(e string) metricValue {
				ids := claimIDs(f, e)
				var n int64
				for _, id := range ids {
					if id != ids[0] {
						n++
					}
				}
				return num("stolen", n)
			}),
			f.lastMarkRows("staleMark", 1), f.deliveries("deliveries"), f.effects("effects"), f.rowState("state"),
		}
	}},
	"batchSelfTakeover": {metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		n := f.m.Counts()
		var stale, hit int64
		for in := range f.m.Intents() {
			for _, t := range f.m.Tokens(in.EventID) {
				switch {
				case !t.Marked:
				case t.MarkRows == 0:
					stale++
				default:
					hit++
				}
			}
		}
		return []metricValue{num("claims", n.Claims), num("selfTakeovers", n.SelfTakeovers), num("staleMarks", stale),
			num("marks", hit), num("sent", sent), num("effects", n.Notifications)}
	}},
	"relayClockSkew": {metrics: func(f facts) []metricValue {
		sent, _ := f.sent()
		n := f.m.Counts()
		return []metricValue{num("claims", n.Claims), num("leasesOffClock", n.LeasesOffClaim),
			num("steals", n.Takeovers-n.SelfTakeovers), num("sent", sent), num("effects", n.Notifications)}
	}},
}

// claimIDs returns the claim ids of the claims of e, in claim order.
func claimIDs(f facts, e string) []string {
	var ids []string
	for _, t := range f.m.Tokens(e) {
		if t.Claimed {
			ids = append(ids, t.ID)
		}
	}
	return ids
}
