package infratest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
)

// The images scripts/container-images.sh builds, which the container tests
// run: Debian's MariaDB 10.11, and orderflow-audit's broker (kfake).
const (
	LocalMariaDB = "local/mariadb:10.11"
	LocalBroker  = "local/broker"
)

// RequireContainers skips the test (fails it with CI set) unless a
// container engine answers and has the images LocalMariaDB and
// LocalBroker; scripts/container-images.sh sees to both. It sets
// TESTCONTAINERS_RYUK_DISABLED=true for the test unless the environment
// says otherwise (the reaper's image comes from a registry; the runs
// remove their containers themselves). It must run before anything else
// in the process uses testcontainers, which reads its settings once.
func RequireContainers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts containers (skipped with -short)")
	}
	RyukOff(t)
	if err := containersReady(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the container tests cannot run: %v", err)
		}
		t.Skipf("containers unavailable (set CI to make this fail): %v", err)
	}
}

func containersReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := container.EngineVersion(ctx); err != nil {
		return err
	}
	for _, img := range []string{LocalMariaDB, LocalBroker} {
		ok, err := container.HasImage(ctx, img)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the engine has no image %s: run scripts/container-images.sh", img)
		}
	}
	return nil
}

// RyukOff turns testcontainers' reaper off for the test unless the
// environment says otherwise. Call it before anything in the process uses
// testcontainers: it reads its settings once, at its first use.
func RyukOff(t *testing.T) {
	t.Helper()
	if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}
