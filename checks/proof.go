package checks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/model"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The proof boundary, derived by the verifier itself. The runner records
// its claims (evidence.ProofClaims) and renders the matrix from them; this
// file derives the claims again from the events and the witnesses, with
// code of its own, compares them item by item, and renders the matrix from
// its own claims with the shared catalogue (evidence.RenderProofBoundary).
// A disagreement is proof-mismatch, naming the item.
//
// A fault counts as fired when its injection is in the logs and, where a
// witness can show it, in the witness:
//   - a fault event at its point, counted by the replay model;
//   - outbox-unique-conflict: an order transaction rolled back on a
//     duplicate key (1062) of a seeded decoy's event id;
//   - nemesis-kill: the process its detail names ended by SIGKILL in the
//     supervisor's process record;
//   - nemesis-db-crash: no more than the binlog shows server crashes (a
//     file the server still marked in use when the next began).
//
// The broker's data directory does not show a restart (kfake writes the
// same state at every close), nor the answers it gave: a broker restart
// and a refused produce rest on the nemesis's log.

// scenarioProof is what one scenario's events show of its faults.
type scenarioProof struct {
	fired, skipped map[string]int
	missed         map[string]int  // aimed faults that struck unaimed
	killed         map[string]bool // actors a confirmed kill ended
}

// proofFacts keeps what m, replayed from sc's events, shows of the faults.
func (c *checker) proofFacts(sc *evidence.Scenario, m *model.Model) {
	if c.proof == nil {
		c.proof = map[string]scenarioProof{}
	}
	p := scenarioProof{fired: m.FaultsByPoint(), skipped: m.SkippedByPoint(), missed: map[string]int{}, killed: map[string]bool{}}
	for _, a := range m.Aims() {
		if !stoppedAtAim.MatchString(a.Detail) {
			p.missed[a.Target]++
		}
	}
	if p.fired == nil {
		p.fired = map[string]int{}
	}
	if p.skipped == nil {
		p.skipped = map[string]int{}
	}
	dup := 0
	for _, id := range m.RolledBackOnDuplicate() {
		if in, ok := m.Intent(id); ok && in.Decoy {
			dup++
		}
	}
	if dup > 0 {
		p.fired[string(spec.OutboxUniqueConflict)] = dup
	}
	kills := 0
	for _, k := range m.Kills() {
		if a, ok := confirmedKill(k, m); ok {
			kills++
			p.killed[a] = true
		}
	}
	delete(p.fired, string(spec.NemesisKill))
	if kills > 0 {
		p.fired[string(spec.NemesisKill)] = kills
	}
	c.proof[sc.ID] = p
}

// stoppedAtAim is how an aimed fault that hit its aim names it: the target
// stopped itself at the point it was armed for.
var stoppedAtAim = regexp.MustCompile(`\(pid \d+\) stopped itself at [a-z-]+, `)

// killDetail is how the nemesis names the process it killed.
var killDetail = regexp.MustCompile(`SIGKILL to (\S+) \(pid (\d+)\)`)

// confirmedKill returns the actor of a kill whose process the supervisor
// recorded ending by SIGKILL: the same pid, an incarnation of the slot.
func confirmedKill(k model.Kill, m *model.Model) (string, bool) {
	sub := killDetail.FindStringSubmatch(k.Detail)
	if sub == nil {
		return "", false
	}
	pid, err := strconv.ParseInt(sub[2], 10, 64)
	if err != nil {
		return "", false
	}
	name, ok := m.SIGKILLed(pid)
	if !ok || name != sub[1] || (name != k.Target && !strings.HasPrefix(name, k.Target+".")) {
		return "", false
	}
	switch role, _, _ := strings.Cut(k.Target, "-"); role {
	case "relay":
		return spec.ActorRelay, true
	case "consumer":
		return spec.ActorConsumer, true
	case "orders":
		return spec.ActorOrders, true
	}
	return "", false
}

// deriveClaims derives the claims from the scenarios' events and the
// witnesses: for each scenario that ran, each declared fault point.
func (c *checker) deriveClaims() *evidence.ProofClaims {
	out := &evidence.ProofClaims{Faults: []evidence.FaultClaim{}}
	crashes := c.wit.Crashes() // -1: no database witness to hold the crashes against
	done := map[string]bool{}
	for _, sc := range c.ev.Scenarios {
		if sc.Status == evidence.StatusNotRun || done[sc.ID] {
			continue
		}
		done[sc.ID] = true
		p := c.proof[sc.ID]
		s, _ := spec.Lookup(sc.ID)
		for _, pt := range sc.FaultPoints {
			f := evidence.FaultClaim{Scenario: sc.ID, Point: pt, Fired: p.fired[pt], Skipped: p.skipped[pt], Missed: p.missed[pt],
				Killed: []string{}}
			switch {
			case pt == string(spec.NemesisDBCrash) && crashes >= 0:
				f.Fired = min(f.Fired, crashes)
				crashes -= f.Fired
			case pt == string(spec.NemesisKill):
				for _, a := range []string{spec.ActorConsumer, spec.ActorOrders, spec.ActorRelay} {
					if p.killed[a] {
						f.Killed = append(f.Killed, a)
					}
				}
			case f.Fired > 0 && c.ev.Environment.ActorProcesses:
				f.Killed = signalled(s, pt)
			}
			out.Faults = append(out.Faults, f)
		}
	}
	return out
}

// signalled returns the actor a signal at pt kills in s, when the fault
// table injects it so (a nemesis signal stops or crashes something else).
func signalled(s spec.Scenario, pt string) []string {
	out := []string{}
	if strings.HasPrefix(pt, spec.NemesisPrefix) {
		return out
	}
	for _, r := range s.Faults {
		if f, ok := spec.LookupFault(r); ok && string(r.Point) == pt && r.Injection == spec.InjectSignal && !slices.Contains(out, f.Actor) {
			out = append(out, f.Actor)
		}
	}
	slices.Sort(out)
	return out
}

// proofBoundary holds the evidence's claims and matrix against the
// verifier's own derivation.
func (c *checker) proofBoundary() {
	derived := c.deriveClaims()
	if c.ev.ProofClaims == nil {
		c.fail("", "proof-mismatch", "the evidence records no proof claims (proof_claims): the faults its "+
			"proof-boundary matrix lists as run or not run cannot be held against what ran (evidence of a version "+
			"before they were recorded: regenerate it with this version, orderflow-audit run)")
		c.matrix(derived, "this verifier derives from the events and the witnesses")
		return
	}
	if c.claimsAgree(c.ev.ProofClaims, derived) {
		c.matrix(derived, "this verifier derives from the events and the witnesses")
		return
	}
	// The claims were reported item by item; the matrix is still held
	// against the claims it was rendered from.
	c.matrix(c.ev.ProofClaims, "the evidence's own proof claims give")
}

// claimsAgree compares the claims item by item and reports each
// disagreement.
func (c *checker) claimsAgree(claimed, derived *evidence.ProofClaims) bool {
	agree := true
	seen := map[[2]string]bool{}
	for _, g := range claimed.Faults {
		k := [2]string{g.Scenario, g.Point}
		if seen[k] {
			agree = false
			c.mismatch(g.Scenario, "proof-mismatch", "proof_claims["+g.ClaimedItem()+"]", g.String(), "",
				"the proof claims list %s twice", g.ClaimedItem())
			continue
		}
		seen[k] = true
		d, ok := derived.Claim(g.Scenario, g.Point)
		if !ok {
			agree = false
			c.mismatch(g.Scenario, "proof-mismatch", "proof_claims["+g.ClaimedItem()+"]", g.String(), "",
				"the proof boundary claims %s, which is not a declared fault of a scenario that ran", g.ClaimedItem())
			continue
		}
		if g.Fired == d.Fired && g.Skipped == d.Skipped && g.Missed == d.Missed && slices.Equal(g.Killed, d.Killed) {
			continue
		}
		agree = false
		c.mismatch(g.Scenario, "proof-mismatch", "proof_claims["+g.ClaimedItem()+"]", g.String(), d.String(),
			"the proof boundary %s (the verifier counts %s)", claimDiff(g, d), evidenceFor(d))
	}
	for _, d := range derived.Faults {
		if !seen[[2]string{d.Scenario, d.Point}] {
			agree = false
			what := "it did not fire"
			if d.Fired > 0 {
				what = "it fired " + strconv.Itoa(d.Fired) + " time(s)"
			}
			c.mismatch(d.Scenario, "proof-mismatch", "proof_claims["+d.ClaimedItem()+"]", "", d.String(),
				"the proof boundary omits %s, a declared fault of a scenario that ran (%s)", d.ClaimedItem(), what)
		}
	}
	return agree
}

// claimDiff says how a claim differs from what the events show.
func claimDiff(g, d evidence.FaultClaim) string {
	item := g.ClaimedItem()
	switch {
	case g.Fired > 0 && d.Fired == 0:
		return fmt.Sprintf("claims %s fired %d time(s), but it never fired", item, g.Fired)
	case g.Fired == 0 && d.Fired > 0:
		return fmt.Sprintf("lists %s as not run, but it fired %d time(s)", item, d.Fired)
	case g.Fired != d.Fired:
		return fmt.Sprintf("claims %s fired %d time(s), the events show %d", item, g.Fired, d.Fired)
	case g.Skipped != d.Skipped:
		return fmt.Sprintf("claims %s was skipped %d time(s), the events show %d", item, g.Skipped, d.Skipped)
	case g.Missed != d.Missed:
		return fmt.Sprintf("claims %s missed its aim %d time(s), the events show %d", item, g.Missed, d.Missed)
	}
	return fmt.Sprintf("claims %s killed %s, the process record shows %s", item,
		orDefault(strings.Join(g.Killed, ", "), "no actor"), orDefault(strings.Join(d.Killed, ", "), "no actor"))
}

// evidenceFor says what a derived claim rests on.
func evidenceFor(d evidence.FaultClaim) string {
	switch spec.Point(d.Point) {
	case spec.OutboxUniqueConflict:
		return "order transactions rolled back on a decoy's duplicate key"
	case spec.NemesisKill:
		return "kills whose process the supervisor recorded ending by SIGKILL"
	case spec.NemesisDBCrash:
		return "crash events of the nemesis, no more than the binlog shows server crashes"
	}
	return "fault events at that point in its logs"
}

// matrix compares the evidence's matrix with the one claims render.
func (c *checker) matrix(claims *evidence.ProofClaims, from string) {
	ev := c.ev
	want := evidence.RenderProofBoundary(ev, claims)
	for i := 0; i < max(len(want), len(ev.ProofBoundary)); i++ {
		var got, w evidence.ProofRow
		if i < len(ev.ProofBoundary) {
			got = ev.ProofBoundary[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if got.Category == w.Category && equalStrings(got.Had, w.Had) && equalStrings(got.CannotInfer, w.CannotInfer) {
			continue
		}
		cat := w.Category
		if cat == "" {
			cat = got.Category
		}
		field, claimed, recomputed := firstDiff(got, w)
		c.mismatch("", "proof-mismatch", "proof_boundary["+cat+"]."+field, claimed, recomputed,
			"the proof-boundary row %q is not what %s. The evidence may have been written by another version of the "+
				"tool (it says %s %s, revision %s), which words the matrix differently: regenerate it with this version "+
				"(orderflow-audit run) and verify again. Until then it fails, as a hand-edited matrix would",
			cat, from, ev.Tool.Name, ev.Tool.Version, ev.Tool.Revision)
	}
}
