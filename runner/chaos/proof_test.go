package chaos_test

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

var proofSeeds = flag.Int("proof-seeds", 20, "how many chaos seeds TestChaosProofBoundaryFromWhatRan runs")

// classOf is the fault class a nemesis kind covers in the not-run row.
var classOf = map[string]string{
	"broker-restart": "NOT RUN: broker restart",
	"db-crash":       "NOT RUN: database crash",
	"net-cut":        "NOT RUN: network partition",
	"ack-lost":       "NOT RUN: producer unknown outcome",
	"kill":           "NOT RUN: kill -9 of an actor",
}

// TestChaosProofBoundaryFromWhatRan runs the chaos scenario for seeds 1 to
// 20 (-proof-seeds), as `run --scenarios chaos --seed N --duration 3s`
// does, and holds each bundle's proof boundary against its observation
// line: every fault kind with a non-zero count in faults= is under "this
// run had" and under no "not run" entry (nor is the class it covers);
// every kind with a zero count is not under "this run had". The verifier,
// deriving the claims itself, must agree with the runner's.
func TestChaosProofBoundaryFromWhatRan(t *testing.T) {
	if testing.Short() {
		t.Skip("20 chaos runs take about 2 minutes")
	}
	for seed := int64(1); seed <= int64(*proofSeeds); seed++ {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			opts, priv := defaultOpts(t, "chaos")
			opts.Seed = seed
			opts.Chaos = nemesis.Config{Duration: 3 * time.Second}
			opts.Timeout = runner.ChaosTimeout(opts.Chaos)
			ev, err := runner.Run(context.Background(), opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			defer infratest.NothingLeft(t, priv)
			counts := faultCounts(t, ev.Scenarios[0])
			had, notRun := ev.ProofBoundary[1].Had, ev.ProofBoundary[3].Had
			for _, k := range spec.NemesisKinds() {
				p := spec.NemesisPrefix + k
				inHad := hasPrefix(had, p+" (in chaos)")
				switch n := counts[k]; {
				case n > 0 && !inHad:
					t.Errorf("%s fired %d time(s) (%s) and is not under this run had:\n%s", k, n, ev.Scenarios[0].Line, strings.Join(had, "\n"))
				case n == 0 && inHad:
					t.Errorf("%s did not fire (%s) and is under this run had", k, ev.Scenarios[0].Line)
				}
				if counts[k] == 0 {
					continue
				}
				for _, e := range notRun {
					if strings.Contains(e, p+" ") || strings.Contains(e, p+",") || (classOf[k] != "" && strings.HasPrefix(e, classOf[k])) {
						t.Errorf("%s fired %d time(s) and is under not run: %q", k, counts[k], e)
					}
				}
			}
			v, err := checks.Verify(context.Background(), opts.Out, checks.Options{BlackBox: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range v.Reasons {
				if r.Rule == "proof-mismatch" {
					t.Errorf("verify: %s %s: %s", r.Field, r.Message, r.Claimed+" / "+r.Recomputed)
				}
			}
			t.Logf("%s; verify %s", ev.Scenarios[0].Line, v.Status)
		})
	}
}

// faultCounts reads the faults= metric: "kind:n+kind:n" or "none".
func faultCounts(t *testing.T, sc evidence.Scenario) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range sc.Metrics {
		if m.Name != "faults" || m.Value == "none" {
			continue
		}
		for _, part := range strings.Split(m.Value, "+") {
			k, n, ok := strings.Cut(part, ":")
			c, err := strconv.Atoi(n)
			if !ok || err != nil {
				t.Fatalf("faults=%s: cannot read %q", m.Value, part)
			}
			out[k] = c
		}
	}
	return out
}

func hasPrefix(xs []string, p string) bool {
	for _, x := range xs {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}
