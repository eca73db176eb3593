package model

import (
	"cmp"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The state the layers share. It is the same whatever layers are on: each
// handler updates it the same way, so that the metrics, the replayed tables
// and the other layers' rules can read it; a layer that is off only
// reports none of its rules.

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
	tokens       []Token
	unknownOpen  int32 // publish_unknown events not yet matched to a record received

	deliveries, effects, rejects int32
	effectBy                     uint64 // inbox consumers (bit i: m.inboxNames[i]) with an effect of it
	version                      int32  // aggregate_version (0: not said, 1)
	pending                      []pendingKey
	*observed                    // nil until seeded or observed
}

// intent is an outbox row (an eventState with hasRow).
type intent = eventState

// Token is one claim token of a row (its claim_version and claim_id) and
// what happened to it. A relay without claim tokens uses the zero token.
type Token struct {
	Version int64
	ID      string
	Claimed bool   // a claim took it
	Holder  string // the actor whose claim took it (interned)
	// DiedHolding: its holder's process ended before logging a publish
	// with it; a record with it is taken as that publish's (Finish).
	DiedHolding bool
	Published   bool  // at least one successful publish with it
	Refused     bool  // at least one publish with it refused by the broker
	Unknown     bool  // at least one publish with it of unknown outcome
	Marked      bool  // at least one mark with it
	MarkRows    int64 // rows of its last mark
	MarkAt      int64 // event number (Events() then) of that mark
	// LastPublish is what its latest publish came to.
	LastPublish Outcome
	// claimedAt is its claim's time (ns) and publishTimeout the publish
	// timeout the claim logged (ms, 0: none); timed is set once its first
	// publish outcome was held to it (publish-past-timeout).
	claimedAt, publishTimeout int64
	timed                     bool
}

// Outcome is what a publish came to.
type Outcome uint8

// The outcomes of a publish.
const (
	OutcomeNone    Outcome = iota // no publish yet: in flight, if claimed
	OutcomeAcked                  // acknowledged, with an offset
	OutcomeRefused                // refused by the broker (publish with err)
	OutcomeUnknown                // publish_unknown
)

// failed tells whether the token's last publish was not acknowledged.
func (t *Token) failed() bool {
	return t.LastPublish == OutcomeRefused || t.LastPublish == OutcomeUnknown
}

func (in *eventState) token(version int64, id string) *Token {
	for i := range in.tokens {
		if t := &in.tokens[i]; t.Version == version && t.ID == id {
			return t
		}
	}
	return nil
}

// addToken returns the state of a token, adding it; id must be interned.
func (in *eventState) addToken(version int64, id string) *Token {
	if ts := in.token(version, id); ts != nil {
		return ts
	}
	in.tokens = append(in.tokens, Token{Version: version, ID: id})
	return &in.tokens[len(in.tokens)-1]
}

// insertToken is addToken for a token whose line came after a later
// claim's: it goes in version order, so that the tokens stay in claim
// order.
func (in *eventState) insertToken(version int64, id string) *Token {
	if ts := in.token(version, id); ts != nil {
		return ts
	}
	i, _ := slices.BinarySearchFunc(in.tokens, version, func(t Token, v int64) int { return cmp.Compare(t.Version, v) })
	in.tokens = slices.Insert(in.tokens, i, Token{Version: version, ID: id})
	return &in.tokens[i]
}

// observed holds what only a few event ids have: a seed and observations.
type observed struct {
	seeded  *Observation // the seed_outbox values of a seeded row
	states  []string     // collapsed observed states
	lastObs *Observation
	all     []observedAt // every observation (capped), checked by Finish
}

type observedAt struct {
	Observation
	src Source
}

func (es *eventState) obs() *observed {
	if es.observed == nil {
		es.observed = &observed{}
	}
	return es.observed
}

// Observation is an outbox row as the scenario seeded or observed it.
type Observation struct {
	State         string
	ClaimVersion  int64
	OrderID       *int64 // nil when not given
	PayloadSHA256 string
}

// Order is what one order transaction wrote, table by table.
type Order struct {
	ID       int64
	SKU      string // the first line's
	Quantity int64  // the order's total
	Key      string // the idempotency key
	Status   int64  // the HTTP status answered
	Row      bool   // wrote orders
	Lines    bool   // wrote order_lines
	Idem     bool   // wrote idempotency_records
	// Principal, AmountCents and LineList are what the order_committed
	// says of them ("", nil and nil in logs of versions that did not):
	// LineList has each line with its unit price and the stock left.
	Principal   string
	AmountCents *int64
	LineList    []evidence.OrderLine
	src         Source // its order_committed
}

// OrderLines returns the order's lines: LineList, or, for a log that
// does not list them, its one line of SKU and Quantity (no price).
func (o Order) OrderLines() []evidence.OrderLine {
	if o.LineList != nil {
		return o.LineList
	}
	return []evidence.OrderLine{{SKU: o.SKU, Quantity: o.Quantity}}
}

// ClientRequest is one POST /orders as its client recorded it
// (order_request).
type ClientRequest struct {
	Principal string // the token's subject; "" without a token
	Key       string
	Status    int64
	OrderID   *int64               // the order a 2xx answer named
	Lines     []evidence.OrderLine // what it asked for (nil when not recorded)
	// BodySHA256 is the sha256 of the answer's body ("" when not recorded).
	BodySHA256 string
	// Token is the token it sent (nil: none), and BadToken why the
	// policy refuses it ("" when it does not).
	Token    *SentToken
	BadToken string
	// Raw is the raw request of a generated load (nil otherwise), which
	// the reference model of the contract reads (contract.go).
	Raw *RawRequest
	src Source
}

// SentToken is what a client says of the token it sent.
type SentToken struct {
	Alg, Key, Claims string
}

// orderPart is the partition of an order's records, on the first topic
// they were seen on, and whether a record of it was seen on another.
type orderPart struct {
	topic     string
	partition int32
	split     bool
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
	// fromUnknown: received before any publish produced it, and taken as
	// the record of a publish_unknown of its event id; reported: a
	// receive-before-publish was reported for it.
	fromUnknown, reported bool
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

// Request is one answer of the order service.
type Request struct {
	Kind    evidence.Kind
	Status  int64
	OrderID *int64 // nil when the answer named no order
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

// orderOf returns the order with id, or nil.
func (m *Model) orderOf(id int64) *Order {
	if i, ok := m.orderIdx[id]; ok {
		return &m.orders[i]
	}
	return nil
}

func val[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}

// stateName returns the shared constant of a known outbox state (a string
// that does not keep a decoded batch alive), else s.
func stateName(s string) string {
	for _, k := range [...]string{evidence.StatePending, evidence.StateClaimed, evidence.StateSent} {
		if s == k {
			return k
		}
	}
	return s
}
