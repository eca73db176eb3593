package binlog_test

import (
	"os"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }
