package broker_test

import (
	"flag"
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The fuzzing engine's signal handler outlives the run: the leak
	// check applies to tests, not to a fuzzing session.
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			os.Exit(m.Run())
		}
	}
	os.Exit(testserver.Main(m))
}
