package checks

import (
	"os"
	"testing"
)

// TestMain removes what tests share across the process (the single-scenario
// copies of the witnessed fixture).
func TestMain(m *testing.M) {
	code := m.Run()
	if scenarioCopies.base != "" {
		os.RemoveAll(scenarioCopies.base)
	}
	os.Exit(code)
}
