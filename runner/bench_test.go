package runner_test

import (
	"path/filepath"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// BenchmarkRunAll measures the whole default suite as `orderflow-audit
// run` runs it by default: its private mariadbd started (from the
// template) and removed, scratch databases, topics, the evidence, its
// logs and both witnesses (binlog copy, the broker's data directory).
//
//	go test -run '^$' -bench 'BenchmarkRunAll$' -benchtime 5x ./runner/
func BenchmarkRunAll(b *testing.B) {
	infratest.RequireMariaDB(b)
	benchRun(b, runner.Options{Executable: exe})
}

// BenchmarkRunAllExternal is the same suite against the shared server at
// 127.0.0.1:3306 (--mysql-dsn): no server to start, no binlog to copy.
//
//	go test -run '^$' -bench 'BenchmarkRunAllExternal$' -benchtime 5x ./runner/
func BenchmarkRunAllExternal(b *testing.B) {
	infratest.Server(b)
	cfg, err := infra.ResolveDSN("")
	if err != nil {
		b.Fatal(err)
	}
	benchRun(b, runner.Options{MySQL: cfg, Executable: exe})
}

func benchRun(b *testing.B, opts runner.Options) {
	opts.Out = filepath.Join(b.TempDir(), "u80.json")
	opts.Brokers = infra.ResolveBrokers("")
	for i := 0; b.Loop(); i++ {
		ev, err := runner.Run(b.Context(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Summary.Passed != len(spec.DefaultIDs()) {
			b.Fatalf("run %d: %+v", i, ev.Summary)
		}
	}
	b.ReportMetric(float64(len(spec.DefaultIDs())), "scenarios/op")
}
