package chaos_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The engine over processes it knows nothing of: every slot runs `sleep`,
// the broker and the database are fakes that count what they were asked,
// and the load is accepted at once. What the tests hold is the engine's
// own part: the events it records, the supervisor's restarts, the pauses
// and their heals, and that nothing it started is left running.

// sleeper is a `sleep` process as a chaos.Launched.
type sleeper struct{ cmd *exec.Cmd }

func (p sleeper) Pid() int                   { return p.cmd.Process.Pid }
func (p sleeper) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
func (p sleeper) Kill() error                { return p.cmd.Process.Kill() }

func (p sleeper) Wait() (chaos.Exit, error) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return chaos.Exit{}, err
	}
	if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return chaos.Exit{Code: -1, Signal: st.Signal()}, nil
	}
	return chaos.Exit{Code: p.cmd.ProcessState.ExitCode()}, nil
}

// sleepers launches `sleep 60` for every incarnation and remembers the
// pids.
type sleepers struct {
	mu   sync.Mutex
	pids []int
}

func (ss *sleepers) launch(ctx context.Context, name string) (chaos.Launched, error) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ss.mu.Lock()
	ss.pids = append(ss.pids, cmd.Process.Pid)
	ss.mu.Unlock()
	return sleeper{cmd}, nil
}

// fakeBroker counts the windows and restarts it was asked for.
type fakeBroker struct {
	windows, restarts atomic.Int64
}

func (b *fakeBroker) Addr() string { return "127.0.0.1:9092" }
func (b *fakeBroker) Inject(k nemesis.Kind) (func() int64, error) {
	b.windows.Add(1)
	return func() int64 { return 3 }, nil
}
func (b *fakeBroker) Restart(ctx context.Context) error          { b.restarts.Add(1); return nil }
func (b *fakeBroker) Records(ctx context.Context) (int64, error) { return 10, nil }

// fakeDB kills a made-up connection and has no server to crash.
type fakeDB struct{ kills atomic.Int64 }

func (d *fakeDB) KillConnection(ctx context.Context) (string, error) {
	d.kills.Add(1)
	return "KILL CONNECTION 7, in a transaction for 100 µs, command Query, state \"\": UPDATE t", nil
}
func (d *fakeDB) Crash(ctx context.Context) (string, error) { return "", nil }

// acceptAll answers every request at once and is always quiescent.
type acceptAll struct{ sent atomic.Int64 }

func (w *acceptAll) Send(ctx context.Context, r nemesis.Request, until time.Time) (chaos.Answer, int) {
	w.sent.Add(1)
	return chaos.Accepted, 1
}
func (w *acceptAll) Quiescent(ctx context.Context) (string, error) { return "", nil }

// stopAtOnce is an Aimer that stops a relay at once with SIGSTOP (as a
// black-box aim that stops a role when the database shows it passed
// somewhere would), and only relays.
type stopAtOnce struct{}

func (stopAtOnce) StopsAt(slot string, point fault.Point) bool {
	return strings.HasPrefix(slot, "relay-")
}
func (stopAtOnce) Arm(p chaos.Process, name, slot string, point fault.Point) (string, string) {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return "SIGSTOP", " (not delivered)"
	}
	return "SIGSTOP", ""
}
func (stopAtOnce) Window(point fault.Point) time.Duration { return 200 * time.Millisecond }

// setup returns targets of `sleep` processes for slots orders, relay-1,
// relay-2 and consumer-1, with a proxy on each slot's database link and
// the relays' and the consumer's broker link, in front of a listener.
func setup(t *testing.T, aimer chaos.Aimer) (chaos.Targets, *sleepers, *fakeBroker, *fakeDB) {
	t.Helper()
	upstream := echo(t)
	ps := chaos.NewProxies()
	t.Cleanup(ps.Close)
	ss := &sleepers{}
	tg := chaos.Targets{Links: ps, Broker: &fakeBroker{}, Database: &fakeDB{}, Aimer: aimer}
	for _, name := range []string{nemesis.OrdersName, nemesis.RelayName(1), nemesis.RelayName(2), nemesis.ConsumerName(1)} {
		tg.Slots = append(tg.Slots, chaos.Slot{Name: name, Launch: ss.launch})
		for _, c := range []string{nemesis.TargetDatabase, nemesis.TargetBroker} {
			if _, err := ps.Add(name+">"+c, upstream); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tg, ss, tg.Broker.(*fakeBroker), tg.Database.(*fakeDB)
}

// runPlan runs the engine with plan over tg and returns its result and
// the nemesis's events.
func runPlan(t *testing.T, tg chaos.Targets, w chaos.Workload, plan []nemesis.Fault, d time.Duration) (chaos.Result, []evidence.Event) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nemesis.jsonl")
	log, err := evidence.CreateLog(path, "run-1", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	cfg := nemesis.Config{Duration: d, Orders: 12, Relays: 2, Consumers: 1, Plan: plan}
	cfg.SetDefaults()
	var failures []string
	res, err := chaos.Run(t.Context(), chaos.Options{Config: cfg, Log: log, Failf: func(f string, args ...any) {
		failures = append(failures, f)
	}}, tg, w)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(failures) > 0 {
		t.Errorf("failures recorded: %v", failures)
	}
	events, err := evidence.ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	return res, events
}

// TestRunUnaimed applies one fault of every kind the fakes can take to
// processes the engine knows nothing of, with no Aimer: the kill is
// recorded with the process's end by signal 9 and its restart, the pause
// is a SIGSTOP healed by SIGCONT, the broker and database faults reach
// the fakes, the links are delayed and cut and healed, the db-crash with
// no server to crash is skipped, the load is sent whole, and every
// process started has ended when Run returns.
func TestRunUnaimed(t *testing.T) {
	tg, ss, broker, db := setup(t, nil)
	w := &acceptAll{}
	plan := []nemesis.Fault{
		{At: 100 * time.Millisecond, Kind: nemesis.Kill, Target: "relay-1"},
		{At: 300 * time.Millisecond, Kind: nemesis.Pause, Target: "relay-2", For: 300 * time.Millisecond},
		{At: 400 * time.Millisecond, Kind: nemesis.AckLost, Target: nemesis.TargetBroker, For: 200 * time.Millisecond},
		{At: 500 * time.Millisecond, Kind: nemesis.BrokerRestart, Target: nemesis.TargetBroker},
		{At: 600 * time.Millisecond, Kind: nemesis.ConnKill, Target: "consumer-1"},
		{At: 700 * time.Millisecond, Kind: nemesis.DBCrash, Target: nemesis.TargetDatabase},
		{At: 800 * time.Millisecond, Kind: nemesis.Latency, Target: "orders>database", For: 200 * time.Millisecond, Delay: 20 * time.Millisecond},
		{At: 900 * time.Millisecond, Kind: nemesis.NetCut, Target: "relay-2>broker", For: 200 * time.Millisecond},
	}
	res, events := runPlan(t, tg, w, plan, 1200*time.Millisecond)

	want := map[string]int{"kill": 1, "pause": 1, "ack-lost": 1, "broker-restart": 1, "conn-kill": 1, "latency": 1, "net-cut": 1}
	for k, n := range want {
		if res.Injected[k] != n {
			t.Errorf("injected %s %d times; want %d (all: %v)", k, res.Injected[k], n, res.Injected)
		}
	}
	if res.Injected["db-crash"] != 0 {
		t.Errorf("db-crash counted as injected without a server to crash: %v", res.Injected)
	}
	if !res.Settled.OK || res.Load.Created != 12 || res.Load.Unanswered != 0 || w.sent.Load() != 12 {
		t.Errorf("settled %+v, load %+v, sent %d; want settled and 12 created", res.Settled, res.Load, w.sent.Load())
	}
	if broker.windows.Load() != 1 || broker.restarts.Load() != 1 || db.kills.Load() != 1 {
		t.Errorf("broker windows %d, restarts %d, connection kills %d; want 1 each", broker.windows.Load(), broker.restarts.Load(), db.kills.Load())
	}
	checkEvents(t, events, map[string]*regexp.Regexp{
		"fault nemesis-kill relay-1": regexp.MustCompile(`^fault #1 at 100ms: SIGKILL to relay-1 \(pid \d+\); the supervisor starts it again$`),
		"process_exit  relay-1":      regexp.MustCompile(`^killed by signal 9 \(killed\)$`),
		"process_start  relay-1.2":   regexp.MustCompile(`^slot relay-1, start 2, after its previous process ended$`),
		// The state is read 5 ms after the signal: on a busy machine
		// the process may not have stopped yet.
		"fault nemesis-pause relay-2":             regexp.MustCompile(`SIGSTOP to relay-2 \(pid \d+, state "\w*" after it\) for 300ms, longer than its lease 1s \(relay-2 does not stop at after-publish-before-mark\)$`),
		"heal nemesis-pause relay-2":              regexp.MustCompile(`^SIGCONT to relay-2 \(pid \d+\) after 300ms stopped$`),
		"heal nemesis-ack-lost broker":            regexp.MustCompile(`it failed 3 request\(s\) meanwhile`),
		"fault nemesis-broker-restart broker":     regexp.MustCompile(`port 127\.0\.0\.1:9092 .* held 10 record\(s\) before and 10 after$`),
		"fault nemesis-conn-kill consumer-1":      regexp.MustCompile(`KILL CONNECTION 7, .* \(consumer-1 does not stop at effect-commit-killed\)$`),
		"fault_skipped nemesis-db-crash database": regexp.MustCompile(`no server of the run's own to crash`),
		"fault nemesis-latency orders>database":   regexp.MustCompile(`delays every packet by 20ms`),
		"heal nemesis-net-cut relay-2>broker":     regexp.MustCompile(`^the link relay-2>broker carries traffic normally again$`),
	})
	nothingRuns(t, ss)
}

// TestRunAimed: with an Aimer, a pause of relay-1 stops it where it is
// aimed and holds relay-2, armed as the taker, until the heal wakes both.
func TestRunAimed(t *testing.T) {
	tg, ss, _, _ := setup(t, stopAtOnce{})
	plan := []nemesis.Fault{{At: 100 * time.Millisecond, Kind: nemesis.Pause, Target: "relay-1", For: 300 * time.Millisecond}}
	_, events := runPlan(t, tg, &acceptAll{}, plan, 600*time.Millisecond)
	checkEvents(t, events, map[string]*regexp.Regexp{
		"fault nemesis-pause relay-1": regexp.MustCompile(`^fault #1 at 100ms: relay-1 \(pid \d+\) stopped itself at after-publish-before-mark, ` +
			`\S+ after SIGSTOP armed it \(state "T"\) for 300ms, longer than its lease 1s$`),
		"heal nemesis-pause relay-1": regexp.MustCompile(`^SIGCONT to relay-1 \(pid \d+\) after 300ms stopped; ` +
			`relay-2 \(pid \d+\) had stopped itself at takeover-published, holding its takeover unmarked, and got SIGCONT 250ms later$`),
	})
	nothingRuns(t, ss)
}

// TestRunRefusesMissingTargets: a schedule that hits what the targets do
// not have (no broker, a link without a proxy, a slot that is not there)
// is refused before any process starts.
func TestRunRefusesMissingTargets(t *testing.T) {
	for _, c := range []struct {
		name  string
		f     nemesis.Fault
		strip func(*chaos.Targets)
		want  string
	}{
		{"no broker", nemesis.Fault{Kind: nemesis.AckLost, Target: nemesis.TargetBroker, For: time.Second},
			func(tg *chaos.Targets) { tg.Broker = nil }, "the targets have no broker"},
		{"no database", nemesis.Fault{Kind: nemesis.DBCrash, Target: nemesis.TargetDatabase},
			func(tg *chaos.Targets) { tg.Database = nil }, "the targets have no database"},
		{"no link", nemesis.Fault{Kind: nemesis.NetCut, Target: "orders>cache", For: time.Second},
			func(*chaos.Targets) {}, "the targets have no link orders>cache"},
		{"no slot", nemesis.Fault{Kind: nemesis.Kill, Target: "relay-9"},
			func(*chaos.Targets) {}, "the targets have no slot relay-9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, ss, _, _ := setup(t, nil)
			c.strip(&tg)
			cfg := nemesis.Config{Duration: time.Second, Orders: 1, Plan: []nemesis.Fault{c.f}}
			cfg.SetDefaults()
			_, err := chaos.Run(t.Context(), chaos.Options{Config: cfg, Failf: t.Errorf}, tg, &acceptAll{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Run = %v; want an error saying %q", err, c.want)
			}
			if len(ss.pids) > 0 {
				t.Errorf("%d processes started before the schedule was refused", len(ss.pids))
			}
		})
	}
}

// checkEvents holds the events' details against want, keyed by
// "<kind> <point> <target>": each key must be there, and its first event
// match.
func checkEvents(t *testing.T, events []evidence.Event, want map[string]*regexp.Regexp) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range events {
		if e.Actor != evidence.ActorNemesis {
			t.Errorf("event of actor %q; want %q", e.Actor, evidence.ActorNemesis)
		}
		key := string(e.Kind) + " " + e.Point + " " + e.Target
		re, ok := want[key]
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		if !re.MatchString(e.Detail) {
			t.Errorf("%s: %q does not match %s", key, e.Detail, re)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no event %s", key)
		}
	}
}

// nothingRuns fails when a process the engine started still runs.
func nothingRuns(t *testing.T, ss *sleepers) {
	t.Helper()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.pids) < 4 {
		t.Errorf("%d processes started; want one per slot at least", len(ss.pids))
	}
	for _, pid := range ss.pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still runs after Run returned", pid)
		}
	}
}
