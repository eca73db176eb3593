package binlog_test

import (
	"flag"
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// The fuzzing engine's signal goroutine outlives m.Run: it is not
		// a leak of the tests, which testserver.Main would report.
		os.Exit(m.Run())
	}
	os.Exit(testserver.Main(m))
}
