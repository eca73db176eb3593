// Package blackbox is the witness-only rule layer of the verifier
// (../shared/BLACKBOX.md, "The witness-only rules"; docs/blackbox.md): it
// audits an outbox/inbox pipeline described by a profile from the binlog
// of the run window, the broker's log and, optionally, the load client's
// record of its requests. Nothing the system under test says about itself
// is read, so the package imports no part of the runner or of the
// reference pipeline: only evidence/..., schemas and the witness readers.
//
// Check derives a small model of the run (model.go: the committed outbox
// rows, the relay's progress as the binlog shows it, the records of the
// topic, the inbox and effect rows) and runs every rule of Rules on it.
// The verdict is three-way: FAIL when a rule is broken by what the
// witnesses show, INCONCLUSIVE when a hole in a witness (holes.go) could
// hide what a rule needs, PASS otherwise. Every reason names the GTID and
// binlog position of the transaction it rests on and the topic, partition
// and offset of the record.
package blackbox

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Status is a verdict: of a reason, of a rule, of the whole check.
type Status string

// The verdicts, ordered PASS < INCONCLUSIVE < FAIL by worse.
const (
	Pass         Status = "PASS"
	Inconclusive Status = "INCONCLUSIVE"
	Fail         Status = "FAIL"
	// NotApplicable is a rule the profile does not ask for (no business
	// table, no effect table, no client history).
	NotApplicable Status = "N/A"
)

func worse(a, b Status) Status {
	rank := map[Status]int{NotApplicable: 0, Pass: 1, Inconclusive: 2, Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Rule ids: stable, kebab-case, reused in reports and fixtures.
const (
	RuleCommitAtomic       = "commit-atomic"
	RuleAnswer             = "answer"
	RuleLostSkipped        = "lost-skipped"
	RuleLostAcked          = "lost-acked-not-published"
	RulePending            = "pending"
	RulePhantom            = "phantom"
	RuleRecordMismatch     = "record-mismatch"
	RuleDuplicate          = "duplicate"
	RuleAggregateSplit     = "aggregate-split"
	RuleOrder              = "order"
	RuleEffects            = "effects"
	RuleEffectOrphan       = "effect-orphan"
	RuleEffectOutsideInbox = "effect-outside-inbox"
	RuleLag                = "lag"
	RuleProgress           = "progress"
	RuleInvariants         = "invariants"
	RuleHoles              = "holes"
)

// Rule is one rule of the layer: its id and what breaks it.
type Rule struct {
	ID    string
	Fails string
}

// Rules lists every rule in the order reports show them (BLACKBOX.md's
// table).
var Rules = []Rule{
	{RuleCommitAtomic, "a business row without its outbox row in the same transaction, or the reverse"},
	{RuleAnswer, "a success answered for no committed row; a committed row the client was told failed"},
	{RuleLostSkipped, "a committed event without a record, which the relay's progress passed before the event committed"},
	{RuleLostAcked, "a committed event without a record, which the relay's progress passed after it committed"},
	{RulePending, "a committed event without a record that progress never passed, past the liveness bound"},
	{RulePhantom, "a record whose event no committed transaction wrote"},
	{RuleRecordMismatch, "a record whose key, value or headers differ from its committed row after decoding"},
	{RuleDuplicate, "an event published more than once (FAIL only under duplicates: none)"},
	{RuleAggregateSplit, "an aggregate's records on more than one partition (under order: per-aggregate)"},
	{RuleOrder, "an aggregate's first deliveries or first effects out of commit or sequence order (under order: per-aggregate)"},
	{RuleEffects, "a delivered event with fewer or more effects than promised"},
	{RuleEffectOrphan, "an effect or inbox row of no committed event"},
	{RuleEffectOutsideInbox, "an effect committed without its inbox row in the same transaction"},
	{RuleLag, "a group's committed offset below the end offset after settling"},
	{RuleProgress, "the relay's progress moving back (a cursor decreasing, a done status undone)"},
	{RuleInvariants, "an invariant of the profile (an anti-join over the tables rebuilt from the binlog) returns rows"},
	{RuleHoles, "a hole in a witness (GTID gap, records deleted or compacted): INCONCLUSIVE on what it could hide"},
}

// Outcome is what the load client learned of one request (the evidence
// defines it: the client's history is a file of a black-box bundle).
type Outcome = evidence.ClientOutcome

// Outcomes, as Jepsen's :ok, :fail and :info.
const (
	OK      = evidence.ClientOK
	Failed  = evidence.ClientFailed
	Unknown = evidence.ClientUnknown // a timeout: settled by the binlog
)

// Request is one request of the load client's history: the only input
// that is not a witness, and ours, not the system's.
type Request = evidence.ClientRequest

// Input is what the layer reads.
type Input struct {
	Profile *profile.Profile
	// Binlog is the database's history cut to the run window (the
	// transactions after the window's start position).
	Binlog binlog.History
	// Scan, when set, is read instead of Binlog.Transactions: it calls fn
	// with each transaction of the window in commit order, as a reader
	// streams them, so that the window is never held whole (a run of a
	// million events is four million row images; a transaction's Changes
	// and row images may be reused once fn returns). It returns the holes
	// it found in the window once read to its end (as Holes says them);
	// its error stops the check: Check returns it. Check may call it a
	// second time, when a record's value must be compared with its row's
	// payload (compareValues): it must read the same window again.
	Scan func(fn func(binlog.Transaction) error) (holes []string, err error)
	// Schema, when set, keeps only the row changes of that database (a
	// run shares a server); empty: the profile's database.schema, or
	// every database.
	Schema string
	// Broker is the broker's log; nil: the witness is missing, and every
	// rule that needs it is INCONCLUSIVE. Check reads the topic's records
	// once, through EachRecord (so a Log of broker.OpenDataFS serves one
	// Check).
	Broker *broker.Log
	// Topic, when set, is the topic audited instead of the profile's
	// topic.name (the reference names one per run and scenario).
	Topic string
	// BrokerStart is the run window's start offset per partition (the
	// end offsets when the run began); a missing partition starts at 0.
	BrokerStart map[int32]int64
	// Client is the load client's history; nil: the answer rule does not
	// apply.
	Client []Request
	// End is when the run had settled (the liveness bound counts to it);
	// zero: the time of the window's last transaction.
	End time.Time
	// Liveness is the bound the pending rule applies, as the evidence
	// records it (a black-box bundle's liveness.bound); zero: the
	// profile's promises.liveness.
	Liveness time.Duration
	// Unsettled says the run was interrupted before the pipeline
	// settled: what only settling would have delivered (a pending event,
	// a group's lag, an effect still to come) is INCONCLUSIVE, never a
	// FAIL. What is wrong whatever comes later (a loss the progress
	// proves, a phantom, a mismatch, a duplicate effect) still fails.
	Unsettled bool
	// Holes are gaps a reader found in a witness outside this package (a
	// binlog cut short, a file missing), each said in a sentence: the
	// rules they could touch are INCONCLUSIVE.
	Holes []string
}

// Reason is one finding. GTID and Binlog ("file:pos") locate the
// transaction it rests on; Topic, Partition and Offset the record
// (Partition and Offset are -1 when no one record is meant).
type Reason struct {
	Rule      string `json:"rule"`
	Status    Status `json:"status"`
	Event     string `json:"event,omitempty"`
	GTID      string `json:"gtid,omitempty"`
	Binlog    string `json:"binlog,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Message   string `json:"message"`
}

func (r Reason) String() string {
	var where []string
	if r.GTID != "" {
		where = append(where, "gtid "+r.GTID+" at "+r.Binlog)
	}
	if r.Topic != "" {
		w := "topic " + r.Topic
		if r.Partition >= 0 {
			w += fmt.Sprintf(" partition %d", r.Partition)
		}
		if r.Offset >= 0 {
			w += fmt.Sprintf(" offset %d", r.Offset)
		}
		where = append(where, w)
	}
	s := fmt.Sprintf("%s %s: %s", r.Status, r.Rule, r.Message)
	if len(where) > 0 {
		s += " [" + strings.Join(where, "; ") + "]"
	}
	return s
}

// RuleResult is one rule's verdict.
type RuleResult struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	Count  int    `json:"count"` // reasons of the rule
}

// Stats are counts a report shows beside the verdict.
type Stats struct {
	Events      int `json:"events"`       // committed outbox rows of the topic
	OtherTopics int `json:"other_topics"` // committed rows a decoder routes elsewhere
	Records     int `json:"records"`      // records of the topic in the window
	Duplicates  int `json:"duplicates"`   // records beyond the first of an event
	Effects     int `json:"effects"`
	Unknown     int `json:"unknown_answers"` // client timeouts the binlog settled
}

// Result is the layer's verdict with every reason.
type Result struct {
	Status  Status       `json:"status"`
	Rules   []RuleResult `json:"rules"`
	Reasons []Reason     `json:"reasons"`
	// Notes are observations that do not change the verdict: duplicates
	// where they are allowed, with what the progress history says of them.
	Notes []Reason `json:"notes,omitempty"`
	Stats Stats    `json:"stats"`
	// Timeline tells the first lost event's story from the binlog
	// (timeline.go); nil when no event was lost for certain.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Check runs every rule on in. It returns an error only when it cannot
// check at all (no profile, a topic to audit that no one named); what the
// witnesses show, however bad, is a verdict.
func Check(in Input) (*Result, error) {
	if in.Profile == nil {
		return nil, fmt.Errorf("black-box check: no profile")
	}
	m, err := build(in)
	if err != nil {
		return nil, fmt.Errorf("black-box check: %w", err)
	}
	if m.topic == "" {
		return nil, fmt.Errorf("black-box check: no topic to audit (the profile's topic.name is empty)")
	}
	// The invariants read only the rebuilt tables (and the model's
	// transactions, for where), all of them once the binlog is read:
	// they run beside the reading of the broker's records and the other
	// rules, on a checker of their own, merged after, so that a
	// million-row anti-join takes the other core rather than the end of
	// the check. Of the holes they need only the binlog's.
	inv := &checker{m: m, in: in, applies: map[string]bool{}, binlogHole: m.binlogHoled(in)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inv.invariants()
	}()
	if err := m.readRecords(in); err != nil {
		<-done
		return nil, fmt.Errorf("black-box check: %w", err)
	}
	c := &checker{m: m, in: in, applies: map[string]bool{}}
	c.holes()
	// The order rule only reads the model (and the effects' index, made
	// before and shared, read only): it runs beside the others too.
	ord := &checker{m: m, in: in, applies: map[string]bool{}}
	if m.prof.Promises.Order == profile.OrderPerAggregate {
		ord.byEvent = c.effectIndex()
	}
	ordDone := make(chan struct{})
	go func() {
		defer close(ordDone)
		ord.order()
	}()
	c.commitAtomic()
	c.answer()
	c.delivery()
	c.phantom()
	c.recordMismatch()
	c.duplicate()
	c.effects()
	c.lag()
	c.progress()
	<-ordDone
	<-done
	// result orders the reasons by rule, stably: merged after, each
	// checker's stand where they would have.
	for _, other := range []*checker{ord, inv} {
		c.reasons = append(c.reasons, other.reasons...)
		c.notes = append(c.notes, other.notes...)
		for r := range other.applies {
			c.applies[r] = true
		}
	}
	return c.result(), nil
}

// checker collects reasons; applies says which rules the profile and the
// input ask for (the rest are N/A).
type checker struct {
	m       *model
	in      Input
	reasons []Reason
	notes   []Reason
	applies map[string]bool
	// binlogHole and brokerHole say a witness has a hole (holes.go).
	binlogHole, brokerHole bool
	// byEvent indexes the effects by event, once (effectIndex); groups
	// are the selected groups that committed on the topic (delivered).
	byEvent *effectIndex
	groups  []string
}

func (c *checker) apply(rules ...string) {
	for _, r := range rules {
		c.applies[r] = true
	}
}

func (c *checker) add(r Reason) { c.reasons = append(c.reasons, r) }

func (c *checker) result() *Result {
	order := map[string]int{}
	for i, r := range Rules {
		order[r.ID] = i
	}
	sort.SliceStable(c.reasons, func(i, j int) bool { return order[c.reasons[i].Rule] < order[c.reasons[j].Rule] })
	res := &Result{Status: Pass, Reasons: c.reasons, Notes: c.notes, Stats: c.m.stats, Timeline: c.timeline()}
	if res.Reasons == nil {
		res.Reasons = []Reason{}
	}
	for _, r := range Rules {
		rr := RuleResult{ID: r.ID, Status: NotApplicable}
		if c.applies[r.ID] {
			rr.Status = Pass
		}
		for _, reason := range c.reasons {
			if reason.Rule == r.ID {
				rr.Count++
				rr.Status = worse(rr.Status, reason.Status)
			}
		}
		res.Rules = append(res.Rules, rr)
		res.Status = worse(res.Status, rr.Status)
	}
	return res
}
