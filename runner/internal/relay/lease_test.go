package relay_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/relay"
)

// dbNow reads the database clock.
func dbNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var now time.Time
	if err := db.QueryRowContext(t.Context(), `SELECT NOW(6)`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now.UTC()
}

// leaseStart is when the lease of c began by the database clock it was
// written on: lease_until minus the lease.
func leaseStart(c relay.Claimed, lease time.Duration) time.Time { return c.LeaseUntil.Add(-lease) }

// A relay whose own clock is an hour ahead or behind writes the same lease
// as any other: lease_until = the database clock at the claim + the lease;
// and a second relay, its clock skewed the other way, finds the row held.
// The planted LeaseOnRelayClock writes the lease on the relay's clock, and
// the relay an hour ahead takes the row of the one behind.
func TestLeaseOnDatabaseClock(t *testing.T) {
	const lease = 30 * time.Second
	const skew = time.Hour
	tests := []struct {
		name       string
		bug        plant.Bug
		wantOnDB   bool // both leases start at the database's claim time
		wantStolen int  // rows the relay ahead takes from the relay behind
	}{
		{"correct", plant.None, true, 0},
		{"planted lease-on-relay-clock", plant.LeaseOnRelayClock, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 1, 2)
			skewed := func(d time.Duration) func(*relay.Config) {
				return func(c *relay.Config) {
					c.Plant, c.Lease = tt.bug, lease
					c.Now = func() time.Time { return time.Now().Add(d) }
				}
			}
			ahead := b.relay(t, "relay-ahead", skewed(skew))
			behind := b.relay(t, "relay-behind", skewed(-skew))
			onDB := true
			for _, r := range []*relay.Relay{ahead, behind} {
				before := dbNow(t, b.DB)
				cs, err := r.Claim(ctx, 1)
				after := dbNow(t, b.DB)
				if err != nil || len(cs) != 1 {
					t.Fatalf("%s claim = %v, %v; want 1 row", r.Actor(), cs, err)
				}
				start := leaseStart(cs[0], lease)
				if start.Before(before) || start.After(after) {
					onDB = false
					t.Logf("%s: lease starts %v, the claim ran %v..%v on the database clock", r.Actor(), start, before, after)
				}
			}
			if onDB != tt.wantOnDB {
				t.Errorf("leases on the database clock = %v; want %v", onDB, tt.wantOnDB)
			}
			if cs, err := behind.Claim(ctx, 2); err != nil || len(cs) != 0 {
				t.Errorf("relay behind claimed %d rows, err %v; want none (both leases live)", len(cs), err)
			}
			stolen, err := ahead.Claim(ctx, 2)
			if err != nil || len(stolen) != tt.wantStolen {
				t.Errorf("relay ahead claimed %v, err %v; want %d rows", stolen, err, tt.wantStolen)
			}
			claims := evidencetest.Of(b.events(t), evidence.KindClaim)
			if ms := claims[0].LeaseMS; ms == nil || *ms != lease.Milliseconds() {
				t.Errorf("claim event lease_ms = %v; want %d", ms, lease.Milliseconds())
			}
		})
	}
}

// A takeover gets a fresh lease; the planted TakeoverKeepsLease keeps the
// expired one, and a third relay claims the row at once.
func TestTakeoverGetsFreshLease(t *testing.T) {
	tests := []struct {
		name      string
		bug       plant.Bug
		wantFresh bool
	}{
		{"correct", plant.None, true},
		{"planted takeover-keeps-lease", plant.TakeoverKeepsLease, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 3)
			bug := func(c *relay.Config) { c.Plant = tt.bug }
			a, rb, rc := b.relay(t, "relay-a", bug), b.relay(t, "relay-b", bug), b.relay(t, "relay-c", bug)
			if cs, err := a.Claim(ctx, 1); err != nil || len(cs) != 1 {
				t.Fatalf("claim = %v, %v", cs, err)
			}
			if _, err := relay.ExpireLease(ctx, b.DB, "e-3"); err != nil {
				t.Fatal(err)
			}
			now := dbNow(t, b.DB)
			cs, err := rb.Claim(ctx, 1)
			if err != nil || len(cs) != 1 || cs[0].StateBefore != evidence.StateClaimed {
				t.Fatalf("takeover = %v, %v", cs, err)
			}
			if fresh := cs[0].LeaseUntil.After(now.Add(20 * time.Second)); fresh != tt.wantFresh {
				t.Errorf("takeover lease_until %v (now %v) fresh = %v; want %v", cs[0].LeaseUntil, now, fresh, tt.wantFresh)
			}
			third, err := rc.Claim(ctx, 1)
			if err != nil || (len(third) == 0) != tt.wantFresh {
				t.Errorf("a third relay claimed %d rows (err %v) after the takeover; want the takeover's lease to protect it: %v",
					len(third), err, tt.wantFresh)
			}
		})
	}
}

// A relay that takes over its own expired lease keeps its claim_id and
// gets claim_version 2; its stale mark with version 1 hits nothing. The
// planted MarkCASClaimIDOnly compares the claim_id only, and the stale
// mark hits the row.
func TestSelfTakeoverStaleMark(t *testing.T) {
	tests := []struct {
		name      string
		bug       plant.Bug
		wantStale int64
	}{
		{"token cas", plant.None, 0},
		{"planted mark-cas-claim-id-only", plant.MarkCASClaimIDOnly, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 4)
			a := b.relay(t, "relay-a", func(c *relay.Config) { c.Plant = tt.bug })
			v1, err := a.Claim(ctx, 1)
			if err != nil || len(v1) != 1 {
				t.Fatalf("claim = %v, %v", v1, err)
			}
			if _, err := relay.ExpireLease(ctx, b.DB, "e-4"); err != nil {
				t.Fatal(err)
			}
			v2, err := a.Claim(ctx, 1)
			if err != nil || len(v2) != 1 || v2[0].ClaimVersion != 2 || v2[0].ClaimID != v1[0].ClaimID {
				t.Fatalf("self-takeover = %v, %v; want v2 with claim id %s", v2, err, v1[0].ClaimID)
			}
			stale, err := a.Mark(ctx, v1[0])
			if err != nil || stale != tt.wantStale {
				t.Fatalf("stale mark = %d, %v; want %d", stale, err, tt.wantStale)
			}
		})
	}
}

// The planted ClaimIgnoresLease takes a row another relay holds with a
// live lease (committed, so SKIP LOCKED has nothing to skip).
func TestClaimIgnoresLease(t *testing.T) {
	tests := []struct {
		name string
		bug  plant.Bug
		want int
	}{
		{"correct", plant.None, 0},
		{"planted claim-ignores-lease", plant.ClaimIgnoresLease, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := t.Context()
			insertIntents(t, b.DB, 1, 2)
			if cs, err := b.relay(t, "relay-a", nil).Claim(ctx, 0); err != nil || len(cs) != 2 {
				t.Fatalf("relay A claim = %v, %v", cs, err)
			}
			cs, err := b.relay(t, "relay-b", func(c *relay.Config) { c.Plant = tt.bug }).Claim(ctx, 0)
			if err != nil || len(cs) != tt.want {
				t.Fatalf("relay B claimed %d rows under live leases (err %v); want %d", len(cs), err, tt.want)
			}
		})
	}
}
