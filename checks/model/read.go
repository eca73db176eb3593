package model

import (
	"iter"
	"maps"
	"slices"
)

// The read API: what the checker's derivations read of the replayed
// state. Everything is returned by value (or as a copy), so that no reader
// can change the model.

// Intent is what the replay knows of one outbox row at the end.
type Intent struct {
	EventID      string
	AggregateID  int64
	State        string // PENDING, CLAIMED or SENT
	ClaimVersion int64
	ClaimID      string       // "" = NULL
	Decoy        bool         // seeded with aggregate id -1: a row no order owns
	Touched      bool         // named by a claim, publish, mark or lease_expired
	Seeded       *Observation // the seed_outbox values; nil unless seeded
	LastObserved *Observation // the last observe of the row; nil if none
}

func (in *intent) view() Intent {
	v := Intent{EventID: in.id, AggregateID: in.aggregateID, State: in.state, ClaimVersion: in.claimVersion,
		ClaimID: in.claimID, Decoy: in.decoy, Touched: in.touched}
	if o := in.observed; o != nil {
		v.Seeded, v.LastObserved = copyObs(o.seeded), copyObs(o.lastObs)
	}
	return v
}

func copyObs(o *Observation) *Observation {
	c := clonePtr(o)
	if c != nil {
		c.OrderID = clonePtr(o.OrderID)
	}
	return c
}

// clonePtr returns a pointer to a copy of *p (nil for nil).
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// KeyIntent is the scenario's intent e: the event id of the first
// order_committed (or outbox_written), else of the first seeded intent that
// is not a decoy. "" when there is none.
func (m *Model) KeyIntent() string { return m.keyIntent }

// Intent returns the outbox row of event id.
func (m *Model) Intent(id string) (Intent, bool) {
	if in := m.intentOf(id); in != nil {
		return in.view(), true
	}
	return Intent{}, false
}

// Intents yields the outbox rows in creation order.
func (m *Model) Intents() iter.Seq[Intent] {
	return func(yield func(Intent) bool) {
		for _, in := range m.rows {
			if !yield(in.view()) {
				return
			}
		}
	}
}

// Deliveries is what the consumer side did with one event id.
type Deliveries struct {
	Received int64 // distinct records received with the event id
	Effects  int64 // effects committed
	Rejected int64 // inbox_reject events
}

// Deliveries returns what the consumer side did with event id (zero when
// the id is unknown).
func (m *Model) Deliveries(id string) Deliveries {
	es := m.stateOf(id)
	return Deliveries{Received: int64(es.deliveries), Effects: int64(es.effects), Rejected: int64(es.rejects)}
}

// Tokens returns the claim tokens of event id's row in the order first
// seen (claimed, published, marked or named by a fault), without the
// model's own bookkeeping of their publish's timing.
func (m *Model) Tokens(id string) []Token {
	out := slices.Clone(m.stateOf(id).tokens)
	for i := range out {
		out[i].claimedAt, out[i].publishTimeout, out[i].timed = 0, 0, false
	}
	return out
}

// ObservedStates returns the states observed of event id, consecutive
// repeats collapsed.
func (m *Model) ObservedStates(id string) []string {
	if o := m.stateOf(id).observed; o != nil {
		return slices.Clone(o.states)
	}
	return nil
}

// Order returns the order with id.
func (m *Model) Order(id int64) (Order, bool) {
	if o := m.orderOf(id); o != nil {
		return *o, true
	}
	return Order{}, false
}

// Orders yields the orders in commit order.
func (m *Model) Orders() iter.Seq[Order] {
	return func(yield func(Order) bool) {
		for i := range m.orders {
			if !yield(m.orders[i]) {
				return
			}
		}
	}
}

// SeededSKUs returns the SKUs the scenario seeded, in seeding order.
func (m *Model) SeededSKUs() []string { return slices.Clone(m.skus) }

// SeedStock returns the stock a SKU was first seeded with.
func (m *Model) SeedStock(sku string) (int64, bool) {
	n, ok := m.seedStock[sku]
	return n, ok
}

// Stock yields every SKU with a stock at the end (seeded, or written by an
// order), in no particular order, with the stock left.
func (m *Model) Stock() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for sku, n := range m.stock {
			if !yield(sku, n) {
				return
			}
		}
	}
}

// StockOf returns the stock of sku at the end (0 when it has none).
func (m *Model) StockOf(sku string) int64 { return m.stock[sku] }

// Requests returns the first answers of the order service, in order (at
// most 4; Counts has them all).
func (m *Model) Requests() []Request {
	out := slices.Clone(m.requests)
	for i := range out {
		out[i].OrderID = clonePtr(out[i].OrderID)
	}
	return out
}

// ClientRequests returns the client's requests (order_request), in
// order (the first maxClientRequests; Counts.ClientRequests has them all).
func (m *Model) ClientRequests() []ClientRequest {
	out := slices.Clone(m.clientReqs)
	for i := range out {
		out[i].OrderID = clonePtr(out[i].OrderID)
		out[i].Lines = slices.Clone(out[i].Lines)
		out[i].Token = clonePtr(out[i].Token)
	}
	return out
}

// ClientAnsweredWith returns how many of the client's requests were
// answered with status.
func (m *Model) ClientAnsweredWith(status int64) int64 { return m.clientStatus[status] }

// ClientStatuses returns the statuses of the client's answers, sorted.
func (m *Model) ClientStatuses() []int64 { return slices.Sorted(maps.Keys(m.clientStatus)) }

// Statuses returns the statuses the order service logged answering,
// sorted.
func (m *Model) Statuses() []int64 { return slices.Sorted(maps.Keys(m.statusCount)) }

// RolledBackOnDuplicate returns the event ids of the order transactions
// that rolled back on a duplicate key (an err naming MySQL error 1062),
// in order (the first 64).
func (m *Model) RolledBackOnDuplicate() []string { return slices.Clone(m.rolledBackDup) }

// SeedPrice returns the unit price a SKU was seeded with, when the seed
// said it.
func (m *Model) SeedPrice(sku string) (int64, bool) {
	p, ok := m.seedPrice[sku]
	return p, ok
}

// AnsweredWith returns how many answers of the order service had status.
func (m *Model) AnsweredWith(status int64) int64 { return m.statusCount[status] }

// Counts are the model's counters.
type Counts struct {
	Events   int64 // events folded
	Requests int64 // answers of the order service
	// ClientRequests: the client's records of its requests (order_request);
	// ClientOKOrders: distinct order ids of their 2xx answers.
	ClientRequests, ClientOKOrders int64
	OKOrders                       int64 // distinct order ids answered with a 2xx
	Claims                         int64 // claim events
	DoubleClaims                   int64 // claims on a live lease another actor held
	Replays                        int64 // receives of a record already received
	Received                       int64 // distinct records received
	InboxRejects                   int64 // inbox_reject events
	Intents                        int64 // outbox rows
	InboxRows                      int64
	Notifications                  int64 // effects with distinct notification ids

	RefusedPublishes  int64 // publish events with an error: refused by the broker
	UnknownPublishes  int64 // publish_unknown events
	MarksAfterFailure int64 // marks that hit a row after their claim's publish failed or was unknown
	Takeovers         int64 // claims of a CLAIMED row
	SelfTakeovers     int64 // takeovers by the claim id that held the row
	// Overlaps: claims made while another claim id held a live claim
	// (its latest claim not yet marked, superseded or past its lease).
	Overlaps int64
	// LeasesOffClaim: claims whose lease is not their time plus their
	// lease (lease-off-claim).
	LeasesOffClaim int64
	// PublishesPastTimeout: claims whose first publish outcome came past
	// their publish timeout's bound (publish-past-timeout).
	PublishesPastTimeout int64

	// Partitions: distinct partitions holding a record the history knows.
	Partitions int64
	// SplitAggregates: orders with records on two partitions of a topic.
	SplitAggregates int64
	// EffectsOutOfOrder: effects committed after an effect of a higher
	// version of their aggregate (same inbox consumer).
	EffectsOutOfOrder int64
	// ReceivesOutOfVersion: a group's first receives of an aggregate's
	// event below a version of it the group already received.
	ReceivesOutOfVersion int64
	// Lag: the sum over groups and partitions of end offset minus the
	// group's last commit, for the topics the group committed on (after
	// Finish).
	Lag int64
	// RolledBackEffects and UnknownCommits count effect_rolled_back and
	// commit_unknown events; ResolvedCommits the unknown commits a
	// replay's inbox_reject showed to have committed.
	RolledBackEffects, UnknownCommits, ResolvedCommits int64
}

// Counts returns the model's counters.
func (m *Model) Counts() Counts {
	return Counts{
		Events: m.events, Requests: m.nRequests, ClientRequests: m.nClientReqs, ClientOKOrders: int64(len(m.clientOKOrders)),
		OKOrders: int64(len(m.okOrderIDs)),
		Claims:   m.claims, DoubleClaims: m.doubleClaims, Replays: m.replays, Received: m.received, InboxRejects: m.rejects,
		Intents: int64(len(m.rows)), InboxRows: int64(len(m.inbox)), Notifications: int64(len(m.notifs)),
		RefusedPublishes: m.refusedPublishes, UnknownPublishes: m.unknownPublishes, MarksAfterFailure: m.marksAfterFailure,
		Takeovers: m.takeovers, SelfTakeovers: m.selfTakeovers, Overlaps: m.overlaps, LeasesOffClaim: m.leasesOffClaim,
		PublishesPastTimeout: m.pastTimeout,
		Partitions:           m.partitions, SplitAggregates: m.splitAggregates, EffectsOutOfOrder: m.effectsOutOfOrder, Lag: m.lag,
		ReceivesOutOfVersion: m.receivesOutOfVersion,
		RolledBackEffects:    m.rolledBackEffects, UnknownCommits: m.unknownCommits, ResolvedCommits: m.resolvedCommits,
	}
}

// Events returns how many events were folded.
func (m *Model) Events() int64 { return m.events }

// Faults returns the points of the fault events, in order (the first 64).
func (m *Model) Faults() []string { return slices.Clone(m.faults) }

// RolledBack returns the event ids of the rolled-back order transactions,
// in order (the first 64).
func (m *Model) RolledBack() []string { return slices.Clone(m.rolledBack) }

// Invariants yields the live invariant results the events record, in the
// order first seen: id and rows (of the last event of that id).
func (m *Model) Invariants() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for _, id := range m.invOrder {
			if !yield(id, m.invariants[id]) {
				return
			}
		}
	}
}

// Invariant returns the live result the events record for invariant id.
func (m *Model) Invariant(id string) (int64, bool) {
	n, ok := m.invariants[id]
	return n, ok
}
