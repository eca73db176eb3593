package checks

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/checks/crosscheck"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/profiles"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// Both layers on a reference bundle (../shared/BLACKBOX.md: "for it, both
// verdicts are computed and must agree on everything the black-box layer
// can see"). With Options.BlackBox, Verify also runs the witness-only
// layer (checks/blackbox) over the same witnesses, under
// profiles/reference.yaml, once per scenario that runs the pipeline (has
// a topic), and records its verdict in Verdict.BlackBox.
//
// The verdict is the white-box one unless the layer finds worse: then the
// layers disagree on what the witnesses show, the verdict becomes the
// layer's (FAIL, or INCONCLUSIVE over a PASS), and a layers-disagree
// reason quotes the layer's findings. A white-box verdict worse than the
// layer's stands as it is: the white-box verifier reads more than the
// witnesses (the actors' logs, claim tokens, business rules), so a plant
// of its layers that leaves the witnesses clean is expected to pass the
// black-box layer.

// BlackBoxLayer is the witness-only layer's verdict on a reference bundle.
type BlackBoxLayer struct {
	// Status is the worst of the scenarios' verdicts; NOT_RUN when the
	// witnesses could not be had (NotRun says why); N/A when no scenario
	// runs the pipeline.
	Status Status `json:"status"`
	// Profile and ProfileSHA256 name the profile the layer ran under.
	Profile       string `json:"profile"`
	ProfileSHA256 string `json:"profile_sha256"`
	// Scenarios are the scenarios audited (those with a topic).
	Scenarios []BlackBoxScenario `json:"scenarios"`
	NotRun    string             `json:"not_run,omitempty"`
	// Disagree is set when the layer found worse than the white-box
	// verifier (the verdict then follows the layer).
	Disagree bool `json:"disagree"`
}

// BlackBoxScenario is the layer's verdict on one scenario.
type BlackBoxScenario struct {
	ID      string `json:"id"`
	Status  Status `json:"status"`
	Events  int    `json:"events"`
	Records int    `json:"records"`
	// Reasons are the layer's findings that are not PASS.
	Reasons []blackbox.Reason `json:"reasons,omitempty"`
}

// BlackBoxLayer.Status when the layer has no verdict: it could not run,
// or no scenario runs the pipeline (has a topic).
const (
	notRun        Status = "NOT_RUN"
	notApplicable Status = "N/A"
)

// maxDisagreeQuoted bounds the findings a layers-disagree reason quotes.
const maxDisagreeQuoted = 5

// blackBoxLayer runs the layer over the witnesses ws (nil members: that
// witness is missing or unusable, and the white-box verdict says why)
// and reconciles the two verdicts.
func (c *checker) blackBoxLayer(ws *crosscheck.Witnesses, text []byte) {
	l := &BlackBoxLayer{Profile: profiles.ReferencePath, ProfileSHA256: profiles.ReferenceSHA256(), Status: Pass, Scenarios: []BlackBoxScenario{}}
	if text != nil {
		l.Profile, l.ProfileSHA256 = "(given by the caller)", sha256Hex(text)
	} else {
		text = profiles.Reference()
	}
	c.v.BlackBox = l
	p, err := profile.Parse(l.Profile, text)
	if err != nil {
		l.Status, l.NotRun = notRun, "the profile is not valid: "+err.Error()
		return
	}
	h, ok := c.blackBoxHistory(ws)
	if !ok {
		l.Status, l.NotRun = notRun, "the binlog or the broker witness is missing or unusable (see the reasons)"
		return
	}
	for _, sc := range c.ev.Scenarios {
		if len(sc.Topics) == 0 || sc.Database == "" {
			continue // runs no relay: nothing for the layer to audit
		}
		res, err := blackbox.Check(blackbox.Input{Profile: p, Binlog: h, Schema: sc.Database, Broker: ws.Broker(),
			Topic: sc.Topics[0], End: c.ev.Run.End})
		if err != nil {
			l.Status, l.NotRun = notRun, err.Error()
			return
		}
		s := BlackBoxScenario{ID: sc.ID, Status: layerStatus(res.Status), Events: res.Stats.Events, Records: res.Stats.Records}
		for _, r := range res.Reasons {
			if r.Status != blackbox.Pass {
				s.Reasons = append(s.Reasons, r)
			}
		}
		l.Scenarios = append(l.Scenarios, s)
		l.Status = worseStatus(l.Status, s.Status)
	}
	if len(l.Scenarios) == 0 {
		l.Status = notApplicable
		return
	}
	c.reconcile(l)
}

// blackBoxHistory reads the binlog again through the bundle's gate (its
// files were verified when the witnesses were read, so they are not
// hashed again) as one history after the run's start position: the
// layer counts a GTID gap between any two transactions as a hole, so it
// needs them all, not the white-box verifier's history cut by database.
func (c *checker) blackBoxHistory(ws *crosscheck.Witnesses) (binlog.History, bool) {
	w := c.ev.Witness
	if !ws.HasDatabase() || !ws.HasBroker() || w == nil || w.Database == nil {
		return binlog.History{}, false
	}
	h, err := crosscheck.ReadBinlog(c.b, w.Database.Files)
	if err != nil {
		return binlog.History{}, false
	}
	start := binlog.Position{File: w.Database.StartFile, Pos: w.Database.StartPos}
	var after []binlog.Transaction
	for _, t := range h.Transactions {
		if t.After(start) {
			after = append(after, t)
		}
	}
	h.Transactions = after
	return h, true
}

// reconcile makes the verdict the worse of the two layers', with a
// layers-disagree reason when the witness-only layer's is the worse.
func (c *checker) reconcile(l *BlackBoxLayer) {
	white := c.v.Status
	if worseStatus(white, l.Status) == white {
		return
	}
	l.Disagree = true
	var quoted []string
	total := 0
	for _, s := range l.Scenarios {
		for _, r := range s.Reasons {
			total++
			if len(quoted) < maxDisagreeQuoted {
				quoted = append(quoted, s.ID+": "+r.String())
			}
		}
	}
	more := ""
	if total > len(quoted) {
		more = fmt.Sprintf(" (and %d more: verify --json lists them under black_box)", total-len(quoted))
	}
	c.add(Reason{Rule: "layers-disagree", Status: l.Status, Message: fmt.Sprintf(
		"the white-box verifier finds %s, the witness-only layer under %s finds %s: the layers disagree on what the witnesses show, and the verdict is the worse; %s%s",
		white, l.Profile, l.Status, strings.Join(quoted, "; "), more)})
	c.v.Status = l.Status
}

func layerStatus(s blackbox.Status) Status {
	switch s {
	case blackbox.Fail:
		return Fail
	case blackbox.Inconclusive:
		return Inconclusive
	}
	return Pass
}

// worseStatus orders PASS < INCONCLUSIVE < FAIL; NOT_RUN is no verdict.
func worseStatus(a, b Status) Status {
	rank := map[Status]int{Pass: 1, Inconclusive: 2, Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// writeBlackBoxLine is the one line verify prints of the layer.
func writeBlackBoxLine(b *bufio.Writer, v *Verdict) {
	l := v.BlackBox
	if l == nil {
		return
	}
	p := Printable
	if l.NotRun != "" {
		fmt.Fprintf(b, "black-box  not run: %s\n", p(l.NotRun))
		return
	}
	if l.Status == notApplicable {
		fmt.Fprintf(b, "black-box  N/A: no scenario runs the pipeline (has a topic), so the witness-only layer has nothing to audit\n")
		return
	}
	events := 0
	for _, s := range l.Scenarios {
		events += s.Events
	}
	line := fmt.Sprintf("black-box  %s: %d scenario(s) with a topic, %d event(s), audited from the witnesses alone under %s (sha256 %s)",
		l.Status, len(l.Scenarios), events, l.Profile, shortSum(l.ProfileSHA256))
	switch {
	case l.Disagree:
		line += "; the layers DISAGREE: the verdict is " + string(l.Status) + " (see layers-disagree)"
	case l.Status != v.Status:
		line += "; the white-box " + string(v.Status) + " stands: it reads the actors' logs too"
	default:
		line += "; the layers agree"
	}
	fmt.Fprintln(b, p(line))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func shortSum(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
