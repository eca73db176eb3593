package runner_test

import (
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// BenchmarkRunAll measures the whole default suite, scratch databases,
// topics, evidence and logs included: what `orderflow-audit run` does.
//
//	go test -run '^$' -bench BenchmarkRunAll -benchtime 5x ./runner/
func BenchmarkRunAll(b *testing.B) {
	infratest.Server(b)
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		ev, err := runner.Run(b.Context(), runner.Options{
			MySQL: cfg, Brokers: infra.ResolveBrokers(""), Executable: exe,
			Out: filepath.Join(dir, "u80.json"),
		})
		if err != nil {
			b.Fatal(err)
		}
		if ev.Summary.Passed != len(runner.Scenarios()) {
			b.Fatalf("run %d: %+v", i, ev.Summary)
		}
	}
	b.ReportMetric(float64(len(runner.Scenarios())), "scenarios/op")
}
