package audit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// aimWait bounds how long a kill or a pause waits for its aim: the next
// progress write to commit.
const aimWait = 500 * time.Millisecond

// aimReplicaID is the replica id the aimer follows the private server's
// binlog as (the capture copies files, so nothing else streams there).
const aimReplicaID = binlog.DefaultReplicaID + 1

// aimer follows the private server's binlog live and tells when a
// transaction that writes the relay's progress (the profile's
// outbox.progress: a row marked done, the cursor moved, a row deleted)
// commits. The nemesis aims its kills and pauses there: a process
// stopped right after a progress write commits and before what follows
// it (a publish after the mark, a next batch) is where a relay that marks
// before it publishes loses an event. Best-effort: a kill aims at the
// moment, not at the writer (the binlog does not say which connection
// wrote a row), and a live view is no witness: the verdict reads the
// captured files.
type aimer struct {
	prof   *profile.Profile
	schema string

	mu    sync.Mutex
	next  chan struct{} // closed at the next progress commit
	last  string        // where the last one's commit ends
	alive bool          // the follower runs
}

// startAimer follows the private server's binlog from the window's
// start until ctx ends; nil on your own server (the audit aims only on
// the server it started) or for a profile whose progress leaves no trace.
func startAimer(ctx context.Context, s *scope) *aimer {
	if s.private == nil || s.opts.Profile.Outbox.Progress.Kind == profile.ProgressNone {
		return nil
	}
	a := &aimer{prof: s.opts.Profile, schema: s.dbName, next: make(chan struct{}), alive: true}
	cfg := binlog.StreamConfig{DSN: s.dsn(s.cfg.Addr), ReplicaID: aimReplicaID, Logger: s.opts.Logger}
	go func() {
		err := binlog.Follow(ctx, cfg, s.start, a.commit)
		a.mu.Lock()
		a.alive = false
		a.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(s.opts.Progress, "nemesis: following the binlog for aimed faults stopped (%v); the faults after this are not aimed\n", err)
		}
	}()
	return a
}

// commit is Follow's callback.
func (a *aimer) commit(c binlog.LiveCommit) {
	if !progressWrite(a.prof, a.schema, c.Changes) {
		return
	}
	a.mu.Lock()
	close(a.next)
	a.next = make(chan struct{})
	a.last = fmt.Sprintf("%s:%d", c.File, c.Pos)
	a.mu.Unlock()
}

// wait waits up to d for the next progress commit and says where it
// committed; ok false when none came (or the follower stopped).
func (a *aimer) wait(ctx context.Context, d time.Duration) (where string, ok bool) {
	a.mu.Lock()
	next, alive := a.next, a.alive
	a.mu.Unlock()
	if !alive {
		return "", false
	}
	select {
	case <-next:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.last, true
	case <-time.After(d):
	case <-ctx.Done():
	}
	return "", false
}

// progressWrite says whether changes write the relay's progress as the
// profile maps it.
func progressWrite(p *profile.Profile, schema string, changes []binlog.LiveChange) bool {
	o, pr := p.Outbox, p.Outbox.Progress
	for _, c := range changes {
		if c.Schema != schema {
			continue
		}
		switch pr.Kind {
		case profile.ProgressStatus:
			if c.Table == o.Table && c.Op != binlog.Delete && pr.IsDone(c.After[pr.Column]) && !pr.IsDone(c.Before[pr.Column]) {
				return true
			}
		case profile.ProgressCompleted:
			if c.Table == o.Table && c.Op != binlog.Delete && c.After[pr.Column] != nil && (c.Before == nil || c.Before[pr.Column] == nil) {
				return true
			}
		case profile.ProgressDelete:
			if c.Table == o.Table && c.Op == binlog.Delete {
				return true
			}
		case profile.ProgressCursor:
			if c.Table == pr.Table && c.Op != binlog.Delete && matches(pr.Match, c.After) {
				return true
			}
		}
	}
	return false
}

// matches: the row has every column of match at its value.
func matches(match map[string]profile.Scalar, row map[string]any) bool {
	for col, want := range match {
		if got, ok := profile.Text(row[col]); !ok || got != string(want) {
			return false
		}
	}
	return true
}
