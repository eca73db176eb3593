package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/actor"
	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The chaos scenario (spec/chaos.go): concurrent load through the order
// service, R relays and C consumers, each its own OS process, a nemesis
// applying a seeded schedule of faults (chaosfaults.go), heal, settle,
// measure (chaosmeasure.go).
func init() {
	bind("chaos", chaos) // its timeout depends on --duration: checkChaos
}

const (
	// chaosSettle bounds how long the chain may take, once every fault is
	// healed, to deliver and apply everything (the liveness bound): a
	// committed event without an effect by then is missing.
	chaosSettle = 30 * time.Second
	// chaosPartitions is the topic's partition count.
	chaosPartitions = 3
	// chaosPublishTimeout bounds one publish of a relay.
	chaosPublishTimeout = 500 * time.Millisecond
	// chaosBatch is how many intents a relay claims per round.
	chaosBatch = 4
	// chaosWorkers place the orders concurrently.
	chaosWorkers = 4
	// chaosStopGrace is how long an actor gets to stop cleanly at the end.
	chaosStopGrace = 5 * time.Second
)

// chaosNeeds is the shortest --timeout the chaos scenario needs: the
// load and its faults, the settling bound, and the starts and stops of its
// processes.
func chaosNeeds(c nemesis.Config) time.Duration {
	c.SetDefaults()
	return c.Duration + chaosSettle + 20*time.Second
}

// ChaosTimeout is the per-scenario timeout the chaos scenario needs with
// c: what `run` takes when --timeout is not given.
func ChaosTimeout(c nemesis.Config) time.Duration { return chaosNeeds(c) }

// chaosConfig is the chaos scenario's configuration: the options', with
// the run's seed and the defaults.
func (o *Options) chaosConfig() nemesis.Config {
	c := o.Chaos
	c.Seed = o.Seed
	c.SetDefaults()
	return c
}

// checkChaos validates the chaos options and, when chaos is selected, the
// timeout against what it needs.
func checkChaos(opts *Options, selected []Scenario) error {
	c := opts.chaosConfig()
	if err := c.Validate(); err != nil {
		return err
	}
	if !slices.ContainsFunc(selected, func(s Scenario) bool { return s.ID == "chaos" }) {
		return nil
	}
	if need := chaosNeeds(c); opts.Timeout < need {
		return fmt.Errorf("--timeout %v is below what chaos needs with --duration %v: at least %v", opts.Timeout, c.Duration, need)
	}
	return nil
}

// ChaosArgs are the command-line flags equivalent to c (defaults left
// out), as recorded in run.args and printed in a replay command.
func ChaosArgs(c nemesis.Config) []string {
	d := nemesis.Config{}
	d.SetDefaults()
	var args []string
	if c.Duration != 0 && c.Duration != d.Duration {
		args = append(args, "--duration", c.Duration.String())
	}
	num := func(name string, v, def int) {
		if v != 0 && v != def {
			args = append(args, "--"+name, strconv.Itoa(v))
		}
	}
	num("orders", c.Orders, d.Orders)
	num("relays", c.Relays, d.Relays)
	num("consumers", c.Consumers, d.Consumers)
	if len(c.Kinds) > 0 && !slices.Equal(c.Kinds, nemesis.Kinds) {
		kinds := make([]string, len(c.Kinds))
		for i, k := range c.Kinds {
			kinds[i] = string(k)
		}
		args = append(args, "--faults", strings.Join(kinds, ","))
	}
	if slices.Equal(c.Only, nemesis.NoFaults) {
		args = append(args, "--only-faults", "none")
	} else if len(c.Only) > 0 {
		only := make([]string, len(c.Only))
		for i, n := range c.Only {
			only[i] = strconv.Itoa(n)
		}
		args = append(args, "--only-faults", strings.Join(only, ","))
	}
	return args
}

// chaosRun is one run of the chaos scenario.
type chaosRun struct {
	e        *Env
	cfg      nemesis.Config
	schedule []nemesis.Fault
	topic    string
	group    string
	nemesis  *evidence.Log
	proxies  *chaoseng.Proxies
	slots    []*slot
	orders   *slot

	mu       sync.Mutex
	noteErr  error
	injected map[string]int // faults injected, by kind
	exits    map[string]int // how processes ended: "SIGKILL", "exit 0", ...
	// held are the processes a lasting fault keeps stopped, by pid: no
	// other fault may stop or wake them meanwhile.
	held map[int]bool
}

func chaos(ctx context.Context, e *Env) error {
	if e.exe == "" {
		return errors.New("no executable to start the actor processes from")
	}
	cr, err := newChaosRun(ctx, e)
	if err != nil {
		return err
	}
	defer cr.close()
	if err := cr.startActors(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loaded := cr.startLoad(loadCtx, t0, t0.Add(cr.cfg.Duration+chaosSettle))
	if err := cr.runNemesis(ctx, t0); err != nil {
		return err
	}
	healed := time.Now()
	ls, settled := cr.settle(ctx, loaded, healed)
	stopLoad()
	cr.stopActors()
	if err := cr.noted(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return cr.measure(ctx, ls, settled)
}

// newChaosRun creates the topic, seeds the stock, opens the nemesis's
// log and the proxies.
func newChaosRun(ctx context.Context, e *Env) (*chaosRun, error) {
	cr := &chaosRun{e: e, cfg: e.Chaos, schedule: nemesis.Schedule(e.Chaos), group: "chaos-" + e.RunID,
		injected: map[string]int{}, exits: map[string]int{}, held: map[int]bool{}, proxies: chaoseng.NewProxies()}
	e.Defer(cr.proxies.Close)
	var err error
	if cr.nemesis, err = e.ActorLog(evidence.ActorNemesis); err != nil {
		return nil, err
	}
	if cr.topic, err = e.topicWith(ctx, "", chaosPartitions); err != nil {
		return nil, err
	}
	stock := int64(0)
	for _, r := range nemesis.Load(cr.cfg) {
		stock += int64(r.Quantity)
	}
	if err := e.SeedStock(ctx, defaultSKU, stock); err != nil {
		return nil, err
	}
	return cr, nil
}

// topicWith is Topic with a partition count.
func (e *Env) topicWith(ctx context.Context, suffix string, partitions int32) (string, error) {
	name := "ofa." + e.RunID + "." + e.Scenario.ID
	if suffix != "" {
		name += "." + suffix
	}
	if err := e.Kafka.CreateTopic(ctx, name, partitions); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.topics = append(e.topics, name)
	e.mu.Unlock()
	return name, nil
}

// note writes a nemesis event; the first error is kept for noted.
func (cr *chaosRun) note(ev evidence.Event) {
	ev.Actor = evidence.ActorNemesis
	if err := cr.nemesis.Emit(ev); err != nil {
		cr.mu.Lock()
		if cr.noteErr == nil {
			cr.noteErr = err
		}
		cr.mu.Unlock()
	}
}

func (cr *chaosRun) noted() error {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.noteErr
}

func (cr *chaosRun) countExit(exit actor.Exit) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.exits[exit.String()]++
}

// close stops what is still running (after an error).
func (cr *chaosRun) close() {
	cr.stopActors()
}
