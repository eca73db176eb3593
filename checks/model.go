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
//	intent-id-mismatch       an order_committed whose event_id is not e-<order_id>
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

type mark struct {
	version int64
	rows    int64
}

// intent is one outbox row.
type intent struct {
	eventID      string
	aggregateID  int64
	state        string
	claimVersion int64
	claimID      string // "" = NULL
	claimActor   string
	leaseUntil   time.Time
	leaseExpired bool
	decoy        bool
	seeded       *observation // the seed_outbox values of a seeded row
	touched      bool         // named by a claim, publish, mark or lease_expired
	claimed      []token      // every token that claimed the row
	published    []token      // every token with a successful publish
	marks        []mark
}

type observation struct {
	state         string
	claimVersion  int64
	orderID       *int64
	payloadSHA256 string
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
	published  bool
	pubEventID string
	received   int64
	recEventID string
	firstRecv  Source
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
	eventID string
	src     Source
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

	stock     map[string]int64
	seedStock map[string]int64
	skus      []string // in seeding order
	orders    map[int64]*order
	orderIDs  []int64
	outbox    map[string]*intent
	outboxIDs []string
	keyIntent string // the scenario's intent e (see KeyIntent)

	records      map[recordKey]*record
	recordOrder  []recordKey
	groups       []string
	pending      map[pendingKey]pendingRec
	pendingHeaps map[partKey]*offsetHeap
	pendingByEv  map[string][]pendingKey
	inbox        map[inboxKey]struct{}
	inboxOrder   []inboxKey
	notifs       []notification
	notifIDs     map[int64]bool
	effects      map[string]int64
	deliveries   map[string]int64
	rejects      map[string]int64
	observed     map[string][]string // collapsed observed states per event id
	lastObserved map[string]observation

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
	events       int64
	firstTime    time.Time
	lastTime     time.Time

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
		stock:        map[string]int64{},
		seedStock:    map[string]int64{},
		orders:       map[int64]*order{},
		outbox:       map[string]*intent{},
		records:      map[recordKey]*record{},
		pending:      map[pendingKey]pendingRec{},
		pendingHeaps: map[partKey]*offsetHeap{},
		pendingByEv:  map[string][]pendingKey{},
		inbox:        map[inboxKey]struct{}{},
		notifIDs:     map[int64]bool{},
		effects:      map[string]int64{},
		deliveries:   map[string]int64{},
		rejects:      map[string]int64{},
		observed:     map[string][]string{},
		lastObserved: map[string]observation{},
		okOrderIDs:   map[int64]bool{},
		statusCount:  map[int64]int64{},
		invariants:   map[string]int64{},
		perRule:      map[string]int{},
		suppressed:   map[string]int{},
	}
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
		Rule: rule, Status: st, Source: src, EventID: eventID, Message: fmt.Sprintf(format, args...),
	})
}

// Violations returns what the model found, in event order, and how many
// more of each rule were found beyond the ones kept.
func (m *Model) Violations() ([]Violation, map[string]int) { return m.violations, m.suppressed }

// Step folds one event into the state.
func (m *Model) Step(e *evidence.Event, src Source) {
	m.events++
	if m.firstTime.IsZero() || e.Time.Before(m.firstTime) {
		m.firstTime = e.Time
	}
	if e.Time.After(m.lastTime) {
		m.lastTime = e.Time
	}
	switch e.Kind {
	case evidence.KindSeedStock:
		sku := strings.Clone(e.SKU)
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
		in.state = e.State
		in.claimVersion = val(e.ClaimVersion)
		in.decoy = agg == -1
		in.seeded = &observation{state: e.State, claimVersion: in.claimVersion, orderID: evidence.Ptr(agg),
			payloadSHA256: strings.Clone(e.PayloadSHA256)}
		if !in.decoy && m.keyIntent == "" {
			m.keyIntent = in.eventID
		}
	case evidence.KindOrderCommitted:
		m.orderCommitted(e, src)
	case evidence.KindOutboxWritten:
		m.violate("intent-outside-order-tx", src, e.EventID,
			"the intent %s of order %d was committed in a transaction of its own, after the order", e.EventID, val(e.OrderID))
		if in := m.newIntent(e.EventID, val(e.OrderID), src); in != nil && m.keyIntent == "" {
			m.keyIntent = in.eventID
		}
	case evidence.KindOrderRolledBack, evidence.KindOrderReplayed, evidence.KindOrderRejected:
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
		if val(e.Rows) >= 1 {
			if in.state != evidence.StateClaimed {
				m.violate("lease-expired-not-claimed", src, e.EventID,
					"lease of %s expired by SQL (rows=%d) while the row is %s, not CLAIMED", e.EventID, val(e.Rows), in.state)
			}
			in.leaseExpired = true
		}
	case evidence.KindReceive:
		m.receive(e, src)
	case evidence.KindInboxInsert:
		k := inboxKey{e.Consumer, e.EventID}
		if _, dup := m.inbox[k]; dup {
			m.violate("duplicate-inbox", src, e.EventID,
				"a second inbox row for (%s, %s): the unique key forbids it", e.Consumer, e.EventID)
			return
		}
		k = inboxKey{strings.Clone(e.Consumer), strings.Clone(e.EventID)}
		m.inbox[k] = struct{}{}
		m.inboxOrder = append(m.inboxOrder, k)
	case evidence.KindInboxReject:
		if _, ok := m.inbox[inboxKey{e.Consumer, e.EventID}]; !ok {
			m.violate("reject-without-inbox", src, e.EventID,
				"inbox_reject of (%s, %s) with no inbox row to conflict with", e.Consumer, e.EventID)
		}
		m.rejects[strings.Clone(e.EventID)]++
		rec := recordKey{e.Topic, val(e.Partition), val(e.Offset)}
		for _, g := range m.groups {
			m.settle(pendingKey{g, rec})
		}
		if keys, ok := m.pendingByEv[e.EventID]; ok {
			keys = slices.DeleteFunc(keys, func(pk pendingKey) bool { _, p := m.pending[pk]; return !p })
			if len(keys) == 0 {
				delete(m.pendingByEv, e.EventID)
			} else {
				m.pendingByEv[e.EventID] = keys
			}
		}
	case evidence.KindEffect:
		m.effect(e, src)
	case evidence.KindOffsetCommit:
		m.offsetCommit(e, src)
	case evidence.KindObserve:
		id := strings.Clone(e.EventID)
		seq := m.observed[id]
		if (len(seq) == 0 || seq[len(seq)-1] != e.State) && len(seq) < 64 {
			m.observed[id] = append(seq, e.State)
		}
		var oid *int64
		if e.OrderID != nil {
			oid = evidence.Ptr(*e.OrderID)
		}
		m.lastObserved[id] = observation{state: e.State, claimVersion: val(e.ClaimVersion), orderID: oid,
			payloadSHA256: strings.Clone(e.PayloadSHA256)}
	case evidence.KindFault:
		p := e.Point
		if !m.faultPoints[p] {
			m.violate("fault-undeclared", src, e.EventID,
				"a fault was injected at %q, which the scenario does not declare", e.Point)
		}
		if len(m.faults) < 64 {
			m.faults = append(m.faults, strings.Clone(p))
		}
	case evidence.KindInvariant:
		id := strings.Clone(e.Invariant)
		if _, ok := m.invariants[id]; !ok {
			m.invOrder = append(m.invOrder, id)
		}
		m.invariants[id] = val(e.Rows)
	}
}

func (m *Model) newIntent(eventID string, agg int64, src Source) *intent {
	if _, dup := m.outbox[eventID]; dup {
		m.violate("duplicate-intent", src, eventID, "a second outbox intent with event_id %s: the unique key forbids it", eventID)
		return nil
	}
	in := &intent{eventID: strings.Clone(eventID), aggregateID: agg, state: evidence.StatePending}
	m.outbox[in.eventID] = in
	m.outboxIDs = append(m.outboxIDs, in.eventID)
	return in
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
	writes := map[string]bool{}
	for _, w := range e.Writes {
		writes[w] = true
	}
	if !writes[evidence.WriteOutbox] {
		m.violate("intent-outside-order-tx", src, e.EventID,
			"order %d committed without its outbox intent in the same transaction (writes %v)", id, e.Writes)
	}
	if e.EventID != evidence.EventIDFor(id) {
		m.violate("intent-id-mismatch", src, e.EventID, "order %d committed intent %q, want %q", id, e.EventID, evidence.EventIDFor(id))
	}
	if _, dup := m.orders[id]; dup {
		m.violate("duplicate-order", src, e.EventID, "order %d committed twice", id)
		return
	}
	o := &order{id: id, sku: strings.Clone(e.SKU), quantity: val(e.Quantity), key: strings.Clone(e.Key), status: int64(e.Status),
		row: writes[evidence.WriteOrders], lines: writes[evidence.WriteOrderLines], idem: writes[evidence.WriteIdempotency]}
	m.orders[id] = o
	m.orderIDs = append(m.orderIDs, id)
	if writes[evidence.WriteStock] {
		m.stock[o.sku] = val(e.Stock)
	}
	if writes[evidence.WriteOutbox] {
		if in := m.newIntent(e.EventID, id, src); in != nil && m.keyIntent == "" {
			m.keyIntent = in.eventID
		}
	}
}

// intentFor returns the intent an event names, or records unknown-intent.
func (m *Model) intentFor(e *evidence.Event, src Source) *intent {
	in := m.outbox[e.EventID]
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
	case in.state == evidence.StateClaimed && !in.leaseExpired && in.leaseUntil.After(e.Time):
		m.violate("claim-on-live-lease", src, e.EventID,
			"claim v%d of %s by %s at %s while v%d of %s holds a live lease until %s (not expired)",
			v, e.EventID, e.Actor, e.Time.Format(time.RFC3339Nano), in.claimVersion, in.claimActor,
			in.leaseUntil.Format(time.RFC3339Nano))
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
	in.claimID = strings.Clone(e.ClaimID)
	in.claimActor = strings.Clone(e.Actor)
	in.leaseUntil = val(e.LeaseUntil)
	in.leaseExpired = false
	in.claimed = append(in.claimed, token{v, in.claimID})
}

func (m *Model) publish(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	tk := token{val(e.ClaimVersion), e.ClaimID}
	if !slices.Contains(in.claimed, tk) {
		m.violate("publish-without-claim", src, e.EventID,
			"publish of %s with token v%d/%s, which never claimed it", e.EventID, tk.version, tk.id)
	}
	if e.Partition == nil || e.Offset == nil {
		return // refused by the broker: no record
	}
	k := recordKey{e.Topic, *e.Partition, *e.Offset}
	r := m.records[k]
	if r == nil {
		k.topic = strings.Clone(k.topic)
		r = &record{}
		m.records[k] = r
		m.recordOrder = append(m.recordOrder, k)
	}
	if r.published {
		m.violate("duplicate-record", src, e.EventID, "a second record at %s/%d@%d: the broker assigns an offset once",
			e.Topic, *e.Partition, *e.Offset)
		return
	}
	r.published = true
	r.pubEventID = in.eventID
	if r.recEventID != "" && r.recEventID != in.eventID {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was received as %s but published as %s",
			e.Topic, *e.Partition, *e.Offset, r.recEventID, in.eventID)
	}
	tk.id = strings.Clone(tk.id)
	in.published = append(in.published, tk)
}

func (m *Model) mark(e *evidence.Event, src Source) {
	in := m.intentFor(e, src)
	if in == nil {
		return
	}
	in.touched = true
	rows := val(e.Rows)
	tk := token{val(e.ClaimVersion), e.ClaimID}
	in.marks = append(in.marks, mark{tk.version, rows})
	if rows < 1 {
		return
	}
	if tk.version != in.claimVersion || tk.id != in.claimID {
		m.violate("stale-token-mark", src, e.EventID,
			"mark of %s with token v%d/%s hit %d row(s), but the current claim is v%d/%s",
			e.EventID, tk.version, tk.id, rows, in.claimVersion, in.claimID)
	}
	if !slices.Contains(in.published, tk) {
		m.violate("sent-without-publish", src, e.EventID,
			"mark of %s to SENT with token v%d/%s before any successful publish of that claim", e.EventID, tk.version, tk.id)
	}
	in.state = evidence.StateSent
}

func (m *Model) receive(e *evidence.Event, src Source) {
	k := recordKey{e.Topic, val(e.Partition), val(e.Offset)}
	r := m.records[k]
	if r == nil {
		k.topic = strings.Clone(k.topic)
		r = &record{}
		m.records[k] = r
		m.recordOrder = append(m.recordOrder, k)
	}
	if r.received > 0 {
		m.replays++
	} else {
		r.recEventID = strings.Clone(e.EventID)
		r.firstRecv = src
		m.deliveries[r.recEventID]++
	}
	r.received++
	if r.published && r.pubEventID != e.EventID {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was published as %s but received as %s",
			e.Topic, k.partition, k.offset, r.pubEventID, e.EventID)
	} else if r.recEventID != e.EventID {
		m.violate("record-mismatch", src, e.EventID, "record %s/%d@%d was received as %s and as %s",
			e.Topic, k.partition, k.offset, r.recEventID, e.EventID)
	}
	if in := m.outbox[e.EventID]; in != nil && e.OrderID != nil && *e.OrderID != in.aggregateID {
		m.violate("intent-mismatch", src, e.EventID, "receive of %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, in.aggregateID)
	}
	group := e.Consumer
	if !slices.Contains(m.groups, group) {
		group = strings.Clone(group)
		m.groups = append(m.groups, group)
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
		m.pendingByEv[r.recEventID] = append(m.pendingByEv[r.recEventID], pk)
	}
	m.pending[pk] = pendingRec{eventID: r.recEventID, src: src}
}

func (m *Model) settle(pk pendingKey) { delete(m.pending, pk) }

func (m *Model) effect(e *evidence.Event, src Source) {
	id := strings.Clone(e.EventID)
	if _, ok := m.inbox[inboxKey{e.Consumer, e.EventID}]; !ok {
		m.violate("effect-without-inbox", src, e.EventID,
			"effect for %s committed with no inbox row for (%s, %s)", e.EventID, e.Consumer, e.EventID)
	}
	m.effects[id]++
	if n := m.effects[id]; n > 1 {
		m.violate("duplicate-effect", src, e.EventID, "effect #%d for %s: the business effect happened more than once", n, e.EventID)
	}
	nid := val(e.NotificationID)
	if m.notifIDs[nid] {
		m.violate("duplicate-notification", src, e.EventID, "notification id %d recorded twice", nid)
	} else {
		m.notifIDs[nid] = true
		m.notifs = append(m.notifs, notification{id: nid, consumer: strings.Clone(e.Consumer), eventID: id, orderID: val(e.OrderID)})
	}
	if in := m.outbox[e.EventID]; in != nil && e.OrderID != nil && *e.OrderID != in.aggregateID {
		m.violate("intent-mismatch", src, e.EventID, "effect for %s says order %d, the intent's aggregate is %d",
			e.EventID, *e.OrderID, in.aggregateID)
	}
	for _, pk := range m.pendingByEv[e.EventID] {
		m.settle(pk)
	}
	delete(m.pendingByEv, e.EventID)
}

func (m *Model) offsetCommit(e *evidence.Event, src Source) {
	pp := partKey{e.Consumer, e.Topic, val(e.Partition)}
	h := m.pendingHeaps[pp]
	if h == nil {
		return
	}
	next := val(e.Offset)
	for h.Len() > 0 && (*h)[0] < next {
		off := heap.Pop(h).(int64)
		pk := pendingKey{pp.group, recordKey{pp.topic, pp.partition, off}}
		p, ok := m.pending[pk]
		if !ok {
			continue // settled
		}
		delete(m.pending, pk)
		m.violate("offset-before-effect", src, p.eventID,
			"offset %d committed for %s/%d (group %s) before the effect or inbox_reject of the record at offset %d (%s, received at %s)",
			next, pp.topic, pp.partition, pp.group, off, p.eventID, p.src)
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
	for _, k := range m.recordOrder {
		r := m.records[k]
		if r.received > 0 && !r.published {
			m.violateStatus(st, "receive-without-publish", r.firstRecv, r.recEventID,
				"record %s/%d@%d (%s) was received but no publish produced it", k.topic, k.partition, k.offset, r.recEventID)
		}
	}
}

// KeyIntent is the scenario's intent e: the event id of the first
// order_committed (or outbox_written), else of the first seeded intent that
// is not a decoy. "" when there is none.
func (m *Model) KeyIntent() string { return m.keyIntent }

// Events returns how many events were folded.
func (m *Model) Events() int64 { return m.events }

// Tables returns the replayed end state, one TableRows per
// evidence.DigestSpecs entry, rows in creation order.
func (m *Model) Tables() []TableRows {
	rows := map[string][][]any{}
	for _, sku := range m.skus {
		rows["stock"] = append(rows["stock"], []any{sku, m.stock[sku]})
	}
	for sku, q := range m.stock { // stock written by an order for an unseeded SKU
		if _, seeded := m.seedStock[sku]; !seeded {
			rows["stock"] = append(rows["stock"], []any{sku, q})
		}
	}
	for _, id := range m.orderIDs {
		o := m.orders[id]
		if o.row {
			rows["orders"] = append(rows["orders"], []any{o.id, o.sku, o.quantity})
		}
		if o.lines {
			rows["order_lines"] = append(rows["order_lines"], []any{o.id, o.sku, o.quantity})
		}
		if o.idem {
			rows["idempotency_records"] = append(rows["idempotency_records"], []any{o.key, o.id, o.status})
		}
	}
	for _, id := range m.outboxIDs {
		in := m.outbox[id]
		var claimID any
		if in.claimID != "" {
			claimID = in.claimID
		}
		rows["outbox"] = append(rows["outbox"], []any{in.eventID, in.aggregateID, in.state, in.claimVersion, claimID})
	}
	for _, k := range m.inboxOrder {
		rows["inbox"] = append(rows["inbox"], []any{k.consumer, k.eventID})
	}
	for _, n := range m.notifs {
		rows["notification"] = append(rows["notification"], []any{n.id, n.consumer, n.eventID, n.orderID})
	}
	out := make([]TableRows, len(evidence.DigestSpecs))
	for i, s := range evidence.DigestSpecs {
		out[i] = TableRows{Table: s.Table, Columns: s.Columns, Rows: rows[s.Table]}
	}
	return out
}
