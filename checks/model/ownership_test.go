package model

import (
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/model/modeltest"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestUnowned pins the gaps the derivations read: each one's partition,
// members, cause, length and bound, in the order they closed; a gap
// still open at the end is not one.
func TestUnowned(t *testing.T) {
	type gap struct {
		part     int32
		from, to string
		cause    string
		d, bound time.Duration
	}
	for _, c := range []struct {
		history string
		want    []gap
	}{
		{"ok-unowned-at-bound", []gap{
			{0, "consumer-1", "consumer-2", GapLeft, 3 * time.Second, spec.UnownedAfterLeave},
			{1, "consumer-1", "consumer-2", GapDied, 15 * time.Second, spec.UnownedAfterDeath},
		}},
		{"ok-unowned-under-fault", []gap{
			{0, "consumer-1", "consumer-2", GapLeft, 23 * time.Second, spec.UnownedAfterDeath + 9*time.Second},
		}},
		{"partition-unowned-too-long", []gap{
			{0, "consumer-1", "consumer-2", GapLeft, 3001 * time.Millisecond, spec.UnownedAfterLeave},
		}},
	} {
		m := replay(t, modeltest.Load(t, histories+"/"+c.history), nil)
		got := m.Unowned()
		if len(got) != len(c.want) {
			t.Errorf("%s: %d gaps %+v; want %d", c.history, len(got), got, len(c.want))
			continue
		}
		for i, w := range c.want {
			g := got[i]
			if (gap{g.Partition, g.From, g.To, g.Cause, g.Duration(), g.Bound}) != w || g.Group != "g" || g.Topic != "t" {
				t.Errorf("%s: gap %d = %+v; want %+v of g/t", c.history, i, g, w)
			}
		}
	}
}

// TestCommitsReleased: an offset_commit of a member on a partition it
// revoked or lost and was not assigned again counts; one before the
// revoke, after a new assignment, or on a partition it never held does
// not.
func TestCommitsReleased(t *testing.T) {
	at := func(kind evidence.Kind, actor string, part int32, s int) evidence.Event {
		e := evidence.Event{Kind: kind, Actor: actor, Consumer: "g", Topic: "t", Partition: evidence.Ptr(part),
			Time: modeltest.Base.Add(time.Duration(s) * time.Second)}
		if kind == evidence.KindOffsetCommit {
			e.Offset = evidence.Ptr(int64(0))
		}
		return e
	}
	m := step(New(nil, nil),
		at(evidence.KindPartitionAssigned, "c1", 0, 0),
		at(evidence.KindPartitionAssigned, "c1", 1, 0),
		at(evidence.KindOffsetCommit, "c1", 0, 1), // held: no
		at(evidence.KindPartitionRevoked, "c1", 0, 2),
		at(evidence.KindOffsetCommit, "c1", 0, 2), // revoked: yes
		at(evidence.KindOffsetCommit, "c2", 0, 2), // never held, never released: no
		at(evidence.KindPartitionLost, "c1", 1, 3),
		at(evidence.KindOffsetCommit, "c1", 1, 3), // lost: yes
		at(evidence.KindPartitionAssigned, "c1", 0, 4),
		at(evidence.KindOffsetCommit, "c1", 0, 5), // assigned again: no
		at(evidence.KindOffsetCommit, "c1", 2, 5), // never held: no
	)
	if got := m.CommitsReleased(); got != 2 {
		t.Errorf("CommitsReleased() = %d; want 2", got)
	}
}
