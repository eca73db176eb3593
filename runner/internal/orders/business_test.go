package orders

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
)

// TestPlaceSeveralLines: an order of two lines decrements both SKUs,
// writes one order row (the first line's SKU, the total quantity, the
// amount of both lines) and two line rows with their unit prices, and
// says so in its answer, its event and its outbox payload.
func TestPlaceSeveralLines(t *testing.T) {
	b := setup(t)
	b.exec(`INSERT INTO stock (sku, quantity, price_cents) VALUES ('SKU-2', 5, 1000)`)
	lines := []Line{{SKU: "SKU-2", Quantity: 3}, {SKU: testSKU, Quantity: 2}}
	res := b.place("k-lines", PlaceRequest{Lines: lines})
	if res.Status != http.StatusCreated || res.Order == nil {
		t.Fatalf("status = %d (%s); want 201", res.Status, res.Body)
	}
	const amount = 3*1000 + 2*testPrice
	want := PlaceResponse{OrderID: 1, EventID: "e-1", SKU: "SKU-2", Quantity: 5, AmountCents: amount, StockLeft: 2, Lines: lines}
	if !reflect.DeepEqual(*res.Order, want) {
		t.Errorf("answer = %+v; want %+v", *res.Order, want)
	}
	var sku string
	var qty, amt int64
	if err := b.db.QueryRowContext(t.Context(), `SELECT sku, quantity, amount_cents FROM orders WHERE id = 1`).Scan(&sku, &qty, &amt); err != nil {
		t.Fatal(err)
	}
	if sku != "SKU-2" || qty != 5 || amt != amount {
		t.Errorf("order row = %s %d %d; want SKU-2 5 %d", sku, qty, amt, amount)
	}
	if n := b.count(`SELECT COUNT(*) FROM order_lines WHERE order_id = 1 AND ((sku = 'SKU-2' AND quantity = 3 AND price_cents = 1000) OR (sku = ? AND quantity = 2 AND price_cents = ?))`,
		testSKU, testPrice); n != 2 {
		t.Errorf("%d matching order_lines rows; want 2", n)
	}
	if a, c := b.count(`SELECT quantity FROM stock WHERE sku = 'SKU-2'`), b.count(`SELECT quantity FROM stock WHERE sku = ?`, testSKU); a != 2 || c != 8 {
		t.Errorf("stock SKU-2 %d, %s %d; want 2 and 8", a, testSKU, c)
	}
	e := lastEvent(t, b.events())
	wantLines := []string{"quantity=3 price_cents=1000 stock=2 sku=SKU-2", "quantity=2 price_cents=250 stock=8 sku=SKU-1"}
	if e.Kind != evidence.KindOrderCommitted || e.SKU != "SKU-2" || *e.Quantity != 5 || *e.Stock != 2 || *e.AmountCents != amount ||
		e.Principal != "alice" || !reflect.DeepEqual(e.Lines, wantLines) {
		t.Errorf("event = %+v; want order_committed of alice with lines %v", e, wantLines)
	}
	var payload string
	if err := b.db.QueryRowContext(t.Context(), `SELECT payload FROM outbox WHERE event_id = 'e-1'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var p OutboxPayload
	if err := json.Unmarshal([]byte(payload), &p); err != nil || !reflect.DeepEqual(p.Lines, lines) || p.AmountCents != amount {
		t.Errorf("outbox payload %s (%v); want both lines and amount %d", payload, err, amount)
	}
}

// TestPlantedTokenBugs: each planted token bug of the order service
// accepts the token docs/negative-controls.md says, and the clean service
// refuses it.
func TestPlantedTokenBugs(t *testing.T) {
	now := time.Now()
	tok := func(t *testing.T, method jwt.SigningMethod, key any, mod func(*jwt.RegisteredClaims)) string {
		c := Claims("alice", now.Add(time.Hour))
		mod(&c)
		s, err := SignClaims(method, key, c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	same := func(*jwt.RegisteredClaims) {}
	for _, tc := range []struct {
		bug   plant.Bug
		token func(t *testing.T) string
	}{
		{plant.TokenAlgNone, func(t *testing.T) string {
			return tok(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, same)
		}},
		{plant.TokenNoExp, func(t *testing.T) string {
			return tok(t, jwt.SigningMethodHS256, testSecret, func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil })
		}},
		{plant.TokenNbfIgnored, func(t *testing.T) string {
			return tok(t, jwt.SigningMethodHS256, testSecret, func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Hour)) })
		}},
		{plant.TokenIssUnchecked, func(t *testing.T) string {
			return tok(t, jwt.SigningMethodHS256, testSecret, func(c *jwt.RegisteredClaims) { c.Issuer = "x" })
		}},
		{plant.TokenAudUnchecked, func(t *testing.T) string {
			return tok(t, jwt.SigningMethodHS256, testSecret, func(c *jwt.RegisteredClaims) { c.Audience = nil })
		}},
	} {
		t.Run(string(tc.bug), func(t *testing.T) {
			for _, bug := range []plant.Bug{plant.None, tc.bug} {
				b := setup(t, func(c *Config) { c.Plant = bug })
				res, err := b.client.Place(t.Context(), tc.token(t), "k", PlaceRequest{SKU: testSKU, Quantity: 1})
				if err != nil {
					t.Fatal(err)
				}
				want := http.StatusUnauthorized
				if bug != plant.None {
					want = http.StatusCreated
				}
				if res.Status != want {
					t.Errorf("plant %q: status %d; want %d", bug, res.Status, want)
				}
			}
		})
	}
	t.Run("nbf-ignored still checks exp", func(t *testing.T) {
		b := setup(t, func(c *Config) { c.Plant = plant.TokenNbfIgnored })
		s := tok(t, jwt.SigningMethodHS256, testSecret, func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Minute)) })
		if res, err := b.client.Place(t.Context(), s, "k", PlaceRequest{SKU: testSKU, Quantity: 1}); err != nil || res.Status != 401 {
			t.Errorf("expired token with nbf-ignored = %d, %v; want 401", res.Status, err)
		}
	})
}

// TestPlantedOrderBugs: each other planted bug of the order service does
// what docs/negative-controls.md says, and the clean service does not.
func TestPlantedOrderBugs(t *testing.T) {
	now := time.Now()
	t.Run(string(plant.IdemKeyAcrossUsers), func(t *testing.T) {
		for _, bug := range []plant.Bug{plant.None, plant.IdemKeyAcrossUsers} {
			b := setup(t, func(c *Config) { c.Plant = bug })
			bob, _ := SignToken(testSecret, "bob", now.Add(time.Hour))
			first := b.place("shared", PlaceRequest{SKU: testSKU, Quantity: 1})
			second, err := b.client.Place(t.Context(), bob, "shared", PlaceRequest{SKU: testSKU, Quantity: 1})
			if err != nil || first.Order == nil || second.Order == nil {
				t.Fatalf("answers %d, %d (%v)", first.Status, second.Status, err)
			}
			if crossed := first.Order.OrderID == second.Order.OrderID; crossed != (bug != plant.None) {
				t.Errorf("plant %q: bob got alice's order %v", bug, crossed)
			}
		}
	})
	t.Run(string(plant.AmountIgnoresQuantity), func(t *testing.T) {
		for _, bug := range []plant.Bug{plant.None, plant.AmountIgnoresQuantity} {
			b := setup(t, func(c *Config) { c.Plant = bug })
			res := b.place("k", PlaceRequest{SKU: testSKU, Quantity: 3})
			want := int64(3 * testPrice)
			if bug != plant.None {
				want = testPrice
			}
			if res.Order == nil || res.Order.AmountCents != want {
				t.Errorf("plant %q: answer %s; want amount %d", bug, res.Body, want)
			}
		}
	})
	t.Run(string(plant.CreatedOnRollback), func(t *testing.T) {
		for _, bug := range []plant.Bug{plant.None, plant.CreatedOnRollback} {
			b := setup(t, func(c *Config) { c.Plant = bug })
			b.exec(`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES ('e-1', -1, 1, '{}', 'PENDING')`)
			res := b.place("k", PlaceRequest{SKU: testSKU, Quantity: 1})
			want := http.StatusInternalServerError
			if bug != plant.None {
				want = http.StatusCreated
			}
			if res.Status != want || b.count(`SELECT COUNT(*) FROM orders`) != 0 {
				t.Errorf("plant %q: status %d, %d orders; want %d and none", bug, res.Status, b.count(`SELECT COUNT(*) FROM orders`), want)
			}
			if e := lastEvent(t, b.events()); e.Kind != evidence.KindOrderRolledBack || e.Status != 500 {
				t.Errorf("plant %q: event %s %d; want order_rolled_back 500 (the service's own record)", bug, e.Kind, e.Status)
			}
		}
	})
}
