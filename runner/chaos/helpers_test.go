package chaos_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// The chaos scenario's tests (reference_test.go, proof_test.go) run the
// engine over the reference pipeline, as `run --scenarios chaos` does:
// they need MariaDB and the orderflow-audit binary, which starts the
// actors. These helpers are those of the runner's own tests
// (runner/private_test.go), the binary built once, on first use.

var (
	exeOnce sync.Once
	exeDir  string
	exe     string
	exeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if exeDir != "" {
		os.RemoveAll(exeDir)
	}
	os.Exit(code)
}

// executable builds the orderflow-audit binary for the actor processes
// (the test binary has no actor command), once.
func executable(t *testing.T) string {
	t.Helper()
	exeOnce.Do(func() {
		if exeDir, exeErr = os.MkdirTemp("", "ofa-chaos-bin-"); exeErr != nil {
			return
		}
		exe = filepath.Join(exeDir, "orderflow-audit")
		build := exec.Command("go", "build", "-o", exe, "github.com/orderflow-audit/orderflow-audit/cmd/orderflow-audit")
		if out, err := build.CombinedOutput(); err != nil {
			exeErr = fmt.Errorf("build orderflow-audit: %v\n%s", err, out)
		}
	})
	if exeErr != nil {
		t.Fatal(exeErr)
	}
	return exe
}

// defaultOpts returns the options of a default run (a private mariadbd,
// the embedded broker) whose private server lives in its own temporary
// directory, returned too, so that what it leaves behind can be seen.
func defaultOpts(t *testing.T, ids ...string) (runner.Options, string) {
	t.Helper()
	infratest.RequireMariaDB(t)
	priv := t.TempDir()
	return runner.Options{
		Scenarios: ids, Out: filepath.Join(t.TempDir(), "u80.json"), Timeout: 30 * time.Second,
		Executable: executable(t), Private: mariadbd.Config{Dir: priv},
	}, priv
}
