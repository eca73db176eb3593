package nemesis_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func cfg(seed int64) nemesis.Config {
	c := nemesis.Config{Seed: seed, Duration: 10 * time.Second}
	c.SetDefaults()
	return c
}

func TestSameSeedSameSchedule(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		a, b := nemesis.Schedule(cfg(seed)), nemesis.Schedule(cfg(seed))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two schedules differ:\n%v\n%v", seed, a, b)
		}
		if la, lb := nemesis.Load(cfg(seed)), nemesis.Load(cfg(seed)); !reflect.DeepEqual(la, lb) {
			t.Fatalf("seed %d: two loads differ", seed)
		}
	}
}

func TestSeedsDiffer(t *testing.T) {
	seen := map[string]int64{}
	for seed := int64(1); seed <= 50; seed++ {
		var b strings.Builder
		for _, f := range nemesis.Schedule(cfg(seed)) {
			b.WriteString(f.String() + ";")
		}
		if prev, dup := seen[b.String()]; dup {
			t.Fatalf("seeds %d and %d have the same schedule %s", prev, seed, b.String())
		}
		seen[b.String()] = seed
	}
	if reflect.DeepEqual(nemesis.Load(cfg(1)), nemesis.Load(cfg(2))) {
		t.Fatal("seeds 1 and 2 have the same load")
	}
}

func TestScheduleBounds(t *testing.T) {
	kindsSeen := map[nemesis.Kind]bool{}
	for seed := int64(1); seed <= 200; seed++ {
		c := cfg(seed)
		fs := nemesis.Schedule(c)
		if len(fs) == 0 {
			t.Fatalf("seed %d: no fault in %v", seed, c.Duration)
		}
		for i, f := range fs {
			if f.At <= 0 || f.At >= c.Duration {
				t.Errorf("seed %d: %v outside (0, %v)", seed, f, c.Duration)
			}
			if i > 0 && f.At <= fs[i-1].At {
				t.Errorf("seed %d: %v not after %v", seed, f, fs[i-1])
			}
			if f.N != i+1 {
				t.Errorf("seed %d: fault %d numbered %d", seed, i+1, f.N)
			}
			if f.Target == "" {
				t.Errorf("seed %d: %v has no target", seed, f)
			}
			if f.Kind == nemesis.Pause && f.For <= nemesis.PauseLease {
				t.Errorf("seed %d: %v does not outlast the lease %v", seed, f, nemesis.PauseLease)
			}
			kindsSeen[f.Kind] = true
		}
	}
	for _, k := range nemesis.Kinds {
		if !kindsSeen[k] {
			t.Errorf("200 seeds never drew %s", k)
		}
	}
}

// A shorter duration keeps a prefix of the schedule: shrinking drops the
// last faults and moves none.
func TestShorterDurationIsPrefix(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		long := nemesis.Schedule(cfg(seed))
		c := cfg(seed)
		c.Duration = 3 * time.Second
		short := nemesis.Schedule(c)
		if len(short) == 0 || len(short) > len(long) || !reflect.DeepEqual(short, long[:len(short)]) {
			t.Fatalf("seed %d: %v is not a prefix of %v", seed, short, long)
		}
	}
}

func TestOnlyKeepsNumberedFaults(t *testing.T) {
	c := cfg(7)
	all := nemesis.Schedule(c)
	if len(all) < 3 {
		t.Fatalf("seed 7 has %d faults", len(all))
	}
	c.Only = []int{1, 3}
	got := nemesis.Schedule(c)
	if want := []nemesis.Fault{all[0], all[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Only 1,3 = %v; want %v", got, want)
	}
}

func TestKindsFilter(t *testing.T) {
	c := cfg(3)
	c.Kinds = []nemesis.Kind{nemesis.Kill, nemesis.Pause}
	for _, f := range nemesis.Schedule(c) {
		if !slices.Contains(c.Kinds, f.Kind) {
			t.Fatalf("%v drawn with --faults kill,pause", f)
		}
	}
}

func TestParseKinds(t *testing.T) {
	all, err := nemesis.ParseKinds("")
	if err != nil || !reflect.DeepEqual(all, nemesis.Kinds) {
		t.Fatalf(`ParseKinds("") = %v, %v`, all, err)
	}
	got, err := nemesis.ParseKinds("kill, pause")
	if err != nil || !reflect.DeepEqual(got, []nemesis.Kind{nemesis.Kill, nemesis.Pause}) {
		t.Fatalf(`ParseKinds("kill, pause") = %v, %v`, got, err)
	}
	for _, bad := range []string{"kill,,pause", "nope", "kill,kill"} {
		if _, err := nemesis.ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
}

func TestLoad(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		testLoad(t, cfg(seed))
	}
}

func testLoad(t *testing.T, c nemesis.Config) {
	t.Helper()
	reqs := nemesis.Load(c)
	if len(reqs) != c.Orders {
		t.Fatalf("%d requests; want %d", len(reqs), c.Orders)
	}
	users, keys := map[string]bool{}, map[string]string{}
	var bad []string
	reused := 0
	for _, r := range reqs {
		users[r.User] = true
		if u, ok := keys[r.Key]; ok {
			if u == r.User {
				t.Fatalf("key %s twice by %s", r.Key, u)
			}
			reused++
		}
		keys[r.Key] = r.User
		if r.Quantity < 1 || r.Quantity > 2 {
			t.Fatalf("quantity %d", r.Quantity)
		}
		if r.Token != "" {
			bad = append(bad, r.Token)
		}
	}
	if len(users) < 2 {
		t.Fatalf("%d users place the orders; want several", len(users))
	}
	// A load of MixFrom requests or more sends each bad token once and
	// reuses two keys under another user; a smaller one neither.
	wantBad, wantReused := 0, 0
	if c.Orders >= nemesis.MixFrom {
		wantBad, wantReused = len(nemesis.BadTokens), 2
	}
	slices.Sort(bad)
	if want := slices.Sorted(slices.Values(nemesis.BadTokens)); len(bad) != wantBad || (wantBad > 0 && !slices.Equal(bad, want)) {
		t.Errorf("bad tokens %v; want each of %v once (load of %d)", bad, nemesis.BadTokens, c.Orders)
	}
	if reused != wantReused {
		t.Errorf("%d keys reused by another user; want %d", reused, wantReused)
	}
	small := c
	small.Orders = nemesis.MixFrom - 1
	for _, r := range nemesis.Load(small) {
		if r.Token != "" {
			t.Fatalf("a load of %d sends a bad token", small.Orders)
		}
	}
}

// The kinds are the spec's nemesis points, in the same order (the faults
// metric lists them so).
func TestKindsAreSpecPoints(t *testing.T) {
	var got []string
	for _, k := range nemesis.Kinds {
		got = append(got, string(k))
	}
	if want := spec.NemesisKinds(); !slices.Equal(got, want) {
		t.Fatalf("nemesis.Kinds = %v; spec.NemesisKinds() = %v", got, want)
	}
}

func TestFormatCounts(t *testing.T) {
	got := spec.FormatFaultCounts(nemesis.Counts([]nemesis.Fault{{Kind: nemesis.Pause}, {Kind: nemesis.Kill}, {Kind: nemesis.Pause}}))
	if got != "kill:1+pause:2" {
		t.Fatalf("FormatFaultCounts = %q", got)
	}
	if got := spec.FormatFaultCounts(nil); got != "none" {
		t.Fatalf("FormatFaultCounts(nil) = %q", got)
	}
	// The audit's own kinds come after the chaos kinds, by name, and are
	// never dropped.
	got = spec.FormatFaultCounts(map[string]int{"net-cut": 1, string(nemesis.CommitLost): 2, "zz-other": 1, "kill": 3, "pause": 0})
	if got != "kill:3+net-cut:1+commit-lost:2+zz-other:1" {
		t.Fatalf("FormatFaultCounts with the audit's kinds = %q", got)
	}
}

// TestInboxesTargets: with --inboxes 1 a seed's schedule is the one it
// was (Inboxes 0 and 1 alike); with more, the consumer targets range over
// every group's slots, consumer-1 .. consumer-C×N, and no further.
func TestInboxesTargets(t *testing.T) {
	names := func(c nemesis.Config) map[string]bool {
		out := map[string]bool{}
		for _, f := range nemesis.Schedule(c) {
			if slot, _, _ := strings.Cut(f.Target, ">"); strings.HasPrefix(slot, "consumer-") {
				out[slot] = true // a slot, or one of its links
			}
		}
		return out
	}
	one, two := map[string]bool{}, map[string]bool{}
	for seed := int64(1); seed <= 200; seed++ {
		c := cfg(seed)
		c1 := c
		c1.Inboxes = 1
		if !reflect.DeepEqual(nemesis.Schedule(c), nemesis.Schedule(c1)) || c.Inboxes != 1 {
			t.Fatalf("seed %d: --inboxes 1 changes the schedule (default Inboxes %d)", seed, c.Inboxes)
		}
		for n := range names(c) {
			one[n] = true
		}
		c.Inboxes = 2
		for n := range names(c) {
			two[n] = true
		}
	}
	want := func(n int) map[string]bool {
		out := map[string]bool{}
		for i := 1; i <= n; i++ {
			out[nemesis.ConsumerName(i)] = true
		}
		return out
	}
	if d := nemesis.DefaultConsumers; !reflect.DeepEqual(one, want(d)) || !reflect.DeepEqual(two, want(2*d)) {
		t.Errorf("consumer targets: one inbox %v, two %v; want consumer-1..%d and consumer-1..%d", one, two, d, 2*d)
	}
	c := cfg(1)
	c.Inboxes = nemesis.MaxInboxes + 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--inboxes") {
		t.Errorf("Validate with %d inboxes: %v; want an error naming --inboxes", c.Inboxes, err)
	}
	c.Inboxes = nemesis.MaxInboxes
	if err := c.Validate(); err != nil {
		t.Errorf("Validate with %d inboxes: %v", c.Inboxes, err)
	}
}
