package fault_test

import (
	"errors"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestInjector(t *testing.T) {
	var nilInj *fault.Injector
	if err := nilInj.Hit(spec.AfterPublishBeforeMark); err != nil {
		t.Fatalf("nil injector Hit = %v", err)
	}
	in := &fault.Injector{}
	if err := in.Hit(spec.AfterPublishBeforeMark); err != nil {
		t.Fatalf("unarmed Hit = %v", err)
	}
	in.Arm(spec.AfterPublishBeforeMark, fault.Crash, 1)
	if err := in.Hit(spec.AfterEffectBeforeOffsetCommit); err != nil {
		t.Fatalf("another point fired: %v", err)
	}
	err := in.Hit(spec.AfterPublishBeforeMark)
	if !errors.Is(err, fault.ErrCrash) {
		t.Fatalf("armed Hit = %v; want ErrCrash", err)
	}
	if err := in.Hit(spec.AfterPublishBeforeMark); err != nil {
		t.Fatalf("armed once, fired twice: %v", err)
	}
	if n := in.Hits(spec.AfterPublishBeforeMark); n != 1 {
		t.Fatalf("Hits = %d; want 1", n)
	}
	in.Arm(spec.AfterClaimBeforePublish, fault.Crash, -1)
	for i := range 3 {
		if err := in.Hit(spec.AfterClaimBeforePublish); !errors.Is(err, fault.ErrCrash) {
			t.Fatalf("hit %d of an always-armed point = %v", i, err)
		}
	}
	in.Disarm(spec.AfterClaimBeforePublish)
	if err := in.Hit(spec.AfterClaimBeforePublish); err != nil {
		t.Fatalf("disarmed Hit = %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, p := range fault.Points() {
		got, err := fault.Parse(string(p))
		if err != nil || got != p {
			t.Errorf("Parse(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := fault.Parse("nowhere"); err == nil {
		t.Error("Parse(nowhere) succeeded")
	}
}
