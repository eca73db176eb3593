// Package finding holds what a check of the verifier reports: a Reason
// (one finding: its rule, its status and where it is) and the three-way
// Status. It is a leaf, shared by package checks (which names them
// checks.Reason and checks.Status, the verdict's own) and by the checks
// it delegates to a package of their own (checks/crosscheck), so that they
// report the one type without importing checks.
//
// It imports nothing of the project, and must not: every package of the
// verifier may import it.
package finding

// Status is the three-way verdict: checked and fine, checked and broken,
// or not decidable from what the evidence holds.
type Status string

// Verdict statuses.
const (
	Pass         Status = "PASS"
	Fail         Status = "FAIL"
	Inconclusive Status = "INCONCLUSIVE"
)

// Reason is one finding. Rule is a stable kebab-case id: a rule of the
// checker (checks.Rules, for example "metric-mismatch" or "log-digest"),
// of the replay model (model.Rules, for example "stale-token-mark"), or an
// invariant id.
type Reason struct {
	Rule       string `json:"rule"`
	Status     Status `json:"status"` // Fail or Inconclusive
	Scenario   string `json:"scenario,omitempty"`
	Log        string `json:"log,omitempty"`
	Seq        int64  `json:"seq,omitempty"`
	Line       int64  `json:"line,omitempty"` // line number in Log
	Field      string `json:"field,omitempty"`
	Claimed    string `json:"claimed,omitempty"`
	Recomputed string `json:"recomputed,omitempty"`
	// Witness locates the finding in a witness: a binlog transaction
	// ("GTID 0-1-12 (binlog.000001@4567)"), a broker record
	// ("topic/partition@offset"), a group's offset or a witness file.
	Witness string `json:"witness,omitempty"`
	Message string `json:"message"`
}
