package audit

import (
	"context"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// TestSettleStopsWaitingForPassedRows: settle reads which outbox rows the
// relay's progress has passed (a cursor of the profile's row at or above
// the row's position; a status done; a completed column set; a deleting
// relay's row gone), waits lostGrace for their records, then no longer: a
// relay does not come back for a row it passed, and the verdict says
// whether it was lost. A row with a record that progress has not passed
// is waited for: the relay is still at it.
func TestSettleStopsWaitingForPassedRows(t *testing.T) {
	sc := infratest.Scratch(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE wm_outbox (`offset` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL)",
		"CREATE TABLE wm_cursor (consumer_group VARCHAR(64) NOT NULL PRIMARY KEY, offset_acked BIGINT NOT NULL)",
		`INSERT INTO wm_outbox (payload) VALUES ('{"uuid":"u-1"}'), ('{"uuid":"u-2"}'), ('{"uuid":"u-3"}'), ('{"uuid":"u-4"}')`,
		// The profile's cursor row is at 2; another group's, ignored, at 10.
		"INSERT INTO wm_cursor VALUES ('fwd', 2), ('other', 10)",
		// The reference outbox, with a status: e-1 SENT, e-2 PENDING.
		`INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload, state) VALUES ('e-1', 1, 1, '{}', 'SENT'), ('e-2', 1, 2, '{}', 'PENDING')`,
	} {
		if _, err := sc.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	uuid, err := profile.ParseField("payload$.uuid")
	if err != nil {
		t.Fatal(err)
	}
	cursor := &profile.Profile{Outbox: profile.Outbox{Table: "wm_outbox", EventID: uuid,
		Progress: profile.Progress{Kind: profile.ProgressCursor, Table: "wm_cursor", Column: "offset_acked",
			Against: &profile.Field{Column: "offset"}, Match: map[string]profile.Scalar{"consumer_group": "fwd"}}}}
	status := &profile.Profile{Outbox: profile.Outbox{Table: "outbox", EventID: profile.Field{Column: "event_id"},
		Progress: profile.Progress{Kind: profile.ProgressStatus, Column: "state", Done: []profile.Scalar{"SENT"}}}}

	deleting := &profile.Profile{Outbox: profile.Outbox{Table: "wm_outbox", EventID: uuid,
		Progress: profile.Progress{Kind: profile.ProgressDelete}}}

	for _, tc := range []struct {
		name   string
		p      *profile.Profile
		passed map[string]bool
		seen   string // the one event with a record
	}{
		{"cursor", cursor, map[string]bool{"u-1": true, "u-2": true, "u-3": false, "u-4": false}, "u-3"},
		{"status", status, map[string]bool{"e-1": true, "e-2": false}, ""},
		{"status, a done row seen", status, map[string]bool{"e-1": true, "e-2": false}, "e-1"},
		// A row still in a deleting relay's outbox is not passed.
		{"delete", deleting, map[string]bool{"u-1": false, "u-2": false, "u-3": false, "u-4": false}, "u-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &settler{s: &scope{opts: &Options{Profile: tc.p}, db: sc.DB}, seen: map[string]bool{}, passedAt: map[string]time.Time{}}
			rows, err := st.outboxRows(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, r := range rows {
				got[r.id] = r.passed
			}
			if len(got) != len(tc.passed) {
				t.Fatalf("rows %v; want %v", got, tc.passed)
			}
			for id, want := range tc.passed {
				if got[id] != want {
					t.Errorf("%s passed = %v; want %v", id, got[id], want)
				}
			}
			if tc.seen != "" {
				st.seen[tc.seen] = true
			}
			nPassed, nOpen := 0, 0
			for id, p := range tc.passed {
				switch {
				case id == tc.seen:
				case p:
					nPassed++
				default:
					nOpen++
				}
			}
			// A seen row that progress has not passed is still waited
			// for: the relay may publish it again.
			nUnmarked := 0
			if tc.seen != "" && !tc.passed[tc.seen] {
				nUnmarked = 1
			}
			t0 := time.Now()
			if m, u, p := st.unsettled(rows, t0); m != nPassed+nOpen || u != nUnmarked || p != 0 {
				t.Errorf("at first: waiting for %d and %d unmarked, given up %d; want %d, %d and 0", m, u, p, nPassed+nOpen, nUnmarked)
			}
			if m, u, p := st.unsettled(rows, t0.Add(lostGrace-time.Millisecond)); m != nPassed+nOpen || u != nUnmarked || p != 0 {
				t.Errorf("within the grace: waiting for %d and %d unmarked, given up %d; want %d, %d and 0", m, u, p, nPassed+nOpen, nUnmarked)
			}
			if m, u, p := st.unsettled(rows, t0.Add(lostGrace)); m != nOpen || u != nUnmarked || p != nPassed {
				t.Errorf("after the grace: waiting for %d and %d unmarked, given up %d; want %d, %d and %d", m, u, p, nOpen, nUnmarked, nPassed)
			}
		})
	}
}

// TestWaitsForRows: settle waits for the rows of every relay whose
// progress it can see, a deleting one's included (a row still there is
// unpublished), and not for a CDC router's.
func TestWaitsForRows(t *testing.T) {
	for _, k := range []string{profile.ProgressStatus, profile.ProgressCursor, profile.ProgressCompleted, profile.ProgressDelete} {
		if !waitsForRows(k) {
			t.Errorf("waitsForRows(%q) = false; want true", k)
		}
	}
	if waitsForRows(profile.ProgressNone) {
		t.Errorf("waitsForRows(%q) = true; want false", profile.ProgressNone)
	}
}

// TestGrownText names exactly the partitions whose end offset moved past
// the settled one.
func TestGrownText(t *testing.T) {
	settled := map[int32]int64{0: 10, 1: 20, 2: 30}
	for _, tc := range []struct {
		now  map[int32]int64
		want string
	}{
		{map[int32]int64{0: 10, 1: 20, 2: 30}, ""},
		{map[int32]int64{0: 11, 1: 20, 2: 30}, "partition 0 from 10 to 11"},
		{map[int32]int64{0: 10, 1: 22, 2: 31}, "partition 1 from 20 to 22, partition 2 from 30 to 31"},
		{map[int32]int64{0: 9, 1: 20, 2: 30}, ""}, // never lower in practice; not growth
		{map[int32]int64{0: 10, 1: 20, 2: 30, 3: 1}, "partition 3 from 0 to 1"},
	} {
		if got := grownText(settled, tc.now); got != tc.want {
			t.Errorf("grownText(%v) = %q; want %q", tc.now, got, tc.want)
		}
	}
}
