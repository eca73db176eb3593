package runner_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/plant"
	"github.com/orderflow-audit/orderflow-audit/runner/sut"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// double is a system under test behind the seam that is not the reference:
// it wraps the reference actors, counts what the scenarios asked of them,
// and may break its consumer's dedupe as a third party's consumer might.
type double struct {
	relayCalls, consumerCalls atomic.Int64
	noDedupe                  bool
}

func (d *double) implementation(name string, fs spec.Features) *sut.Implementation {
	ref := sut.Reference()
	return &sut.Implementation{
		Name: name, Features: fs, NewOrders: ref.NewOrders,
		NewRelay: func(c sut.RelayConfig) (sut.Relay, error) {
			r, err := ref.NewRelay(c)
			return countingRelay{r, &d.relayCalls}, err
		},
		NewConsumer: func(ctx context.Context, c sut.ConsumerConfig) (sut.Consumer, error) {
			if d.noDedupe {
				c.Plant = plant.NoInboxDedupe // its own bug, not a planted negative control
			}
			cons, err := ref.NewConsumer(ctx, c)
			return countingConsumer{cons, &d.consumerCalls}, err
		},
	}
}

type countingRelay struct {
	sut.Relay
	n *atomic.Int64
}

func (r countingRelay) Claim(ctx context.Context, max int) ([]sut.Claimed, error) {
	r.n.Add(1)
	return r.Relay.Claim(ctx, max)
}

func (r countingRelay) RunOnce(ctx context.Context) (sut.RelayResult, error) {
	r.n.Add(1)
	return r.Relay.RunOnce(ctx)
}

type countingConsumer struct {
	sut.Consumer
	n *atomic.Int64
}

func (c countingConsumer) PollUntil(ctx context.Context, done func(sut.ConsumerStats) bool) (sut.ConsumerStats, error) {
	c.n.Add(1)
	return c.Consumer.PollUntil(ctx, done)
}

// TestSeamDrivesAnotherImplementation: the scenarios reach the system under
// test only through the seam, and the evidence names it and its layers.
func TestSeamDrivesAnotherImplementation(t *testing.T) {
	d := &double{}
	opts := runOpts(t, "normalChain", "offsetReplay", "businessInvariants")
	opts.SUT = d.implementation("test double", spec.AllFeatures)
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ev.Scenarios {
		if s.Status != evidence.StatusPass {
			t.Errorf("%s: %s", s.Line, s.Reason)
		}
	}
	if d.relayCalls.Load() == 0 || d.consumerCalls.Load() == 0 {
		t.Errorf("the double was not driven: %d relay calls, %d consumer calls", d.relayCalls.Load(), d.consumerCalls.Load())
	}
	got := ev.Environment.SUT
	if got == nil || got.Name != "test double" || !slices.Equal(got.Layers, []string{"delivery", "claim-token", "business"}) {
		t.Fatalf("evidence system_under_test = %+v", got)
	}
}

// TestSeamLayersFollowFeatures: an implementation without claim tokens, a
// stepwise relay or fault hooks runs only the scenarios it can, the
// verifier checks only the delivery and business layers, and the proof
// matrix says what that leaves unchecked.
func TestSeamLayersFollowFeatures(t *testing.T) {
	d := &double{}
	opts := runOpts(t, "normalChain", "offsetReplay", "businessInvariants")
	opts.SUT = d.implementation("third party", spec.Features{spec.FeatureOrderService})
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, s := range ev.Scenarios {
		status[s.ID] = s.Status + " " + s.Reason
	}
	if !strings.HasPrefix(status["normalChain"], "NOT_RUN") || !strings.Contains(status["normalChain"], "claim-tokens") ||
		!strings.HasPrefix(status["offsetReplay"], "NOT_RUN") || !strings.HasPrefix(status["businessInvariants"], "PASS") {
		t.Fatalf("statuses %v; want normalChain and offsetReplay not run for lack of features, businessInvariants PASS", status)
	}
	if got := ev.Environment.SUT.Layers; !slices.Equal(got, []string{"delivery", "business"}) {
		t.Fatalf("layers %v; want delivery, business", got)
	}
	var cannot string
	for _, r := range ev.ProofBoundary {
		cannot += strings.Join(r.CannotInfer, "\n")
	}
	if !strings.Contains(cannot, "claim-token rules") {
		t.Errorf("the proof matrix does not say the claim-token rules were not checked:\n%s", cannot)
	}
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != checks.Inconclusive || slices.ContainsFunc(v.Reasons, func(r checks.Reason) bool { return r.Status == checks.Fail }) {
		t.Fatalf("verify %s %+v; want INCONCLUSIVE (scenarios not run), no failure", v.Status, v.Reasons)
	}
}

// TestSeamCatchesAThirdPartyBug: a consumer behind the seam whose dedupe is
// broken fails the audit, in its scenario and in the verifier.
func TestSeamCatchesAThirdPartyBug(t *testing.T) {
	d := &double{noDedupe: true}
	opts := runOpts(t, "normalChain")
	opts.SUT = d.implementation("third party without dedupe", spec.AllFeatures)
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := ev.Scenarios[0]; s.Status != evidence.StatusFail {
		t.Fatalf("%s; want FAIL", s.Line)
	}
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != checks.Fail || !slices.ContainsFunc(v.Reasons, func(r checks.Reason) bool { return r.Rule == "duplicate-effect" }) {
		t.Fatalf("verify %s %+v; want FAIL naming duplicate-effect", v.Status, v.Reasons)
	}
}
