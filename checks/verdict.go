// Package checks is the independent verifier: it re-derives every claim of
// an evidence file from its event logs (schema, integrity, replay, SQL
// invariants) and returns a verdict. It depends only on evidence/,
// schemas/, spec/, invariants/, the witness readers (witness/binlog,
// witness/broker), a database and its own sub-packages: checks/model (the
// replay model), checks/eventline (the decoder of event lines),
// checks/crosscheck (the event logs held against the witnesses) and
// checks/finding (the Reason and Status they share with it). Never on the
// runner or the system under test; and no sub-package imports checks.
package checks

import (
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
)

// Status is the three-way verdict: checked and fine, checked and broken,
// or not decidable from what the evidence holds (finding.Status, which the
// checks of the verifier's sub-packages report too).
type Status = finding.Status

// Verdict statuses.
const (
	Pass         = finding.Pass
	Fail         = finding.Fail
	Inconclusive = finding.Inconclusive
)

// Reason is one finding (finding.Reason). Rule is a stable kebab-case id:
// a rule of the checker (Rules, for example "metric-mismatch" or
// "log-digest"), of the replay model (model.Rules, for example
// "stale-token-mark"), or an invariant id.
type Reason = finding.Reason

// InvariantCheck compares one invariant of one scenario: the live result
// recorded by the runner (-1 when the evidence has none) and the result on
// the replayed end state.
type InvariantCheck struct {
	Scenario string `json:"scenario"`
	ID       string `json:"id"`
	Meaning  string `json:"meaning"`
	Live     int64  `json:"live"`
	Replayed int64  `json:"replayed"`
}

// Verdict is the outcome of verifying one evidence file.
type Verdict struct {
	Status    Status `json:"status"`
	Evidence  string `json:"evidence"`
	RunID     string `json:"run_id"`
	Engine    string `json:"engine"` // SQL engine of the replayed state
	Events    int64  `json:"events"`
	Scenarios int    `json:"scenarios"`
	// Audited says what was audited: the system under test, the suites
	// and the run (evidence.Evidence.Audited).
	Audited    string           `json:"audited,omitempty"`
	Reasons    []Reason         `json:"reasons"`
	Invariants []InvariantCheck `json:"invariants"`
	// Planted is the bug planted into the run (a negative control: its
	// verdict is expected to be FAIL); empty for a clean run.
	Planted   string    `json:"planted,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	// Witnessed says, per scenario, what the witnesses (the binlog, the
	// broker's log) confirmed of its claims.
	Witnessed []WitnessedScenario `json:"witnessed,omitempty"`
	// Unwitnessed lists what could not be witnessed ("database: why") when
	// verify ran with AllowUnwitnessed; such a verdict may PASS, but only
	// on the actors' word for what is listed.
	Unwitnessed []string `json:"unwitnessed,omitempty"`
	// Resolved are the transactions the database's witness showed
	// committed and no actor logged (a process or connection killed
	// between its COMMIT and its log line), folded into the replay as the
	// events of the actor "witness" (resolve.go).
	Resolved []Resolution `json:"resolved,omitempty"`
	// BlackBox is the witness-only layer's verdict on the same witnesses
	// (Options.BlackBox; blackboxlayer.go); nil when it was not asked for.
	BlackBox *BlackBoxLayer `json:"black_box,omitempty"`
	// Warnings are problems of the verification itself that do not bear
	// on the evidence (for example a scratch database left behind).
	Warnings []string `json:"warnings,omitempty"`
}

// StatusLine is the verdict as one phrase: the status, and "(unwitnessed)"
// when it was reached without a witness that is missing (AllowUnwitnessed).
func (v *Verdict) StatusLine() string {
	if len(v.Unwitnessed) > 0 {
		return string(v.Status) + " (unwitnessed)"
	}
	return string(v.Status)
}
