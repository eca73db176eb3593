// Package genload generates load for the order service: seeded requests
// drawn from the whole input domain of POST /orders as spec/orderapi.go
// states it (what the service must accept and what it must refuse), for
// several users at once, with keys reused across and within users and
// multi-line orders of the same SKUs in opposite orders in one round.
//
// The generator knows the contract's bounds (spec) and nothing of the
// service's code; it does not predict answers either: the verifier's
// reference model (checks/model, contract.go) does, from the client's
// record of each request.
package genload

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Config sizes a load. The zero values take the defaults below.
type Config struct {
	// Seed makes the load: one seed, one sequence of requests.
	Seed uint64
	// Users is the number of users sending at once (default 6, at most
	// len(Principals)); Rounds the requests of each (default 50).
	Users, Rounds int
	// Now is the time tokens' exp and nbf are set against (default
	// time.Now()).
	Now time.Time
}

func (c *Config) setDefaults() {
	if c.Users <= 0 {
		c.Users = 6
	}
	c.Users = min(c.Users, len(Principals))
	if c.Rounds <= 0 {
		c.Rounds = 50
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
}

// Principals are the users' subjects: two that differ only by case, one
// of exactly spec.MaxPrincipalBytes ASCII bytes and one of as many bytes
// in two-byte runes, and two plain ones.
var Principals = []string{
	"alice",
	"Alice",
	"p-" + strings.Repeat("x", 126),
	strings.Repeat("ü", 64),
	"bob",
	"carol",
}

// Item is a SKU of the catalog the load is seeded with.
type Item struct {
	SKU               string
	Stock, PriceCents int64
}

// BigPrice is a unit price at the bound: MaxQuantity of it is the largest
// multiple of MaxQuantity an int64 holds, and one more cent is too many.
const BigPrice = math.MaxInt64 / 1000

// Catalog is the stock to seed: sixteen plain SKUs (enough for an order
// of spec.MaxLines lines), a free one, one at a cent, one at BigPrice, a
// scarce one that concurrent users run out of, a SKU of non-ASCII runes
// and one of spec.MaxSKUBytes bytes.
func Catalog() []Item {
	var out []Item
	for i := 0; i < 16; i++ {
		out = append(out, Item{SKU: plainSKU(i), Stock: 100000, PriceCents: int64(100 + 37*i)})
	}
	return append(out,
		Item{SKU: "FREE", Stock: 100000, PriceCents: 0},
		Item{SKU: "ONE", Stock: 100000, PriceCents: 1},
		Item{SKU: "BIG", Stock: 1000000, PriceCents: BigPrice},
		Item{SKU: "SCARCE", Stock: 8, PriceCents: 999},
		Item{SKU: "Ü-ß-€", Stock: 100000, PriceCents: 250},
		Item{SKU: longSKU, Stock: 100000, PriceCents: 5},
	)
}

var longSKU = "SKU-" + strings.Repeat("9", 60)

func plainSKU(i int) string { return "SKU-" + string(rune('A'+i)) }

// Request is one generated request, as it is to be sent.
type Request struct {
	// User indexes Principals: the user whose goroutine sends it.
	User int
	// Auth is the Authorization header: with Token, the text before the
	// token ("Bearer "); without, the whole header ("" leaves it out).
	Auth  string
	Token *Token
	// Keys are the Idempotency-Key values as sent (none: no header).
	Keys []string
	Body string
}

// Generate draws cfg.Rounds rounds of one request per user; the requests
// of one round are meant to be sent at once.
func Generate(cfg Config) [][]Request {
	cfg.setDefaults()
	g := &gen{r: rand.New(rand.NewPCG(cfg.Seed, 0x6f726465726c6f61)), now: cfg.Now, sent: make([][]sent, cfg.Users)}
	rounds := make([][]Request, cfg.Rounds)
	for i := range rounds {
		lockRound := i%5 == 4
		for u := 0; u < cfg.Users; u++ {
			var req Request
			if lockRound {
				req = g.lockOrder(i, u)
			} else {
				req = g.request(u)
			}
			req.User = u
			rounds[i] = append(rounds[i], req)
		}
	}
	return rounds
}

// gen is the generator's state: its random source and what each user
// sent, for reuse.
type gen struct {
	r    *rand.Rand
	now  time.Time
	sent [][]sent
	deck deck
}

// sent is a key and body a user sent, to send again.
type sent struct {
	key   string // the key itself
	lines []line
	one   bool // the one-line form
}

// request draws one request of user u: a quarter of the time a key the
// user sent before, with the same request or another; otherwise a fresh
// valid one, which three times in five gets one variant from the deck of
// variants (a fault of the key, the body, the token or its header, or a
// valid request at a bound), so that a load of some hundred requests
// holds every variant.
func (g *gen) request(u int) Request {
	req := Request{Auth: "Bearer ", Token: g.goodToken(u)}
	if prev := g.sent[u]; len(prev) > 0 && g.r.IntN(4) == 0 {
		s := prev[g.r.IntN(len(prev))]
		req.Keys = []string{g.encodeKey(s.key)}
		lines, one := g.variant(s.lines, s.one)
		req.Body = g.encodeBody(lines, one)
		return req
	}
	key := g.key()
	lines, one := g.lines()
	req.Keys = []string{g.encodeKey(key)}
	req.Body = g.encodeBody(lines, one)
	if g.r.IntN(5) < 3 {
		variants[g.deck.next(g.r, len(variants))](g, &req)
		return req
	}
	g.sent[u] = append(g.sent[u], sent{key: key, lines: lines, one: one})
	return req
}

// deck deals indexes 0..n-1 in a random order, every one once before
// any again.
type deck struct {
	order []int
	i     int
}

func (d *deck) next(r *rand.Rand, n int) int {
	if d.i >= len(d.order) {
		d.order, d.i = r.Perm(n), 0
	}
	d.i++
	return d.order[d.i-1]
}

// lockOrder is a request of a lock-order round: every user orders the
// same four SKUs at once, half of them in the opposite order, under a
// key all users share (each user's own, since keys are per user).
func (g *gen) lockOrder(round, u int) Request {
	lines := []line{{sku: plainSKU(0), q: 1}, {sku: plainSKU(1), q: 2}, {sku: plainSKU(2), q: 1}, {sku: "SCARCE", q: 1}}
	if round/10 != 1 {
		lines = lines[:3] // SCARCE in the second lock round only
	}
	if u%2 == 1 {
		for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
	}
	key := "lock-" + string(rune('0'+round/10)) + string(rune('0'+round%10))
	return Request{Auth: "Bearer ", Token: g.goodToken(u), Keys: []string{`"` + key + `"`}, Body: g.encodeBody(lines, false)}
}
