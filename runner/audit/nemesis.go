package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The audit's nemesis: a seeded schedule of faults over the profile's
// processes and their database links, as chaos draws one over the
// reference's actors (runner/nemesis), each fault recorded as it was
// applied. The same seed, duration, kinds and roles give the same
// schedule.

// Kinds lists the fault kinds the audit injects: those of nemesis.Kinds
// on the roles' processes and database links, and every fault of the
// embedded broker (a window of refused, unanswered or unacknowledged
// produce requests, failed fetches, forced rebalances of every group; a
// restart on its data directory), and kill -9 of the private server with
// a restart on its data directory (InnoDB's crash recovery), and KILL
// CONNECTION of every connection of one replica, found by its own account
// on the private server (conn-kill), and a window in which every COMMIT a
// role sends on its database link is lost with its connection
// (commit-lost: the transaction rolls back, the role cannot know).
var Kinds = []nemesis.Kind{nemesis.Kill, nemesis.Pause, nemesis.Latency, nemesis.NetCut,
	nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost, nemesis.FetchError, nemesis.Rebalance, nemesis.BrokerRestart,
	nemesis.DBCrash, nemesis.ConnKill, nemesis.CommitLost}

// brokerWindows are the broker's window faults by kind.
var brokerWindows = map[nemesis.Kind]infra.BrokerFault{
	nemesis.ProduceRefused: infra.FaultProduceRefused,
	nemesis.ProduceTimeout: infra.FaultProduceTimeout,
	nemesis.AckLost:        infra.FaultAckLost,
	nemesis.FetchError:     infra.FaultFetchError,
	nemesis.Rebalance:      infra.FaultRebalance,
}

// ParseKinds parses --faults: "none", "" or "all" (every kind of Kinds),
// or a comma-separated list of them.
func ParseKinds(s string) ([]nemesis.Kind, error) {
	switch s {
	case "none":
		return []nemesis.Kind{}, nil
	case "", "all":
		return slices.Clone(Kinds), nil
	}
	ks, err := nemesis.ParseKindsOf(s, Kinds)
	if err != nil {
		return nil, fmt.Errorf("%w: --faults: %v", ErrBadOptions, err)
	}
	return ks, nil
}

// KindList is Kinds joined with commas.
func KindList() string {
	parts := make([]string, len(Kinds))
	for i, k := range Kinds {
		parts[i] = string(k)
	}
	return strings.Join(parts, ",")
}

// Lengths of the faults.
const (
	// PauseFor is the shortest pause: a process stopped past it has
	// missed heartbeats and leases of a second or so.
	PauseFor = 1500 * time.Millisecond
	// meanGap is the mean time between two faults.
	meanGap = nemesis.DefaultEvery
)

// schedule draws the faults of one audit over [0, d): gaps as chaos draws
// them (exponential with mean meanGap, between 100 ms and twice the mean),
// each fault's kind, replica and length from the seed. Every draw takes the
// same random values whatever it picks, so that a shorter duration gives a
// prefix of a longer one's schedule.
func schedule(seed int64, d time.Duration, kinds []nemesis.Kind, targets []string) []nemesis.Fault {
	if len(kinds) == 0 || len(targets) == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6175646974)) // "audit"
	var out []nemesis.Fault
	at := time.Duration(0)
	for n := 1; ; n++ {
		gap := time.Duration(r.ExpFloat64() * float64(meanGap))
		at += min(max(gap, 100*time.Millisecond), 2*meanGap)
		k, pick, length, delay := kinds[r.IntN(len(kinds))], r.IntN(1<<20), r.IntN(1000), r.IntN(1000)
		if at >= d {
			return out
		}
		f := nemesis.Fault{N: n, At: at, Kind: k, Target: targets[pick%len(targets)]}
		switch k {
		case nemesis.ProduceRefused, nemesis.ProduceTimeout, nemesis.AckLost, nemesis.FetchError, nemesis.Rebalance:
			f.Target = nemesis.TargetBroker
			f.For = 200*time.Millisecond + time.Duration(length)*time.Millisecond/2
		case nemesis.BrokerRestart:
			f.Target = nemesis.TargetBroker
		case nemesis.DBCrash:
			f.Target = nemesis.TargetDatabase
		case nemesis.Pause:
			f.For = PauseFor + time.Duration(length)*time.Millisecond
		case nemesis.Latency, nemesis.NetCut, nemesis.CommitLost:
			f.Target += ">database"
			f.For = 300*time.Millisecond + time.Duration(length)*time.Millisecond
			if k == nemesis.Latency {
				f.Delay = time.Duration(20+delay%180) * time.Millisecond
			}
		}
		out = append(out, f)
	}
}

// Schedule is the schedule an audit with o runs: the seed's faults over
// o.Duration, drawn from o.Faults over the profile's replicas, those that
// o.Only keeps (nemesis.Keeps, as the chaos scenario's schedule; the
// numbers stay the full schedule's). explore's shrinking names faults by
// these numbers, and `audit --only-faults` replays what it kept.
func Schedule(o Options) []nemesis.Fault {
	if o.Profile == nil {
		return nil
	}
	var targets []string
	for name, def := range o.Profile.Roles {
		for i := 1; i <= def.Replicas; i++ {
			targets = append(targets, name+"-"+strconv.Itoa(i))
		}
	}
	slices.Sort(targets) // planRoles's order: roles by name, then replica
	if l := o.Profile.Load; l != nil && l.SQL != nil {
		targets = append(targets, ClientTarget) // its database link only
	}
	var out []nemesis.Fault
	for _, f := range schedule(o.Seed, o.Duration, o.Faults, targets) {
		if nemesis.Keeps(o.Only, f.N) {
			out = append(out, f)
		}
	}
	return out
}

// NemesisEvent is one fault as applied: when it began and healed, and
// what came of it.
type NemesisEvent struct {
	N      int       `json:"n"`
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Delay  string    `json:"delay,omitempty"`
	// Result is "done" (commit-lost: "done: N COMMIT(s) lost"), or why
	// it was not (the process was not running).
	Result string `json:"result"`
}

// nemesisRun applies a schedule.
type nemesisRun struct {
	s     *scope
	roles *roles
	// aim, when set, times kills and pauses right after a progress write
	// commits (aim.go).
	aim *aimer

	mu     sync.Mutex
	events []NemesisEvent
	busy   map[string]bool // targets under a lasting fault now
	wg     sync.WaitGroup
}

// take marks target as under a lasting fault; false if it already is (two
// faults on one link would heal each other).
func (nr *nemesisRun) take(target string) bool {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if nr.busy == nil {
		nr.busy = map[string]bool{}
	}
	if nr.busy[target] {
		return false
	}
	nr.busy[target] = true
	return true
}

func (nr *nemesisRun) release(target string) {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	delete(nr.busy, target)
}

// run applies faults at their times from now until ctx ends; each
// lasting fault heals itself after its length, or at heal.
func (nr *nemesisRun) run(ctx context.Context, faults []nemesis.Fault) {
	start := time.Now()
	for _, f := range faults {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(f.At))):
		}
		nr.wg.Add(1)
		go func() {
			defer nr.wg.Done()
			nr.apply(ctx, f)
		}()
	}
}

func (nr *nemesisRun) apply(ctx context.Context, f nemesis.Fault) {
	ev := NemesisEvent{N: f.N, Kind: string(f.Kind), Target: f.Target, Start: time.Now().UTC(), Result: "done"}
	if f.Delay > 0 {
		ev.Delay = f.Delay.String()
	}
	name, _, _ := strings.Cut(f.Target, ">")
	r := nr.roles.byName(name)
	wait := func() {
		select {
		case <-ctx.Done():
		case <-time.After(f.For):
		}
	}
	// One lasting fault per target; the broker's and the server's too (a
	// restart drops the broker's windows).
	if f.For > 0 || f.Target == nemesis.TargetBroker || f.Target == nemesis.TargetDatabase {
		if !nr.take(f.Target) {
			ev.Result, ev.End = "skipped: already under a fault", ev.Start
			nr.record(ev)
			return
		}
		defer nr.release(f.Target)
	}
	if f.Kind == nemesis.DBCrash {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		took, err := nr.s.private.Crash(cctx, nr.s.opts.Private)
		cancel()
		ev.Result = "done: up again in " + took.Round(time.Millisecond).String()
		if err != nil {
			ev.Result = "failed: " + err.Error()
		}
		ev.End = time.Now().UTC()
		nr.record(ev)
		return
	}
	if f.Target == nemesis.TargetBroker {
		nr.brokerFault(ctx, f, &ev, wait)
		ev.End = time.Now().UTC()
		nr.record(ev)
		return
	}
	if r == nil {
		ev.Result, ev.End = "skipped: no such target", time.Now().UTC()
		nr.record(ev)
		return
	}
	if r == nr.roles.client && f.Kind != nemesis.Latency && f.Kind != nemesis.NetCut && f.Kind != nemesis.CommitLost {
		ev.Result, ev.End = "skipped: the load client is the audit's own; only its database link is faulted", time.Now().UTC()
		nr.record(ev)
		return
	}
	aimed := ""
	if (f.Kind == nemesis.Kill || f.Kind == nemesis.Pause) && nr.aim != nil {
		if where, ok := nr.aim.wait(ctx, aimWait); ok {
			aimed = " (aimed: right after a progress write committed, at " + where + ")"
		} else {
			aimed = fmt.Sprintf(" (not aimed: no progress write committed within %v)", aimWait)
		}
		ev.Start = time.Now().UTC()
	}
	switch f.Kind {
	case nemesis.ConnKill:
		ev.Result = nr.connKill(ctx, r)
	case nemesis.Kill:
		if !r.signal(syscall.SIGKILL) {
			ev.Result = "skipped: not running"
			break
		}
		ev.Result += aimed
	case nemesis.Pause:
		if !r.signal(syscall.SIGSTOP) {
			ev.Result = "skipped: not running"
			break
		}
		ev.Result += aimed
		wait()
		r.signal(syscall.SIGCONT)
	case nemesis.Latency:
		if err := r.link.Delay(f.Delay); err != nil {
			ev.Result = "failed: " + err.Error()
			break
		}
		wait()
		nr.healLink(r)
	case nemesis.NetCut:
		r.link.Cut()
		wait()
		nr.healLink(r)
	case nemesis.CommitLost:
		if err := r.link.LoseCommits(); err != nil {
			ev.Result = "failed: " + err.Error()
			break
		}
		wait()
		nr.healLink(r)
		ev.Result += fmt.Sprintf(": %d COMMIT(s) lost", r.link.CommitsLost())
	}
	ev.End = time.Now().UTC()
	nr.record(ev)
}

// connKill kills every connection of replica r on the server (KILL
// CONNECTION, found by its account in the process list), mid-transaction
// or idle, as a server restart, a proxy or a DBA would; it says how many.
func (nr *nemesisRun) connKill(ctx context.Context, r *replica) string {
	if r.dbUser == "" {
		return "skipped: the replica has no account of its own"
	}
	kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db := nr.s.server.DB()
	rows, err := db.QueryContext(kctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", r.dbUser)
	if err != nil {
		return "failed: " + err.Error()
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	killed := 0
	for _, id := range ids {
		// A connection that ended meanwhile is "unknown thread id": not
		// killed, not a failure.
		if _, err := db.ExecContext(kctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err == nil {
			killed++
		}
	}
	if killed == 0 {
		return "skipped: no connection of " + r.dbUser
	}
	return fmt.Sprintf("done: %d connection(s) of %s killed", killed, r.dbUser)
}

func (nr *nemesisRun) record(ev NemesisEvent) {
	nr.mu.Lock()
	nr.events = append(nr.events, ev)
	nr.mu.Unlock()
}

// brokerFault opens a window fault of the embedded broker for f.For, or
// restarts it.
func (nr *nemesisRun) brokerFault(ctx context.Context, f nemesis.Fault, ev *NemesisEvent, wait func()) {
	k := nr.s.kafka
	if f.Kind == nemesis.BrokerRestart {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := k.Restart(rctx); err != nil {
			ev.Result = "failed: " + err.Error()
		}
		return
	}
	w, err := k.Inject(brokerWindows[f.Kind], nr.s.opts.Profile.Topic.Name, "") // every group
	if err != nil {
		ev.Result = "failed: " + err.Error()
		return
	}
	wait()
	ev.Result = fmt.Sprintf("done: %d request(s) hit", w.Heal())
}

func (nr *nemesisRun) healLink(r *replica) {
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.link.Heal(hctx); err != nil {
		fmt.Fprintf(nr.s.opts.Progress, "nemesis: %v\n", err)
	}
}

// heal waits for the lasting faults to end (their waits end with ctx)
// and makes sure every process runs on and every link is whole.
func (nr *nemesisRun) heal() {
	nr.wg.Wait()
	for _, r := range nr.roles.list {
		r.signal(syscall.SIGCONT)
		nr.healLink(r)
	}
	if c := nr.roles.client; c != nil {
		nr.healLink(c)
	}
}

// counts returns the faults applied, by kind.
func (nr *nemesisRun) counts() map[string]int {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	out := map[string]int{}
	for _, e := range nr.events {
		if strings.HasPrefix(e.Result, "done") {
			out[e.Kind]++
		}
	}
	return out
}
