package audit

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// TestProgressWrite: what the aimer takes for a progress write, for each
// kind of progress, and what it does not.
func TestProgressWrite(t *testing.T) {
	status := &profile.Profile{Outbox: profile.Outbox{Table: "outbox",
		Progress: profile.Progress{Kind: profile.ProgressStatus, Column: "state", Done: []profile.Scalar{"SENT"}}}}
	completed := &profile.Profile{Outbox: profile.Outbox{Table: "outbox",
		Progress: profile.Progress{Kind: profile.ProgressCompleted, Column: "done_at"}}}
	deleted := &profile.Profile{Outbox: profile.Outbox{Table: "outbox", Progress: profile.Progress{Kind: profile.ProgressDelete}}}
	cursor := &profile.Profile{Outbox: profile.Outbox{Table: "outbox",
		Progress: profile.Progress{Kind: profile.ProgressCursor, Table: "offsets", Column: "acked", Match: map[string]profile.Scalar{"grp": "fwd"}}}}
	ch := func(table string, op binlog.Op, before, after map[string]any) binlog.LiveChange {
		return binlog.LiveChange{Schema: "db", Table: table, Op: op, Before: before, After: after}
	}
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		c    binlog.LiveChange
		want bool
	}{
		{"status set SENT", status, ch("outbox", binlog.Update, map[string]any{"state": "CLAIMED"}, map[string]any{"state": []byte("SENT")}), true},
		{"status SENT again", status, ch("outbox", binlog.Update, map[string]any{"state": "SENT"}, map[string]any{"state": "SENT"}), false},
		{"status claimed", status, ch("outbox", binlog.Update, map[string]any{"state": "PENDING"}, map[string]any{"state": "CLAIMED"}), false},
		{"status inserted SENT", status, ch("outbox", binlog.Insert, nil, map[string]any{"state": "SENT"}), true},
		{"status of another table", status, ch("orders", binlog.Update, map[string]any{"state": "X"}, map[string]any{"state": "SENT"}), false},
		{"completed set", completed, ch("outbox", binlog.Update, map[string]any{"done_at": nil}, map[string]any{"done_at": "2026-12-05"}), true},
		{"completed moved", completed, ch("outbox", binlog.Update, map[string]any{"done_at": "a"}, map[string]any{"done_at": "b"}), false},
		{"completed inserted open", completed, ch("outbox", binlog.Insert, nil, map[string]any{"done_at": nil}), false},
		{"deleted", deleted, ch("outbox", binlog.Delete, map[string]any{"id": 1}, nil), true},
		{"inserted, delete kind", deleted, ch("outbox", binlog.Insert, nil, map[string]any{"id": 1}), false},
		{"cursor moved", cursor, ch("offsets", binlog.Update, map[string]any{"grp": "fwd", "acked": 1}, map[string]any{"grp": "fwd", "acked": int64(2)}), true},
		{"another group's cursor", cursor, ch("offsets", binlog.Update, map[string]any{"grp": "x"}, map[string]any{"grp": "x", "acked": 2}), false},
		{"cursor row deleted", cursor, ch("offsets", binlog.Delete, map[string]any{"grp": "fwd"}, nil), false},
	} {
		if got := progressWrite(tc.p, "db", []binlog.LiveChange{tc.c}); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
		other := tc.c
		other.Schema = "elsewhere"
		if progressWrite(tc.p, "db", []binlog.LiveChange{other}) {
			t.Errorf("%s: a change in another database taken for a progress write", tc.name)
		}
	}
}

// TestRoleUser: a replica's account name is its name, lower case, every
// other character an underscore, at most MariaDB's 80 characters.
func TestRoleUser(t *testing.T) {
	for name, want := range map[string]string{
		"relay-1":                "ofa_relay_1",
		"Order.Service-12":       "ofa_order_service_12",
		"a'b`c":                  "ofa_a_b_c",
		strings.Repeat("x", 100): "ofa_" + strings.Repeat("x", 76),
	} {
		if got := roleUser(name); got != want {
			t.Errorf("roleUser(%q) = %q; want %q", name, got, want)
		}
	}
}
