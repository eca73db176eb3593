// Command bbwrap wraps one scenario of a reference bundle into the bundle
// of a black-box audit (checks/bbverify/bbtest): its witnesses and
// profiles/reference.yaml (or -profile), with the claims the verifier
// recomputes, so that `orderflow-audit verify` and `report` can be tried
// on a black-box bundle from a real run before the audit command exists.
//
//	go run ./scripts/bbwrap -scenario normalChain -o /tmp/bb/audit.json evidence/example/u80.json
//	orderflow-audit verify /tmp/bb/audit.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify/bbtest"
)

func main() {
	scenario := flag.String("scenario", "", "the scenario to audit (default: the first with a topic)")
	out := flag.String("o", "", "the black-box evidence file to write (its files go beneath the directory of its base name)")
	prof := flag.String("profile", "", "the profile to audit under (default: profiles/reference.yaml, embedded)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: bbwrap [-scenario ID] [-profile P] -o DIR/audit.json REFERENCE.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	w := bbtest.Wrap{Reference: flag.Arg(0), Scenario: *scenario, Out: *out}
	if *prof != "" {
		data, err := os.ReadFile(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bbwrap:", err)
			os.Exit(2)
		}
		w.Profile = data
	}
	v, err := w.Write(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bbwrap:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %s, verifies %s\n", *out, v.Title(), v.Status)
}
