package genload

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestDeterministic: one seed, one load; another seed, another.
func TestDeterministic(t *testing.T) {
	a := Generate(Config{Seed: 1, Now: t0})
	b := Generate(Config{Seed: 1, Now: t0})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 1 gave two loads")
	}
	if c := Generate(Config{Seed: 2, Now: t0}); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 1 and 2 gave one load")
	}
	if len(a) != 50 || len(a[0]) != 6 {
		t.Fatalf("default load has %d rounds of %d; want 50 of 6", len(a), len(a[0]))
	}
}

// TestCoversDomain: the default load holds every variant of the deck,
// keys reused within and across users, one key in flight for two users
// in one round, and opposite line orders in one round; every request
// fits the record's schema (key_headers 1024, request_body 20480,
// token_claims 1024).
func TestCoversDomain(t *testing.T) {
	rounds := Generate(Config{Seed: 1, Now: t0})
	bodies := map[string]bool{}
	keys := map[string]bool{}
	var sameRoundKey, reversed, reused bool
	perUser := map[int]map[string]int{}
	for _, round := range rounds {
		inRound := map[string]int{}
		var lockBodies []string
		for _, r := range round {
			bodies[r.Body] = true
			if r.Auth == "" && r.Token == nil && len(r.Keys) == 0 && r.Body == "" {
				t.Error("a request without Authorization, Idempotency-Key and body: its record would not read as generated")
			}
			for _, k := range r.Keys {
				keys[k] = true
				if len(k) > 1024 {
					t.Errorf("key header of %d bytes", len(k))
				}
			}
			if len(r.Body) > 20480 {
				t.Errorf("body of %d bytes", len(r.Body))
			}
			if r.Token != nil {
				c, _ := json.Marshal(r.Token.Claims)
				if len(c) > 1024 {
					t.Errorf("claims of %d bytes", len(c))
				}
			}
			if len(r.Keys) == 1 {
				k := strings.Trim(r.Keys[0], ` "`)
				inRound[k]++
				if perUser[r.User] == nil {
					perUser[r.User] = map[string]int{}
				}
				perUser[r.User][k]++
				if perUser[r.User][k] > 1 {
					reused = true
				}
			}
			if strings.Contains(r.Body, "SKU-A") && strings.Contains(r.Body, "SKU-C") && strings.HasPrefix(r.Keys[0], `"lock-`) {
				lockBodies = append(lockBodies, r.Body)
			}
		}
		for _, n := range inRound {
			sameRoundKey = sameRoundKey || n > 1
		}
		if len(lockBodies) > 1 && strings.Index(lockBodies[0], "SKU-A") < strings.Index(lockBodies[0], "SKU-C") !=
			(strings.Index(lockBodies[1], "SKU-A") < strings.Index(lockBodies[1], "SKU-C")) {
			reversed = true
		}
	}
	if !sameRoundKey || !reversed || !reused {
		t.Errorf("one key in one round %v, opposite orders %v, a key reused by a user %v; want all", sameRoundKey, reversed, reused)
	}
	for _, k := range badKeys {
		if len(k) == 1 && !keys[k[0]] {
			t.Errorf("bad key %q never sent", k[0])
		}
	}
	for _, b := range badBodies {
		if !bodies[b] {
			t.Errorf("bad body %q never sent", b)
		}
	}
	var max, over, large bool
	for b := range bodies {
		n := strings.Count(b, `"sku"`)
		max = max || n == spec.MaxLines
		over = over || n == spec.MaxLines+1
		large = large || len(b) > spec.MaxBodyBytes
	}
	if !max || !over || !large {
		t.Errorf("%d lines %v, %d lines %v, a body over %d bytes %v; want all", spec.MaxLines, max, spec.MaxLines+1, over,
			spec.MaxBodyBytes, large)
	}
}

// TestPrincipalsAtBounds: the principals hold the contract's bound, in
// bytes, in ASCII and in two-byte runes, and two differ only by case.
func TestPrincipalsAtBounds(t *testing.T) {
	if len(Principals[2]) != spec.MaxPrincipalBytes || len(Principals[3]) != spec.MaxPrincipalBytes {
		t.Errorf("principals of %d and %d bytes; want %d", len(Principals[2]), len(Principals[3]), spec.MaxPrincipalBytes)
	}
	if !strings.EqualFold(Principals[0], Principals[1]) || Principals[0] == Principals[1] {
		t.Errorf("principals %q and %q: want a case variant", Principals[0], Principals[1])
	}
	if BigPrice*spec.MaxQuantity+807 != 1<<63-1 {
		t.Errorf("BigPrice x %d + 807 = %d; want 2^63-1", spec.MaxQuantity, BigPrice*spec.MaxQuantity+807)
	}
}
