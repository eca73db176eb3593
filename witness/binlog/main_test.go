package binlog_test

import (
	"flag"
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Every binlog the tests read checks the fast rows path against the
	// decoder's (fastrows.go).
	*binlog.FastRowsCheck = true
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// The fuzzing engine's signal goroutine outlives m.Run: it is not
		// a leak of the tests, which testserver.Main would report.
		os.Exit(m.Run())
	}
	os.Exit(testserver.Main(m))
}
