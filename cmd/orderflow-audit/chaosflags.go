package main

import (
	"slices"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// chaosFlags are the flags of the chaos scenario, shared by run and
// explore.
type chaosFlags struct {
	duration                  time.Duration
	orders, relays, consumers int
	inboxes, genRounds        int
	faults, only              string
}

func (cf *chaosFlags) register(fs *flagSet) {
	d := nemesis.Config{}
	d.SetDefaults()
	fs.DurationVar(&cf.duration, "duration", d.Duration, "chaos: how long the nemesis injects faults under load")
	fs.IntVar(&cf.orders, "orders", d.Orders, "chaos: orders placed concurrently")
	fs.IntVar(&cf.relays, "relays", d.Relays, "chaos: relay processes")
	fs.IntVar(&cf.consumers, "consumers", d.Consumers, "chaos: consumer processes of each group")
	fs.IntVar(&cf.inboxes, "inboxes", d.Inboxes, "chaos: consumer groups, each with an inbox name of its own")
	fs.IntVar(&cf.genRounds, "gen-rounds", d.GenRounds, "chaos: rounds of the generated load (6 requests each)")
	fs.StringVar(&cf.faults, "faults", "all", "chaos: fault `kinds` the nemesis draws from, comma-separated:\n"+nemesis.KindList())
	fs.StringVar(&cf.only, "only-faults", "", "chaos: keep only these `numbers` of the seed's schedule (comma-separated, or none;\nwhat explore's shrinking prints)")
}

// config checks the flags and returns the configuration (seed left out:
// the run's).
func (cf *chaosFlags) config() (nemesis.Config, error) {
	kinds, err := nemesis.ParseKinds(cf.faults)
	if err != nil {
		return nemesis.Config{}, usageErrorf("--faults: %v", err)
	}
	c := nemesis.Config{Duration: cf.duration, Orders: cf.orders, Relays: cf.relays, Consumers: cf.consumers,
		Inboxes: cf.inboxes, GenRounds: cf.genRounds, Kinds: kinds}
	if cf.orders < 1 || cf.relays < 1 || cf.consumers < 1 || cf.inboxes < 1 || cf.genRounds < 1 {
		return c, usageErrorf("--orders, --relays, --consumers, --inboxes and --gen-rounds must be at least 1")
	}
	if c.Only, err = nemesis.ParseOnly(cf.only); err != nil {
		return c, usageErrorf("%v", err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return c, usageErrorf("%v", err)
	}
	return c, nil
}

// chaosFlagNames are the flags register defines.
var chaosFlagNames = []string{"duration", "orders", "relays", "consumers", "inboxes", "gen-rounds", "faults", "only-faults"}

// setWithout returns a chaos flag that was set although ids do not select
// the chaos scenario ("" when none was).
func (cf *chaosFlags) setWithout(set map[string]bool, ids []string) string {
	if slices.Contains(ids, "chaos") || slices.Contains(ids, spec.BatchID("chaos")) {
		return ""
	}
	for _, n := range chaosFlagNames {
		if set[n] {
			return n
		}
	}
	return ""
}
