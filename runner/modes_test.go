package runner_test

import (
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// TestConsumerModeBoth: --consumer-mode both runs each consumer scenario
// per record and then as its batch variant, each says its mode, the
// selection records it, and the verifier passes what it selected.
func TestConsumerModeBoth(t *testing.T) {
	opts := runOpts(t, "offsetReplay", "consumerRestart", "placement")
	opts.ConsumerMode = spec.SelectBoth
	ev, err := runner.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var ids, modes []string
	for _, s := range ev.Scenarios {
		ids = append(ids, s.ID)
		modes = append(modes, s.ConsumerMode)
		if s.Status != evidence.StatusPass {
			t.Errorf("%s: %s (%s)", s.ID, s.Line, s.Reason)
		}
	}
	wantIDs := []string{"placement", "offsetReplay", "offsetReplay-batch", "consumerRestart", "consumerRestart-batch"}
	wantModes := []string{"", "record", "batch", "record", "batch"}
	if !slices.Equal(ids, wantIDs) || !slices.Equal(modes, wantModes) {
		t.Fatalf("scenarios %v in modes %q, want %v in %q", ids, modes, wantIDs, wantModes)
	}
	if got := ev.Run.Selection.ConsumerMode; got != spec.SelectBoth {
		t.Errorf("run.selection.consumer_mode = %q, want both", got)
	}
	v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status == checks.Fail {
		t.Fatalf("verify FAIL: %+v", v.Reasons)
	}
}

// TestBatchPlantOnlyInBatch: a bug planted in the batched path alone
// leaves the per-record run of its exposing scenario passing, for the
// runner and the verifier; TestPlantedBugMakesScenarioFail holds its
// batch variant failing.
func TestBatchPlantOnlyInBatch(t *testing.T) {
	p, ok := spec.LookupPlant("batch-offset-before-effect")
	if !ok {
		t.Fatal("no plant batch-offset-before-effect")
	}
	for _, id := range p.Scenarios() {
		base, mode := spec.BaseID(id)
		if mode != spec.ModeBatch {
			t.Fatalf("exposure %s is not a batch variant", id)
		}
		opts := runOpts(t, base)
		opts.Plant, _ = runner.ParsePlant(p.Bug)
		ev, err := runner.Run(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if s := ev.Scenarios[0]; s.Status != evidence.StatusPass || s.ConsumerMode != string(spec.ModeRecord) {
			t.Fatalf("%s per record with %s: %s (%s), mode %q; want PASS in record", base, p.Bug, s.Line, s.Reason, s.ConsumerMode)
		}
		v, err := checks.Verify(t.Context(), opts.Out, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range v.Reasons {
			if slices.Contains(p.Rules(), r.Rule) || r.Status == checks.Fail {
				t.Errorf("verify of the per-record run: %s %s: %s", r.Status, r.Rule, r.Message)
			}
		}
	}
}
