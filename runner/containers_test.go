package runner

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
)

// TestStartWitnessMySQL: a MySQL server (mysql:8.4 in a container) is not
// witnessed, and the evidence says why, without asking the server.
func TestStartWitnessMySQL(t *testing.T) {
	rs := &runScope{server: &infra.Server{Info: infra.ServerInfo{Flavour: evidence.FlavourMySQL, Version: "8.4.6"}}}
	w := rs.startWitness(t.Context())
	if !strings.Contains(w.missing, "MariaDB's binary log only") || !strings.Contains(w.missing, "MySQL 8.4.6") {
		t.Errorf("missing = %q; want why a MySQL server is not witnessed", w.missing)
	}
}

func TestCheckContainersExcludeExternal(t *testing.T) {
	out := filepath.Join(t.TempDir(), "u80.json")
	for _, opts := range []Options{
		{DBImage: "mysql:8.4", MySQL: mysql.NewConfig(), Out: out},
		{KafkaImage: "apache/kafka:4.1.0", Brokers: []string{"h:9092"}, Out: out},
	} {
		if err := Check(opts); !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "exclude each other") {
			t.Errorf("Check(%+v) = %v; want ErrBadOptions", opts, err)
		}
	}
	if err := Check(Options{DBImage: "mysql:8.4", KafkaImage: "local/broker", Out: out}); err != nil {
		t.Errorf("Check(containers) = %v", err)
	}
}

func TestContainerErr(t *testing.T) {
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "")
	err := containerErr("--db container:x", errors.New("create container: reaper: new reaper: pull: no such host"))
	if !strings.Contains(err.Error(), "TESTCONTAINERS_RYUK_DISABLED=true") {
		t.Errorf("reaper failure: %v; want the variable that turns it off", err)
	}
	err = containerErr("--kafka container:y", container.ErrNoEngine)
	for _, want := range []string{"--kafka container:y needs a container engine", "DOCKER_HOST", "scripts/container-images.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no engine: %v; want %q", err, want)
		}
	}
	if other := errors.New("boom"); containerErr("--db container", other) != other {
		t.Error("another error was rewritten")
	}
}
