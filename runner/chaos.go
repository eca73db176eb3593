package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	chaoseng "github.com/orderflow-audit/orderflow-audit/runner/chaos"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// The chaos scenario (spec/chaos.go): concurrent load through the order
// service, R relays and C consumers, each its own OS process, under the
// chaos engine (runner/chaos), which applies a seeded schedule of faults,
// heals, and waits for the chain to settle; then measure
// (chaosmeasure.go). The reference actors are the engine's targets
// (chaosactors.go). Its entry in the runs table is in scenario.go; its
// timeout depends on --duration (checkChaos).

const (
	// chaosPartitions is the topic's partition count.
	chaosPartitions = 3
	// chaosPublishTimeout bounds one publish of a relay.
	chaosPublishTimeout = 500 * time.Millisecond
	// chaosBatch is how many intents a relay claims per round.
	chaosBatch = 4
)

// chaosNeeds is the shortest --timeout the chaos scenario needs: the
// load and its faults, the settling bound, and the starts and stops of its
// processes.
func chaosNeeds(c nemesis.Config) time.Duration { return chaoseng.Needs(c) }

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
	if !slices.ContainsFunc(selected, func(s Scenario) bool { return s.Base() == "chaos" }) {
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
	num("inboxes", c.Inboxes, d.Inboxes)
	num("gen-rounds", c.GenRounds, d.GenRounds)
	if len(c.Kinds) > 0 && !slices.Equal(c.Kinds, nemesis.Kinds) {
		kinds := make([]string, len(c.Kinds))
		for i, k := range c.Kinds {
			kinds[i] = string(k)
		}
		args = append(args, "--faults", strings.Join(kinds, ","))
	}
	if only := nemesis.FormatOnly(c.Only); only != "" {
		args = append(args, "--only-faults", only)
	}
	return args
}

// chaosRun is one run of the chaos scenario: the reference pipeline as
// the engine's targets and workload.
type chaosRun struct {
	e     *Env
	cfg   nemesis.Config
	topic string
	// groups are the consumer groups, one per inbox consumer name of
	// inboxes (--inboxes; the first is the only one by default).
	groups  []string
	inboxes []string
	nemesis *evidence.Log
	proxies *chaoseng.Proxies
	slots   []chaoseng.Slot
	// stopAt are the points each slot's processes stop at when aimed
	// (actor --stop-at), in the order of actor.StopSignals.
	stopAt map[string][]fault.Point
	// http is the load's client of the order service.
	http *http.Client

	// gen runs the generated load once (chaosgen.go); genDone is closed
	// when it has ended.
	gen     sync.Once
	genDone chan struct{}
	// genRound is the round being sent.
	genRound atomic.Int64

	mu     sync.Mutex
	url    string // the order service's URL, from its first start
	listen string // the order service's address, kept across restarts
}

// chaos runs the chaos engine over the reference pipeline, then measures.
func chaos(ctx context.Context, e *Env) error {
	if e.exe == "" {
		return errors.New("no executable to start the actor processes from")
	}
	cr, err := newChaosRun(ctx, e)
	if err != nil {
		return err
	}
	targets, err := cr.targets()
	if err != nil {
		return err
	}
	res, err := chaoseng.Run(ctx, chaoseng.Options{Config: cr.cfg, Log: cr.nemesis, Failf: e.Result.Failf}, targets, cr)
	if err != nil {
		return err
	}
	return cr.measure(ctx, res)
}

// newChaosRun creates the topic, seeds the stock, opens the nemesis's
// log and the proxies.
func newChaosRun(ctx context.Context, e *Env) (*chaosRun, error) {
	cr := &chaosRun{e: e, cfg: e.Chaos, inboxes: spec.ChaosInboxes(e.Chaos.Inboxes), proxies: chaoseng.NewProxies(),
		stopAt: map[string][]fault.Point{}, http: &http.Client{Timeout: 3 * time.Second}, genDone: make(chan struct{})}
	for i := range cr.inboxes {
		g := "chaos-" + e.RunID
		if i > 0 {
			g += "-" + strconv.Itoa(i+1)
		}
		cr.groups = append(cr.groups, g)
	}
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
	if err := e.seedGenerated(ctx); err != nil {
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
