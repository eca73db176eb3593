package fault

import (
	"errors"
	"testing"
)

// TestCall: an unarmed call runs and names its site; an armed one fails
// once in its mode; after a call that fails by itself, the site stays
// armed.
func TestCall(t *testing.T) {
	var in Injector
	errInjected, errOwn := errors.New("injected"), errors.New("own")
	var failed []CallMode
	fail := func(_ CallSite, m CallMode) error {
		failed = append(failed, m)
		if m == CallKill {
			return nil
		}
		return errInjected
	}
	ran := 0
	do := func() error { ran++; return nil }
	if err := in.Call(DB, "a", do); err != nil || ran != 1 {
		t.Fatalf("unarmed: %v, ran %d", err, ran)
	}
	in.ArmCall("a", CallBefore, fail)
	if err := in.Call(DB, "a", do); !errors.Is(err, errInjected) || ran != 1 {
		t.Fatalf("before: %v, ran %d; want the injected error and the call not run", err, ran)
	}
	if err := in.Call(DB, "a", do); err != nil || ran != 2 || !in.DisarmCall() {
		t.Fatalf("before fails once: %v, ran %d", err, ran)
	}
	in.ArmCall("b", CallAfter, fail)
	if err := in.Call(Broker, "b", func() error { ran++; return errOwn }); !errors.Is(err, errOwn) || ran != 3 {
		t.Fatalf("after, the call failing by itself: %v; want its own error", err)
	}
	if err := in.Call(Broker, "b", do); !errors.Is(err, errInjected) || ran != 4 || !in.DisarmCall() {
		t.Fatalf("after: %v, ran %d; want the call run and the injected error", err, ran)
	}
	in.ArmCall("a", CallKill, fail)
	if err := in.Call(DB, "a", do); err != nil || ran != 5 {
		t.Fatalf("kill: %v, ran %d; want the call run after the kill", err, ran)
	}
	if in.DisarmCall() != true || in.DisarmCall() != false {
		t.Fatal("DisarmCall: want fired once, then nothing armed")
	}
	if want := []CallMode{CallBefore, CallAfter, CallKill}; len(failed) != 3 || failed[0] != want[0] || failed[1] != want[1] || failed[2] != want[2] {
		t.Fatalf("failer called with %v; want %v", failed, want)
	}
	sites := in.CallSites()
	if len(sites) != 2 || sites[0] != (CallSite{"a", DB}) || sites[1] != (CallSite{"b", Broker}) {
		t.Fatalf("sites %v", sites)
	}
	var nilIn *Injector
	if err := nilIn.Call(DB, "a", do); err != nil || ran != 6 || nilIn.CallSites() != nil {
		t.Fatal("a nil injector runs the call")
	}
	if _, err := ParseCallMode("sideways"); err == nil {
		t.Fatal("ParseCallMode took an unknown mode")
	}
}
