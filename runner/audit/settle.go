package audit

import (
	"context"
	"fmt"
	"math/big"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// settlePoll is how often the settle check looks again.
const settlePoll = 200 * time.Millisecond

// settler tells when the pipeline has settled after the faults healed:
// every outbox row committed so far has a record on the topic (its event
// id found where the profile says), and every consumer group of the
// profile has committed the end offset of every partition. It reads the
// database and the broker as any client does; the verdict does not rest
// on it (the witnesses are read after it), it only says when to capture.
type settler struct {
	s  *scope
	cl *kgo.Client

	mu   sync.Mutex
	seen map[string]bool // event ids of the records read so far
	// ends are the topic's end offsets by partition when the last check
	// found the pipeline settled.
	ends map[int32]int64
	// passedAt is when check first found an event without a record that
	// the relay's progress had already passed (a cursor at or above its
	// row, its row marked done): a relay does not come back for it, so
	// after lostGrace the settle stops waiting for it. The verdict, read
	// from the witnesses, says whether it was lost.
	passedAt map[string]time.Time
}

// lostGrace is how long settle still waits for the record of an event
// the relay's progress has passed (a relay that marks a row done just
// before its record lands).
const lostGrace = 5 * time.Second

func newSettler(s *scope) (*settler, error) {
	cl, err := kgo.NewClient(s.kafka.ClientOpts(kgo.ConsumeTopics(s.opts.Profile.Topic.Name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, fmt.Errorf("settle: broker client: %w", err)
	}
	return &settler{s: s, cl: cl, seen: map[string]bool{}, passedAt: map[string]time.Time{}}, nil
}

// read polls records until ctx ends.
func (st *settler) read(ctx context.Context) {
	loc := st.s.opts.Profile.Topic.EventID
	for ctx.Err() == nil {
		fs := st.cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			var id string
			var ok bool
			if loc.Header != "" {
				for _, h := range r.Headers {
					if h.Key == loc.Header {
						id, ok = string(h.Value), true
					}
				}
			} else if loc.Value != nil {
				var v any
				if v, ok = profile.LookupPath(r.Value, loc.Value.Path); ok {
					id, ok = profile.Text(v)
				}
			}
			if ok {
				st.mu.Lock()
				st.seen[id] = true
				st.mu.Unlock()
			}
		})
	}
}

// wait checks until the pipeline has settled or bound has passed; it
// returns whether it settled and, if not, what was still missing.
func (st *settler) wait(ctx context.Context, bound time.Duration) (bool, string) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go st.read(rctx)
	deadline := time.Now().Add(bound)
	for {
		ok, why := st.check(ctx)
		if ok {
			return true, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, why
		}
		select {
		case <-ctx.Done():
		case <-time.After(settlePoll):
		}
	}
}

func (st *settler) close() { st.cl.Close() }

// check is one look: the outbox rows without a record, then the groups'
// lag.
func (st *settler) check(ctx context.Context) (bool, string) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p := st.s.opts.Profile
	if waitsForRows(p.Outbox.Progress.Kind) {
		rows, err := st.outboxRows(cctx)
		if err != nil {
			return false, err.Error()
		}
		missing, unmarked, passed := st.unsettled(rows, time.Now())
		if missing > 0 || unmarked > 0 {
			why := fmt.Sprintf("%d of %d outbox rows without a record", missing, len(rows))
			if unmarked > 0 {
				why += fmt.Sprintf(", %d with one that the relay's progress has not passed yet", unmarked)
			}
			if passed > 0 {
				why += fmt.Sprintf(" (and %d the relay's progress passed without one, no longer waited for)", passed)
			}
			return false, why
		}
	}
	return st.lagZero(cctx)
}

// waitsForRows says whether settle waits for the outbox rows of a relay
// whose progress is of kind k to have records. A row still in the outbox
// of a deleting relay is one it has not published yet, so it is waited
// for as any other; with no relay progress (a CDC router) rows may stay
// forever, and only the groups' lag is looked at.
func waitsForRows(k string) bool { return k != profile.ProgressNone }

// unsettled counts, as of now, the rows settle still waits for: missing,
// without a record (and not passed by progress for lostGrace); unmarked,
// with a record that the relay's progress has not passed yet (the relay
// is still at the row: a publish it may retry, whose copy would land
// after the consumers stopped); and passed, the rows progress passed
// without a record, no longer waited for.
func (st *settler) unsettled(rows []outboxRow, now time.Time) (missing, unmarked, passed int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, r := range rows {
		switch {
		case st.seen[r.id] && (r.passed || !r.marked):
		case st.seen[r.id]:
			unmarked++
		case r.passed:
			first, ok := st.passedAt[r.id]
			if !ok {
				st.passedAt[r.id], first = now, now
			}
			if now.Sub(first) < lostGrace {
				missing++
			} else {
				passed++
			}
		default:
			missing++
		}
	}
	return missing, unmarked, passed
}

// outboxRow is an outbox row as settle sees it: its event id, whether
// the relay's progress can be seen to pass it (marked: a status, a
// completed column, a cursor against a column, a deleting relay), and
// whether it has.
type outboxRow struct {
	id             string
	marked, passed bool
}

// outboxRows reads every outbox row's event id and, by the profile's
// progress kind, whether progress passed it: a cursor at or above its
// row's position, its status done, its completed column set.
func (st *settler) outboxRows(ctx context.Context) ([]outboxRow, error) {
	o := st.s.opts.Profile.Outbox
	pr := o.Progress
	var mark string
	switch {
	case pr.Kind == profile.ProgressCursor && pr.Against != nil:
		mark = pr.Against.Column
	case pr.Kind == profile.ProgressStatus || pr.Kind == profile.ProgressCompleted:
		mark = pr.Column
	}
	cols := "`" + o.EventID.Column + "`"
	if mark != "" {
		cols += ", `" + mark + "`"
	}
	var cursor *big.Rat
	if pr.Kind == profile.ProgressCursor && mark != "" {
		c, err := st.cursor(ctx)
		if err != nil {
			return nil, err
		}
		cursor = c
	}
	rows, err := st.s.db.QueryContext(ctx, "SELECT "+cols+" FROM `"+o.Table+"`")
	if err != nil {
		return nil, fmt.Errorf("settle: read the outbox: %w", err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var raw, m []byte
		dest := []any{&raw}
		if mark != "" {
			dest = append(dest, &m)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("settle: read the outbox: %w", err)
		}
		id, ok := profile.Text(lookup(o.EventID, raw))
		if !ok {
			continue
		}
		r := outboxRow{id: id, marked: mark != "" || pr.Kind == profile.ProgressDelete}
		switch pr.Kind {
		case profile.ProgressCursor:
			if cursor != nil && m != nil {
				if v := profile.Number(lookup(*pr.Against, m)); v != nil && cursor.Cmp(v) >= 0 {
					r.passed = true
				}
			}
		case profile.ProgressStatus:
			r.passed = pr.IsDone(lookup(profile.Field{Column: pr.Column}, m))
		case profile.ProgressCompleted:
			r.passed = m != nil
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// cursor reads the cursor row's value (nil when there is none yet).
func (st *settler) cursor(ctx context.Context) (*big.Rat, error) {
	pr := st.s.opts.Profile.Outbox.Progress
	q := "SELECT `" + pr.Column + "` FROM `" + pr.Table + "`"
	var args []any
	keys := make([]string, 0, len(pr.Match))
	for k := range pr.Match {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			q += " WHERE "
		} else {
			q += " AND "
		}
		q += "`" + k + "` = ?"
		args = append(args, string(pr.Match[k]))
	}
	rows, err := st.s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("settle: read the cursor: %w", err)
	}
	defer rows.Close()
	var high *big.Rat
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("settle: read the cursor: %w", err)
		}
		if v := profile.Number(lookup(profile.Field{Column: pr.Column}, raw)); v != nil && (high == nil || v.Cmp(high) > 0) {
			high = v
		}
	}
	return high, rows.Err()
}

// lookup applies f's JSON path (if any) to a column's raw value.
func lookup(f profile.Field, raw []byte) any {
	if raw == nil {
		return nil
	}
	if len(f.Path) == 0 {
		return string(raw)
	}
	v, _ := profile.LookupPath(raw, f.Path)
	return v
}

// lagZero: every group the profile names has committed the end offset
// of every partition. With no groups named, every group with offsets on
// the topic counts; a profile with a consumer (inbox or effect) needs at
// least one.
func (st *settler) lagZero(ctx context.Context) (bool, string) {
	p := st.s.opts.Profile
	topic := p.Topic.Name
	adm := kadm.NewClient(st.cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, "settle: end offsets: " + err.Error()
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return false, "settle: groups: " + err.Error()
	}
	found := 0
	for _, g := range listed.Groups() {
		if !groupMatch(p.Topic.Groups, g) {
			continue
		}
		offs, err := adm.FetchOffsets(ctx, g)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return false, "settle: offsets of " + g + ": " + err.Error()
		}
		if _, ok := offs[topic]; !ok && len(p.Topic.Groups) == 0 {
			continue // a group of another topic
		}
		found++
		var lag int64
		ends.Each(func(o kadm.ListedOffset) {
			at := int64(0)
			if c, ok := offs.Lookup(topic, o.Partition); ok {
				at = c.At
			}
			lag += o.Offset - at
		})
		if lag > 0 {
			return false, fmt.Sprintf("group %s lags %d record(s)", g, lag)
		}
	}
	if found == 0 && (len(p.Topic.Groups) > 0 || p.Inbox != nil || p.Effect != nil) {
		return false, "no consumer group of the profile has committed offsets on " + topic
	}
	st.mu.Lock()
	st.ends = endsOf(ends)
	st.mu.Unlock()
	return true, ""
}

func endsOf(ends kadm.ListedOffsets) map[int32]int64 {
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// grown says which partitions of the topic have records past the end
// offsets of the last settled check ("" when none, or when no check
// settled): records a role appended while it was being stopped, as a
// producer's retry in flight does, which no consumer was left to read.
func (st *settler) grown(ctx context.Context) (string, error) {
	st.mu.Lock()
	settled := st.ends
	st.mu.Unlock()
	if settled == nil {
		return "", nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(st.cl).ListEndOffsets(cctx, st.s.opts.Profile.Topic.Name)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return "", fmt.Errorf("settle: end offsets: %w", err)
	}
	return grownText(settled, endsOf(ends)), nil
}

// grownText names the partitions whose end offset in now is past the one
// in settled: "partition P from A to B, ...".
func grownText(settled, now map[int32]int64) string {
	var parts []int32
	for p, n := range now {
		if n > settled[p] {
			parts = append(parts, p)
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []string
	for _, p := range parts {
		out = append(out, fmt.Sprintf("partition %d from %d to %d", p, settled[p], now[p]))
	}
	return strings.Join(out, ", ")
}

// groupMatch: a group is the profile's when a pattern matches it (path
// globs, as the verifier reads them), or when there are none.
func groupMatch(patterns []string, group string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, g := range patterns {
		if ok, _ := path.Match(g, group); ok {
			return true
		}
	}
	return false
}
