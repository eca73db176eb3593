// Package model is the verifier's replay model: a pure fold of one
// scenario's events (merged from its logs) over the state machines of the
// chain: outbox rows and their claim tokens, broker records, inbox,
// effects, offsets, orders and stock. Step is the step function, a short
// dispatch to one handler per event kind; it does no I/O, so the model can
// be fuzzed and benchmarked on its own. The checker (package checks) reads
// the violations, and its derivations read the state through the read API
// (read.go).
//
// The rules come in layers (spec.Layer), one file each, as rules.go lists
// them with their layer and a stable id:
//
//	delivery.go    any outbox pipeline: intents, records, inbox, effects, offsets
//	claimtoken.go  a relay with claim versions, claim ids and leases
//	business.go    this project's order service: orders, stock, idempotency
//
// harness.go handles the scenario driver's own events (seeds,
// observations, faults, live invariant results), finish.go the
// end-of-scenario checks, tables.go the replayed end state as tables.
// Each violation names the log and seq of the event that broke the rule.
package model

import (
	"slices"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// Model is the replayed state of one scenario.
type Model struct {
	faultPoints map[string]bool // declared by the scenario
	strs        map[string]string
	off         map[Rule]bool // the rules of the layers that are off
	tokenLayer  bool          // the claim-token layer is on
	calls       []CallEvent   // the call sweep's injections and records (calls.go)

	stock      map[string]int64
	seedStock  map[string]int64
	decrements map[string][]decrement
	skus       []string        // in seeding order
	orders     []Order         // in commit order
	orderIdx   map[int64]int32 // order id -> index in orders
	byID       map[string]*eventState
	rows       []*eventState // outbox rows in creation order
	keyIntent  string        // the scenario's intent e (see KeyIntent)

	records      map[recordKey]record
	recordOrder  []recordKey
	groups       []string
	pending      map[pendingKey]pendingRec
	pendingHeaps map[partKey]*offsetHeap
	inbox        map[inboxKey]struct{}
	inboxTrx     map[inboxKey]string // the transaction that wrote an inbox row, when said
	openCommits  map[inboxKey]int    // commit_unknown events not yet decided by a replay, by inbox row
	inboxOrder   []inboxKey
	notifs       []notification
	inboxNames   []string    // inbox consumers named by an inbox or effect event, in order seen (at most maxGroups)
	inboxCounts  []inboxUser // by index of inboxNames
	notifIDs     map[int64]bool

	consumerState // offsets, members, per-key order (offsets.go, ordering.go)

	replays      int64
	received     int64 // distinct records received
	rejects      int64 // inbox_reject events
	claims       int64
	doubleClaims int64
	relayCounts                      // publish outcomes, takeovers, overlaps (claimtoken.go)
	lastClaim    map[string]claimRef // claim id -> its latest claim (at most maxClaimIDs)
	requests     []Request           // first maxRequests kept
	nRequests    int64
	okOrderIDs   map[int64]bool // order ids answered with a 2xx
	statusCount  map[int64]int64
	invariants   map[string]int64 // live invariant events: id -> rows (last)
	invOrder     []string
	faults       []string
	rolledBack   []string // event ids of rolled-back order transactions (capped)
	events       int64

	// The business layer's own (answers.go): the client's requests, the
	// orders whose transaction rolled back, the seeded unit prices.
	clientReqs       []ClientRequest // first maxClientRequests kept
	nClientReqs      int64
	clientStatus     map[int64]int64 // the client's answers by status
	clientOKOrders   map[int64]bool  // order ids of the client's 2xx answers (capped)
	rolledBackDup    []string        // event ids of rollbacks on a duplicate key (1062; capped)
	rolledBackOrders map[int64]bool  // capped at maxRolledBackOrders
	seedPrice        map[string]int64

	violations []Violation
	perRule    map[Rule]int
	suppressed map[Rule]int

	chaosState     // the chaos scenario's figures (chaos.go)
	ownershipState // partition ownership and its gaps (ownership.go)
	proofState     // what the proof-boundary claims are derived from (proof.go)
	logOrder       // events waiting for their cause (logorder.go)

	// lastLine is each actor's latest line's time (unix nanoseconds) other
	// than a claim, by interned actor name: what it did next happened
	// after it (claimLease).
	lastLine map[string]int64
}

// New returns the empty state of a scenario that declares faultPoints (as
// in the evidence), which reports the rules of layers; nil or empty means
// every layer. A layer New does not know (see spec.Layers) turns nothing
// on. The state kept is the same whatever the layers.
func New(layers []spec.Layer, faultPoints []string) *Model {
	if len(layers) == 0 {
		layers = spec.Layers
	}
	off := map[Rule]bool{}
	for _, r := range Rules {
		if !slices.Contains(layers, r.Layer) {
			off[r.Rule] = true
		}
	}
	fp := map[string]bool{}
	for _, p := range faultPoints {
		fp[p] = true
	}
	return &Model{
		faultPoints:  fp,
		strs:         map[string]string{},
		off:          off,
		tokenLayer:   slices.Contains(layers, spec.LayerClaimToken),
		stock:        map[string]int64{},
		seedStock:    map[string]int64{},
		decrements:   map[string][]decrement{},
		orderIdx:     map[int64]int32{},
		byID:         map[string]*eventState{},
		records:      map[recordKey]record{},
		pending:      map[pendingKey]pendingRec{},
		pendingHeaps: map[partKey]*offsetHeap{},
		inbox:        map[inboxKey]struct{}{},
		inboxTrx:     map[inboxKey]string{},
		openCommits:  map[inboxKey]int{},
		consumerState: consumerState{
			gparts: map[partKey]*groupPart{}, members: map[memberKey]*memberPart{}, cur: map[string]current{},
			partEnd: map[topicPart]int64{}, recvVersion: map[aggKey]int64{}, effVersion: map[aggKey]int64{},
			crashed: map[string]bool{}, faultCommit: map[string]int64{},
		},
		notifIDs:    map[int64]bool{},
		okOrderIDs:  map[int64]bool{},
		statusCount: map[int64]int64{},
		invariants:  map[string]int64{},
		perRule:     map[Rule]int{},
		suppressed:  map[Rule]int{},
		lastClaim:   map[string]claimRef{},

		rolledBackOrders: map[int64]bool{},
		clientStatus:     map[int64]int64{},
		clientOKOrders:   map[int64]bool{},
		seedPrice:        map[string]int64{},
	}
}

// handler folds one event of its kind into the state.
type handler func(m *Model, e *evidence.Event, src Source)

// handlers has one handler per event kind, in the file of the layer whose
// events they are (the scenario driver's in harness.go).
var handlers = map[evidence.Kind]handler{
	evidence.KindSeedStock:    (*Model).stepSeedStock,  // harness.go
	evidence.KindSeedOutbox:   (*Model).stepSeedOutbox, // harness.go
	evidence.KindObserve:      (*Model).stepObserve,    // harness.go
	evidence.KindFault:        (*Model).stepFault,      // harness.go
	evidence.KindInvariant:    (*Model).stepInvariant,  // harness.go
	evidence.KindHeal:         (*Model).stepHeal,       // chaos.go
	evidence.KindProcessStart: (*Model).stepProcess,    // chaos.go
	evidence.KindProcessExit:  (*Model).stepProcess,    // chaos.go
	evidence.KindFaultSkipped: (*Model).stepSkipped,    // chaos.go

	evidence.KindOrderCommitted:  (*Model).stepOrderCommitted,  // business.go
	evidence.KindOutboxWritten:   (*Model).stepOutboxWritten,   // business.go
	evidence.KindOrderRolledBack: (*Model).stepOrderRolledBack, // business.go
	evidence.KindOrderReplayed:   (*Model).stepOrderAnswered,   // business.go
	evidence.KindOrderRejected:   (*Model).stepOrderAnswered,   // business.go
	evidence.KindOrderRequest:    (*Model).stepOrderRequest,    // answers.go
	evidence.KindOrderAdvanced:   (*Model).stepOrderAdvanced,   // ordering.go

	evidence.KindClaim:        (*Model).stepClaim,        // claimtoken.go
	evidence.KindLeaseExpired: (*Model).stepLeaseExpired, // claimtoken.go

	evidence.KindPublish:        (*Model).stepPublish,        // delivery.go
	evidence.KindPublishUnknown: (*Model).stepPublishUnknown, // delivery.go
	evidence.KindMark:           (*Model).stepMark,           // delivery.go
	evidence.KindReceive:        (*Model).stepReceive,        // delivery.go
	evidence.KindInboxInsert:    (*Model).stepInboxInsert,    // delivery.go
	evidence.KindInboxReject:    (*Model).stepInboxReject,    // delivery.go
	evidence.KindEffect:         (*Model).stepEffect,         // delivery.go
	evidence.KindOffsetCommit:   (*Model).stepOffsetCommit,   // delivery.go

	evidence.KindPartitionAssigned: (*Model).stepOwnership, // ownership.go
	evidence.KindPartitionRevoked:  (*Model).stepOwnership, // ownership.go
	evidence.KindPartitionLost:     (*Model).stepOwnership, // ownership.go
	evidence.KindGroupJoin:         (*Model).stepOwnership, // ownership.go

	evidence.KindEffectRolledBack: (*Model).stepEffectRolledBack, // effects.go
	evidence.KindCommitUnknown:    (*Model).stepCommitUnknown,    // effects.go

	evidence.KindCallFailed: (*Model).stepCallFailed, // calls.go
}

// Step folds one event into the state.
func (m *Model) Step(e *evidence.Event, src Source) {
	m.events++
	if h := handlers[e.Kind]; h != nil {
		h(m, e, src)
	}
	m.noteCall(e) // calls.go
	// A relay logs the claims of one transaction one after the other, all
	// after its COMMIT: none of them bounds when the next was made. Its
	// last other line came before the transaction.
	if e.Kind != evidence.KindClaim {
		m.noteLine(e)
	}
}

// noteLine keeps e's time as its actor's last line (lastLine).
func (m *Model) noteLine(e *evidence.Event) {
	if len(m.lastLine) < maxActors {
		if m.lastLine == nil {
			m.lastLine = map[string]int64{}
		}
		m.lastLine[m.intern(e.Actor)] = e.Time.UnixNano()
	} else if _, ok := m.lastLine[e.Actor]; ok {
		m.lastLine[e.Actor] = e.Time.UnixNano()
	}
}

// maxActors bounds lastLine: a history with more actor names than that
// keeps the first ones'.
const maxActors = 4096

// setKeyIntent makes in the scenario's intent e when there is none yet.
func (m *Model) setKeyIntent(in *intent) {
	if in != nil && m.keyIntent == "" {
		m.keyIntent = in.id
	}
}
