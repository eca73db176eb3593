package checks

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The replay model: a pure fold of one scenario's events (merged from its
// logs) over the state machines of the chain. Step is the step function;
// it does no I/O, so the model can be fuzzed and benchmarked on its own.
//
// Rules (stable ids; each violation names the log and seq of the event):
//
//	unknown-intent           claim/publish/mark/lease_expired of an event id that no
//	                         order_committed, seed_outbox or outbox_written created
//	intent-outside-order-tx  an order_committed whose writes lack "outbox", or an
//	                         outbox_written event (the intent committed apart)
//	intent-id-mismatch       an order_committed or order_rolled_back whose event_id is not e-<order_id>
//	duplicate-intent         a second intent with one event_id (the unique key forbids it)
//	duplicate-order          a second order_committed for one order id
//	claim-on-live-lease      a claim of a SENT row, or of a row whose previous claim's
//	                         lease was still live (lease_until after the new claim's
//	                         time) and not expired by a lease_expired event
//	claim-version-skew       a claim whose claim_version is not the row's + 1
//	claim-state-mismatch     a claim whose state_before is not the row's state
//	intent-mismatch          an event's order_id differs from the intent's aggregate id
//	publish-without-claim    a publish with a token that never claimed the row
//	duplicate-record         two successful publishes at one topic/partition/offset
//	stale-token-mark         a mark with rows>=1 whose token is not the row's current claim
//	sent-without-publish     a mark with rows>=1 with no earlier successful publish
//	                         of that same claim
//	lease-expired-not-claimed a lease_expired with rows>=1 on a row that is not CLAIMED
//	record-mismatch          a record received with another event id than was published
//	receive-without-publish  a received record that no publish produced (end of scenario)
//	duplicate-inbox          a second inbox_insert for one (consumer, event_id)
//	reject-without-inbox     an inbox_reject with no inbox row to conflict with
//	effect-without-inbox     an effect with no inbox row for its (consumer, event_id)
//	duplicate-effect         a second effect for one event_id
//	duplicate-notification   a second effect with one notification_id
//	offset-before-effect     an offset_commit covering a received record whose effect or
//	                         inbox_reject was not recorded yet
//	fault-undeclared         a fault event at a point the scenario does not declare
//	fault-mismatch           a fault event naming an unknown event id, or a claim token that never
//	                         claimed its event id
//	impossible-rows          a mark or lease_expired reporting more than one row (event_id is unique)
//	lease-expired-mismatch   a lease_expired with rows>=1 naming another claim than the row's current one
//	inbox-record-mismatch    an inbox_insert/inbox_reject naming a record not received with its event id
//	offset-not-received      an offset_commit of offset n by a group that never received record n-1
//	observe-mismatch         an observe of a state and claim_version the row never held (end of scenario)
//	stock-mismatch           orders whose stock values do not chain from the seed by their quantities
//	                         (end of scenario; ordered by stock, since concurrent orders may log out of order)

// Source locates an event: the log as named in the evidence, its line and
// its seq.
type Source struct {
	Log  string
	Line int64
	Seq  int64
}

func (s Source) String() string {
	if s.Log == "" {
		return fmt.Sprintf("seq %d", s.Seq)
	}
	return fmt.Sprintf("%s seq %d", s.Log, s.Seq)
}

// Violation is one illegal transition found by the model.
type Violation struct {
	Rule    string
	Status  Status // Fail, or Inconclusive when truncation may explain it
	Source  Source
	EventID string
	Message string
}

// maxViolationsPerRule bounds what the model keeps of one rule; the rest
// is counted (hostile input must not grow memory without bound).
const maxViolationsPerRule = 50

type token struct {
	version int64
	id      string
}

// tokenState is what happened to one claim token of a row.
type tokenState struct {
	token
	claimed   bool
	published bool  // at least one successful publish
	marked    bool  // at least one mark
	markRows  int64 // rows of the token's last mark
	markAt    int64 // event number of that mark
}

// eventState is everything known about one event id: its outbox row (when
// hasRow) and what the consumer side did with it. One map entry per event
// id keeps the model's memory and hashing small.
type eventState struct {
	id string

	hasRow       bool
	leaseExpired bool
	decoy        bool
	touched      bool // named by a claim, publish, mark or lease_expired
	aggregateID  int64
	state        string
	claimVersion int64
	claimID      string // "" = NULL
	claimActor   string
	leaseUntil   int64 // unix nanoseconds
	sentVersion  int64 // claim_version when the row turned SENT (sent: it did)
	sent         bool
	tokens       []tokenState

	deliveries, effects, rejects int32
	pending                      []pendingKey
	*observed                    // nil until seeded or observed
}

// observed holds what only a few event ids have: a seed and observations.
type observed struct {
	seeded  *observation // the seed_outbox values of a seeded row
	states  []string     // collapsed observed states
	lastObs *observation
	all     []observedAt // every observation (capped), checked by Finish
}

type observedAt struct {
	observation
	src Source
}

func (es *eventState) obs() *observed {
	if es.observed == nil {
		es.observed = &observed{}
	}
	return es.observed
}

// intent is an outbox row (an eventState with hasRow).
type intent = eventState

func (in *eventState) token(t token) *tokenState {
	for i := range in.tokens {
		if in.tokens[i].token == t {
			return &in.tokens[i]
		}
	}
	return nil
}

func (in *eventState) addToken(t token) *tokenState {
	if ts := in.token(t); ts != nil {
		return ts
	}
	in.tokens = append(in.tokens, tokenState{token: t})
	return &in.tokens[len(in.tokens)-1]
}

type observation struct {
	state         string
	claimVersion  int64
	orderID       *int64
	payloadSHA256 string
}

// orderOf returns the order with id, or nil.
func (m *Model) orderOf(id int64) *order {
	if i, ok := m.orderIdx[id]; ok {
		return &m.orders[i]
	}
	return nil
}

// order is what one order transaction wrote, table by table.
type order struct {
	id       int64
	sku      string
	quantity int64
	key      string
	status   int64
	row      bool // orders
	lines    bool // order_lines
	idem     bool // idempotency_records
}

type recordKey struct {
	topic     string
	partition int32
	offset    int64
}

type record struct {
	pub      *eventState // the published event (when published)
	rec      *eventState // the event of the first receive
	received int32
	groups   uint64 // consumer groups (bit i: m.groups[i]) that received it
	publishd bool
	recvLine int64  // where the first receive is, for a finding
	recvLog  string // (shared with the evidence's log path)
	recvSeq  int64
}

type inboxKey struct{ consumer, eventID string }

type notification struct {
	id       int64
	consumer string
	eventID  string
	orderID  int64
}

type pendingKey struct {
	group string
	rec   recordKey
}

type partKey struct {
	group, topic string
	partition    int32
}

// offsetHeap is a min-heap of pending offsets of one partition; settled
// entries are dropped lazily.
type offsetHeap []int64

func (h offsetHeap) Len() int           { return len(h) }
func (h offsetHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h offsetHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *offsetHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *offsetHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type pendingRec struct {
	ev  *eventState
	src Source
}

// decrement is one order's stock write.
type decrement struct {
	stock, quantity int64
	src             Source
}

// request summarizes one answer of the order service.
type request struct {
	kind    evidence.Kind
	status  int64
	orderID *int64
}

// Model is the replayed state of one scenario.
type Model struct {
	faultPoints map[string]bool // declared by the scenario
	strs        map[string]string

	stock      map[string]int64
	seedStock  map[string]int64
	decrements map[string][]decrement
	skus       []string        // in seeding order
	orders     []order         // in commit order
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
	inboxOrder   []inboxKey
	notifs       []notification
	notifIDs     map[int64]bool

	replays      int64
	claims       int64
	doubleClaims int64
	requests     []request // first maxRequests kept
	nRequests    int64
	okOrderIDs   map[int64]bool // order ids answered with a 2xx
	statusCount  map[int64]int64
	invariants   map[string]int64 // live invariant events: id -> rows (last)
	invOrder     []string
	faults       []string
	rolledBack   []string // event ids of rolled-back order transactions (capped)
	events       int64

	violations []Violation
	perRule    map[string]int
	suppressed map[string]int
}

const maxRequests = 4

// NewModel returns the empty state of a scenario that declares
// faultPoints (as in the evidence).
func NewModel(faultPoints []string) *Model {
	fp := map[string]bool{}
	for _, p := range faultPoints {
		fp[p] = true
	}
	return &Model{
		faultPoints:  fp,
		strs:         map[string]string{},
		stock:        map[string]int64{},
		seedStock:    map[string]int64{},
		decrements:   map[string][]decrement{},
		orderIdx:     map[int64]int32{},
		byID:         map[string]*eventState{},
		records:      map[recordKey]record{},
		pending:      map[pendingKey]pendingRec{},
		pendingHeaps: map[partKey]*offsetHeap{},
		inbox:        map[inboxKey]struct{}{},
		notifIDs:     map[int64]bool{},
		okOrderIDs:   map[int64]bool{},
		statusCount:  map[int64]int64{},
		invariants:   map[string]int64{},
		perRule:      map[string]int{},
		suppressed:   map[string]int{},
	}
}

// maxInterned bounds the interning table (hostile input with ever new
// names must not grow it without bound).
const maxInterned = 4096

// intern returns one shared copy of a short, repeated string (topic,
// consumer, claim id, actor, sku): a copy that owns its bytes, never a
// slice of a decoded batch.
func (m *Model) intern(s string) string {
	if v, ok := m.strs[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(m.strs) < maxInterned {
		m.strs[v] = v
	}
	return v
}

// ev returns the state of event id, creating it.
func (m *Model) ev(id string) *eventState {
	if es := m.byID[id]; es != nil {
		return es
	}
	es := &eventState{id: strings.Clone(id)}
	m.byID[es.id] = es
	return es
}

// intentOf returns the outbox row of event id, or nil.
func (m *Model) intentOf(id string) *intent {
	if es := m.byID[id]; es != nil && es.hasRow {
		return es
	}
	return nil
}

// stateOf returns the state of event id without creating it (the zero
// state when unknown).
func (m *Model) stateOf(id string) *eventState {
	if es := m.byID[id]; es != nil {
		return es
	}
	return &eventState{}
}

func val[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}

func (m *Model) violate(rule string, src Source, eventID, format string, args ...any) {
	m.violateStatus(Fail, rule, src, eventID, format, args...)
}

func (m *Model) violateStatus(st Status, rule string, src Source, eventID, format string, args ...any) {
	if m.perRule[rule] >= maxViolationsPerRule {
		m.suppressed[rule]++
		return
	}
	m.perRule[rule]++
	m.violations = append(m.violations, Violation{
		Rule: rule, Status: st, Source: src, EventID: strings.Clone(eventID), Message: fmt.Sprintf(format, args...),
	})
}

// Violations returns what the model found, in event order, and how many
// more of each rule were found beyond the ones kept.
func (m *Model) Violations() ([]Violation, map[string]int) { return m.violations, m.suppressed }

// Step folds one event into the state.
func (m *Model) Step(e *evidence.Event, src Source) {
	m.events++
	switch e.Kind {
	case evidence.KindSeedStock:
		sku := m.intern(e.SKU)
		if _, ok := m.seedStock[sku]; !ok {
			m.seedStock[sku] = val(e.Stock)
			m.skus = append(m.skus, sku)
		}
		m.stock[sku] = val(e.Stock)
	case evidence.KindSeedOutbox:
		agg := val(e.OrderID)
		in := m.newIntent(e.EventID, agg, src)
		if in == nil {
			return
		}
		in.state = internState(e.State)
		in.claimVersion = val(e.ClaimVersion)
		in.decoy = agg == -1
		in.obs().seeded = &observation{state: in.state, claimVersion: in.claimVersion, orderID: evidence.Ptr(agg),
			payloadSHA256: strings.Clone(e.PayloadSHA256)}
		if !in.decoy && m.keyIntent == "" {
			m.keyIntent = in.id
		}
	case evidence.KindOrderCommitted:
		m.orderCommitted(e, src)
	case evidence.KindOutboxWritten:
		m.violate("intent-outside-order-tx", src, e.EventID,
			"the intent %s of order %d was committed in a transaction of its own, after the order", e.EventID, val(e.OrderID))
		if in := m.newIntent(e.EventID, val(e.OrderID), src); in != nil && m.keyIntent == "" {
			m.keyIntent = in.id
		}
	case evidence.KindOrderRolledBack:
		if e.EventID != "" && len(m.rolledBack) < 64 {
			m.rolledBack = append(m.rolledBack, strings.Clone(e.EventID))
		}
		if e.OrderID != nil && e.EventID != "" && e.EventID != evidence.EventIDFor(*e.OrderID) {
			m.violate("intent-id-mismatch", src, e.EventID, "order %d tried to write intent %q, want %q",
				*e.OrderID, e.EventID, evidence.EventIDFor(*e.OrderID))
		}
		m.request(e)
	case evidence.KindOrderReplayed, evidence.KindOrderRejected:
		m.request(e)
	case evidence.KindClaim:
		m.claim(e, src)
	case evidence.KindPublish:
		m.publish(e, src)
	case evidence.KindMark:
		m.mark(e, src)
	case evidence.KindLeaseExpired:
		in := m.intentFor(e, src)
		if in == nil {
			return
		}
		in.touched = true
		rows := val(e.Rows)
		m.oneRow(e, rows, src)
		if rows >= 1 {
			if in.state != evidence.StateClaimed {
				m.violate("lease-expired-not-claimed", src, e.EventID,
					"lease of %s expired by SQL (rows=%d) while the row is %s, not CLAIMED", e.EventID, rows, in.state)
			} else if val(e.ClaimVersion) != in.claimVersion || e.ClaimID != in.claimID {
				m.violate("lease-expired-mismatch", src, e.EventID,
					"lease_expired names claim v%d/%s of %s, but the lease it aged belongs to v%d/%s",
					val(e.ClaimVersion), e.ClaimID, e.EventID, in.claimVersion, in.claimID)
			}
			in.leaseExpired = true
		}
	case evidence.KindReceive:
		m.receive(e, src)
	case evidence.KindInboxInsert:
		m.inboxRecord(e, src)
		es := m.ev(e.EventID)
		k := inboxKey{m.intern(e.Consumer), es.id}
		if _, dup := m.inbox[k]; dup {
			m.violate("duplicate-inbox", src, e.EventID,
				"a second inbox row for (%s, %s): the unique key forbids it", e.Consumer, e.EventID)
			return
		}
		m.inbox[k] = struct{}{}
		m.inboxOrder = append(m.inboxOrder, k)
	case evidence.KindInboxReject:
		m.inboxRecord(e, src)
		if _, ok := m.inbox[inboxKey{e.Consumer, e.EventID}]; !ok {
			m.violate("reject-without-inbox", src, e.EventID,
				"inbox_reject of (%s, %s) with no inbox row to conflict with", e.Consumer, e.EventID)
		}
		es := m.ev(e.EventID)
		es.rejects++
		rec := recordKey{e.Topic, val(e.Partition), val(e.Offset)}
		for _, g := range m.groups {
			delete(m.pending, pendingKey{g, rec})
		}
		es.pending = slices.DeleteFunc(es.pending, func(pk pendingKey) bool { _, p := m.pending[pk]; return !p })
	case evidence.KindEffect:
		m.effect(e, src)
	case evidence.KindOffsetCommit:
		m.offsetCommit(e, src)
	case evidence.KindObserve:
		o := m.ev(e.EventID).obs()
		st := internState(e.State)
		if n := len(o.states); (n == 0 || o.states[n-1] != st) && n < 64 {
			o.states = append(o.states, st)
		}
		var oid *int64
		if e.OrderID != nil {
			oid = evidence.Ptr(*e.OrderID)
		}
		o.lastObs = &observation{state: st, claimVersion: val(e.ClaimVersion), orderID: oid,
			payloadSHA256: strings.Clone(e.PayloadSHA256)}
		if len(o.all) < 64 {
			o.all = append(o.all, observedAt{*o.lastObs, src})
		}
	case evidence.KindFault:
		if !m.faultPoints[e.Point] {
			m.violate("fault-undeclared", src, e.EventID,
				"a fault was injected at %q, which the scenario does not declare", e.Point)
		}
		if e.EventID != "" && m.byID[e.EventID] == nil {
			m.violate("fault-mismatch", src, e.EventID, "the fault at %s names %s, an event id no earlier event mentions", e.Point, e.EventID)
		} else if e.EventID != "" && e.ClaimVersion != nil {
			in := m.intentOf(e.EventID)
			var ts *tokenState
			if in != nil {
				ts = in.token(token{*e.ClaimVersion, e.ClaimID})
			}
			if ts == nil || !ts.claimed {
				m.violate("fault-mismatch", src, e.EventID,
					"the fault at %s says its actor held claim v%d/%s of %s, which never claimed it", e.Point, *e.ClaimVersion, e.ClaimID, e.EventID)
			}
		}
		if len(m.faults) < 64 {
			m.faults = append(m.faults, strings.Clone(e.Point))
		}
	case evidence.KindInvariant:
		id := e.Invariant
		if _, ok := m.invariants[id]; !ok {
			if len(m.invOrder) >= 256 {
				return
			}
			id = strings.Clone(id)
			m.invOrder = append(m.invOrder, id)
		} else {
			id = m.invOrder[slices.Index(m.invOrder, id)] // the stored key, not the batch's bytes
		}
		m.invariants[id] = val(e.Rows)
	}
}

func (m *Model) newIntent(eventID string, agg int64, src Source) *intent {
	es := m.ev(eventID)
	if es.hasRow {
		m.violate("duplicate-intent", src, eventID, "a second outbox intent with event_id %s: the unique key forbids it", eventID)
		return nil
	}
	es.hasRow = true
	es.aggregateID = agg
	es.state = evidence.StatePending
	m.rows = append(m.rows, es)
	return es
}

func (m *Model) request(e *evidence.Event) {
	m.nRequests++
	st := int64(e.Status)
	m.statusCount[st]++
	if st >= 200 && st < 300 && e.OrderID != nil {
		m.okOrderIDs[*e.OrderID] = true
	}
	if len(m.requests) < maxRequests {
		r := request{kind: e.Kind, status: st}
		if e.OrderID != nil {
			r.orderID = evidence.Ptr(*e.OrderID)
		}
		m.requests = append(m.requests, r)
	}
}

func (m *Model) orderCommitted(e *evidence.Event, src Source) {
	m.request(e)
	id := val(e.OrderID)
	var row, lines, idem, stock, outbox bool
	for _, w := range e.Writes {
		switch w {
		case evidence.WriteOrders:
			row = true
		case evidence.WriteOrderLines:
			lines = true
		case evidence.WriteIdempotency:
			idem = true
		case evidence.WriteStock:
			stock = true
		case evidence.WriteOutbox:
			outbox = true
		}
	}
	if !outbox {
		m.violate("intent-outside-order-tx", src, e.EventID,
			"order %d committed without its outbox intent in the same transaction (writes %v)", id, e.Writes)
	}
	if e.EventID != evidence.EventIDFor(id) {
		m.violate("intent-id-mismatch", src, e.EventID, "order %d committed intent %q, want %q", id, e.EventID, evidence.EventIDFor(id))
	}
	if _, dup := m.orderIdx[id]; dup {
		m.violate("duplicate-order", src, e.EventID, "order %d committed twice", id)
		return
	}
	sku := m.intern(e.SKU)
	m.orderIdx[id] = int32(len(m.orders))
	m.orders = append(m.orders, order{id: id, sku: sku, quantity: val(e.Quantity), key: strings.Clone(e.Key), status: int64(e.Status),
		row: row, lines: lines, idem: idem})
	if stock {
		// Concurrent orders may log in another order than they committed:
		// the stock left is the lowest any of them reported.
		left := val(e.Stock)
		if cur, ok := m.stock[sku]; !ok || left < cur {
			m.stock[sku] = left
		}
		if _, seeded := m.seedStock[sku]; seeded && len(m.decrements[sku]) < 1<<20 {
			m.decrements[sku] = append(m.decrements[sku], decrement{stock: left, quantity: val(e.Quantity), src: src})
		}
	}
	if outbox {
		if in := m.newIntent(e.EventID, id, src); in != nil && m.keyIntent == "" {
			m.keyIntent = in.id
		}
	}
}

// intentFor returns the intent an event names, or records unknown-intent.
func (m *Model) intentFor(e *evidence.Event, src Source) *intent {
	in := m.intentOf(e.EventID)
	if in == nil {
		m.violate("unknown-intent", src, e.EventID,
			"%s of %s, an event id that no order_committed, seed_outbox or outbox_written created", e.Kind, e.EventID)
		return nil
	}
	if e.OrderID != nil && *e.OrderID != in.aggregateID {
		m.violate("intent-mismatch", src, e.EventID,
			"%s of %s says order %d, the intent's aggregate is %d", e.Kind, e.EventID, *e.OrderID, in.aggregateID)
	}
	return in
}

func (m *Model) claim(e *evidence.Event, src Source) {
	m.claims++
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	v := val(e.ClaimVersion)
	switch {
	case in.state == evidence.StateSent:
		m.violate("claim-on-live-lease", src, e.EventID, "claim v%d of %s, which is already SENT", v, e.EventID)
	case in.state == evidence.StateClaimed && !in.leaseExpired && in.leaseUntil > e.Time.UnixNano():
		m.violate("claim-on-live-lease", src, e.EventID,
			"claim v%d of %s by %s at %s while v%d of %s holds a live lease until %s (not expired)",
			v, e.EventID, e.Actor, e.Time.Format(time.RFC3339Nano), in.claimVersion, in.claimActor,
			time.Unix(0, in.leaseUntil).UTC().Format(time.RFC3339Nano))
		if e.Actor != in.claimActor {
			m.doubleClaims++
		}
	}
	if v != in.claimVersion+1 {
		m.violate("claim-version-skew", src, e.EventID, "claim of %s has claim_version %d, want %d (the row's + 1)",
			e.EventID, v, in.claimVersion+1)
	}
	if e.StateBefore != in.state {
		m.violate("claim-state-mismatch", src, e.EventID, "claim of %s says state_before %s, the row was %s",
			e.EventID, e.StateBefore, in.state)
	}
	in.state = evidence.StateClaimed
	in.claimVersion = v
	in.claimID = m.intern(e.ClaimID)
	in.claimActor = m.intern(e.Actor)
	in.leaseUntil = val(e.LeaseUntil).UnixNano()
	in.leaseExpired = false
	in.addToken(token{v, in.claimID}).claimed = true
}

func (m *Model) publish(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	tk := token{val(e.ClaimVersion), e.ClaimID}
	ts := in.token(tk)
	if ts == nil || !ts.claimed {
		m.violate("publish-without-claim", src, e.EventID,
			"publish of %s with token v%d/%s, which never claimed it", e.EventID, tk.version, tk.id)
	}
	if e.Partition == nil || e.Offset == nil {
		return // refused by the broker: no record
	}
	// Keys stored in maps must own their bytes: assigning to an existing
	// string key replaces the stored key, and a substring of a decoded
	// batch would keep the whole batch alive.
	k := recordKey{m.intern(e.Topic), *e.Partition, *e.Offset}
	r, seen := m.records[k]
	if !seen {
		m.recordOrder = append(m.recordOrder, k)
	}
	if r.publishd {
		m.violate("duplicate-record", src, e.EventID, "a second record at %s/%d@%d: the broker assigns an offset once",
			e.Topic, *e.Partition, *e.Offset)
		return
	}
	r.publishd = true
	r.pub = in
	if r.rec != nil && r.rec != in {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was received as %s but published as %s",
			e.Topic, *e.Partition, *e.Offset, r.rec.id, in.id)
	}
	m.records[k] = r
	if ts == nil {
		tk.id = m.intern(tk.id)
		ts = in.addToken(tk)
	}
	ts.published = true
}

func (m *Model) mark(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	rows := val(e.Rows)
	tk := token{val(e.ClaimVersion), e.ClaimID}
	ts := in.token(tk)
	if ts == nil {
		tk.id = m.intern(tk.id)
		ts = in.addToken(tk)
	}
	ts.marked, ts.markRows, ts.markAt = true, rows, m.events
	m.oneRow(e, rows, src)
	if rows < 1 {
		return
	}
	if tk.version != in.claimVersion || tk.id != in.claimID {
		m.violate("stale-token-mark", src, e.EventID,
			"mark of %s with token v%d/%s hit %d row(s), but the current claim is v%d/%s",
			e.EventID, tk.version, tk.id, rows, in.claimVersion, in.claimID)
	}
	if !ts.published {
		m.violate("sent-without-publish", src, e.EventID,
			"mark of %s to SENT with token v%d/%s before any successful publish of that claim", e.EventID, tk.version, tk.id)
	}
	if !in.sent {
		in.sent, in.sentVersion = true, in.claimVersion
	}
	in.state = evidence.StateSent
}

func (m *Model) receive(e *evidence.Event, src Source) {
	k := recordKey{m.intern(e.Topic), val(e.Partition), val(e.Offset)}
	r, seen := m.records[k]
	if !seen {
		m.recordOrder = append(m.recordOrder, k)
	}
	es := m.ev(e.EventID)
	if r.received > 0 {
		m.replays++
	} else {
		r.rec = es
		r.recvLog, r.recvLine, r.recvSeq = src.Log, src.Line, src.Seq
		es.deliveries++
	}
	r.received++
	m.records[k] = r
	if r.publishd && r.pub != es {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was published as %s but received as %s",
			e.Topic, k.partition, k.offset, r.pub.id, e.EventID)
	} else if r.rec != es {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was received as %s and as %s",
			e.Topic, k.partition, k.offset, r.rec.id, e.EventID)
	}
	if es.hasRow && e.OrderID != nil && *e.OrderID != es.aggregateID {
		m.violate("intent-mismatch", src, e.EventID, "receive of %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, es.aggregateID)
	}
	group := m.intern(e.Consumer)
	gi := slices.Index(m.groups, group)
	if gi < 0 && len(m.groups) < 64 {
		gi = len(m.groups)
		m.groups = append(m.groups, group)
	}
	if gi >= 0 {
		r.groups |= 1 << gi
		m.records[k] = r
	}
	pk := pendingKey{group, k}
	if _, ok := m.pending[pk]; !ok {
		pp := partKey{group, k.topic, k.partition}
		h := m.pendingHeaps[pp]
		if h == nil {
			h = &offsetHeap{}
			m.pendingHeaps[pp] = h
		}
		heap.Push(h, k.offset)
		r.rec.pending = append(r.rec.pending, pk)
	}
	m.pending[pk] = pendingRec{ev: r.rec, src: src}
}

func (m *Model) effect(e *evidence.Event, src Source) {
	es := m.ev(e.EventID)
	consumer := m.intern(e.Consumer)
	if _, ok := m.inbox[inboxKey{consumer, es.id}]; !ok {
		m.violate("effect-without-inbox", src, e.EventID,
			"effect for %s committed with no inbox row for (%s, %s)", e.EventID, e.Consumer, e.EventID)
	}
	es.effects++
	if es.effects > 1 {
		m.violate("duplicate-effect", src, e.EventID, "effect #%d for %s: the business effect happened more than once", es.effects, e.EventID)
	}
	nid := val(e.NotificationID)
	if m.notifIDs[nid] {
		m.violate("duplicate-notification", src, e.EventID, "notification id %d recorded twice", nid)
	} else {
		m.notifIDs[nid] = true
		m.notifs = append(m.notifs, notification{id: nid, consumer: consumer, eventID: es.id, orderID: val(e.OrderID)})
	}
	if es.hasRow && e.OrderID != nil && *e.OrderID != es.aggregateID {
		m.violate("intent-mismatch", src, e.EventID, "effect for %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, es.aggregateID)
	}
	for _, pk := range es.pending {
		delete(m.pending, pk)
	}
	es.pending = nil
}

func (m *Model) offsetCommit(e *evidence.Event, src Source) {
	next := val(e.Offset)
	if next > 0 {
		r := m.records[recordKey{e.Topic, val(e.Partition), next - 1}]
		gi := slices.Index(m.groups, e.Consumer)
		if gi < 0 || r.groups&(1<<gi) == 0 {
			m.violate("offset-not-received", src, "",
				"group %s committed offset %d of %s/%d, but never received the record at offset %d",
				e.Consumer, next, e.Topic, val(e.Partition), next-1)
		}
	}
	pp := partKey{e.Consumer, e.Topic, val(e.Partition)}
	h := m.pendingHeaps[pp]
	if h == nil {
		return
	}
	for h.Len() > 0 && (*h)[0] < next {
		off := heap.Pop(h).(int64)
		pk := pendingKey{pp.group, recordKey{pp.topic, pp.partition, off}}
		p, ok := m.pending[pk]
		if !ok {
			continue // settled
		}
		delete(m.pending, pk)
		m.violate("offset-before-effect", src, p.ev.id,
			"offset %d committed for %s/%d (group %s) before the effect or inbox_reject of the record at offset %d (%s, received at %s)",
			next, pp.topic, pp.partition, pp.group, off, p.ev.id, p.src)
	}
}

// oneRow: event_id is the outbox's unique key, so an UPDATE by event id
// changes at most one row.
func (m *Model) oneRow(e *evidence.Event, rows int64, src Source) {
	if rows > 1 {
		m.violate("impossible-rows", src, e.EventID, "%s of %s reports %d rows; an update by the unique event_id changes at most 1",
			e.Kind, e.EventID, rows)
	}
}

// inboxRecord: an inbox decision names the record it was made for, which
// its consumer must have received with that event id.
func (m *Model) inboxRecord(e *evidence.Event, src Source) {
	r, ok := m.records[recordKey{e.Topic, val(e.Partition), val(e.Offset)}]
	if !ok || r.received == 0 || r.rec == nil || r.rec.id != e.EventID {
		m.violate("inbox-record-mismatch", src, e.EventID,
			"%s of %s names record %s/%d@%d, which was not received with that event id", e.Kind, e.EventID,
			e.Topic, val(e.Partition), val(e.Offset))
	}
}

// Finish runs the end-of-scenario checks. truncated says that a log of the
// scenario was cut: a missing cause may then be in the lost tail, so those
// findings are inconclusive rather than failures.
func (m *Model) Finish(truncated bool) {
	st := Fail
	if truncated {
		st = Inconclusive
	}
	for _, es := range m.rows {
		if es.observed == nil {
			continue
		}
		for _, o := range es.all {
			if why := es.neverHeld(o.observation); why != "" {
				m.violateStatus(st, "observe-mismatch", o.src, es.id, "observed %s v%d of %s, but %s", o.state, o.claimVersion, es.id, why)
			}
		}
	}
	for id, es := range m.byID {
		if !es.hasRow && es.observed != nil && len(es.all) > 0 {
			m.violateStatus(st, "observe-mismatch", es.all[0].src, id, "observed %s, a row that never existed", id)
		}
	}
	m.checkStock(st)
	for _, k := range m.recordOrder {
		r := m.records[k]
		if r.received > 0 && !r.publishd {
			m.violateStatus(st, "receive-without-publish", Source{Log: r.recvLog, Line: r.recvLine, Seq: r.recvSeq}, r.rec.id,
				"record %s/%d@%d (%s) was received but no publish produced it", k.topic, k.partition, k.offset, r.rec.id)
		}
	}
}

// neverHeld says why a row never was in the observed state ("" when it was).
func (es *eventState) neverHeld(o observation) string {
	if o.orderID != nil && *o.orderID != es.aggregateID {
		return fmt.Sprintf("its aggregate is %d, not %d", es.aggregateID, *o.orderID)
	}
	if es.observed != nil && es.seeded != nil && o.state == es.seeded.state && o.claimVersion == es.seeded.claimVersion {
		return ""
	}
	switch o.state {
	case evidence.StatePending:
		if es.seeded == nil && o.claimVersion == 0 {
			return ""
		}
	case evidence.StateClaimed:
		for _, t := range es.tokens {
			if t.claimed && t.version == o.claimVersion {
				return ""
			}
		}
	case evidence.StateSent:
		if es.sent && es.sentVersion == o.claimVersion {
			return ""
		}
	}
	return "no event put the row in that state with that claim_version"
}

// checkStock: each order that decremented a SKU left stock = the stock
// before it minus its quantity. Orders are put in decrement order by their
// stock (concurrent requests may log in another order than they committed).
func (m *Model) checkStock(st Status) {
	for _, sku := range m.skus {
		ds := m.decrements[sku]
		if len(ds) == 0 {
			continue
		}
		slices.SortStableFunc(ds, func(a, b decrement) int { return cmpInt64(b.stock, a.stock) })
		left := m.seedStock[sku]
		for _, d := range ds {
			if d.stock != left-d.quantity {
				m.violateStatus(st, "stock-mismatch", d.src, "",
					"an order of %d %s left stock %d, but the stock before it was %d", d.quantity, sku, d.stock, left)
				break
			}
			left = d.stock
		}
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// release drops what only the replay and Finish need (the broker records,
// pending offsets, stock decrements, notification ids), so that the SQL
// load and the digests that follow do not run on top of it: for a million
// events that is about 40 MB less live heap, and twice that less peak
// (GOGC=100). The model must not be stepped or finished again.
func (m *Model) release() {
	m.records, m.recordOrder = nil, nil
	m.pending, m.pendingHeaps = nil, nil
	m.decrements = nil
	m.notifIDs = nil
}

// KeyIntent is the scenario's intent e: the event id of the first
// order_committed (or outbox_written), else of the first seeded intent that
// is not a decoy. "" when there is none.
func (m *Model) KeyIntent() string { return m.keyIntent }

// Events returns how many events were folded.
func (m *Model) Events() int64 { return m.events }

// tableSource yields the rows of one replayed table without building them
// all at once.
type tableSource struct {
	spec evidence.DigestSpec
	n    int
	row  func(i int, dst []any) []any // appends row i's values (int64, string or nil)
}

// sources returns the replayed end state, one source per
// evidence.DigestSpecs entry, rows in creation order.
func (m *Model) sources() []tableSource {
	var stockSKUs []string
	stockSKUs = append(stockSKUs, m.skus...)
	extra := []string{}
	for sku := range m.stock { // stock written by an order for an unseeded SKU
		if _, seeded := m.seedStock[sku]; !seeded {
			extra = append(extra, sku)
		}
	}
	slices.Sort(extra)
	stockSKUs = append(stockSKUs, extra...)
	var rowsOf, linesOf, idemOf []*order
	for i := range m.orders {
		o := &m.orders[i]
		if o.row {
			rowsOf = append(rowsOf, o)
		}
		if o.lines {
			linesOf = append(linesOf, o)
		}
		if o.idem {
			idemOf = append(idemOf, o)
		}
	}
	src := map[string]tableSource{
		"stock": {n: len(stockSKUs), row: func(i int, d []any) []any { return append(d, stockSKUs[i], m.stock[stockSKUs[i]]) }},
		"orders": {n: len(rowsOf), row: func(i int, d []any) []any {
			return append(d, rowsOf[i].id, rowsOf[i].sku, rowsOf[i].quantity)
		}},
		"order_lines": {n: len(linesOf), row: func(i int, d []any) []any {
			return append(d, linesOf[i].id, linesOf[i].sku, linesOf[i].quantity)
		}},
		"idempotency_records": {n: len(idemOf), row: func(i int, d []any) []any {
			return append(d, idemOf[i].key, idemOf[i].id, idemOf[i].status)
		}},
		"outbox": {n: len(m.rows), row: func(i int, d []any) []any {
			in := m.rows[i]
			var claimID any
			if in.claimID != "" {
				claimID = in.claimID
			}
			return append(d, in.id, in.aggregateID, in.state, in.claimVersion, claimID)
		}},
		"inbox": {n: len(m.inboxOrder), row: func(i int, d []any) []any {
			return append(d, m.inboxOrder[i].consumer, m.inboxOrder[i].eventID)
		}},
		"notification": {n: len(m.notifs), row: func(i int, d []any) []any {
			n := &m.notifs[i]
			return append(d, n.id, n.consumer, n.eventID, n.orderID)
		}},
	}
	out := make([]tableSource, len(evidence.DigestSpecs))
	for i, s := range evidence.DigestSpecs {
		ts := src[s.Table]
		ts.spec = s
		out[i] = ts
	}
	return out
}

// Tables returns the replayed end state, one TableRows per
// evidence.DigestSpecs entry, rows in creation order.
func (m *Model) Tables() []TableRows {
	var out []TableRows
	for _, s := range m.sources() {
		t := TableRows{Table: s.spec.Table, Columns: s.spec.Columns}
		for i := range s.n {
			t.Rows = append(t.Rows, s.row(i, nil))
		}
		out = append(out, t)
	}
	return out
}
