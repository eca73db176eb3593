package reports

import (
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

func TestContainersRow(t *testing.T) {
	if got := containersRow(evidence.Environment{}); got != "" {
		t.Errorf("no containers: %q; want no row", got)
	}
	env := evidence.Environment{
		Database: evidence.DatabaseEnv{Container: &evidence.ContainerEnv{Image: "mysql:8.4", ImageID: "sha256:" + strings.Repeat("ab", 32),
			RepoDigests: []string{"mysql@sha256:" + strings.Repeat("c", 64)}, Engine: "Docker 27.0.1"}},
		Kafka: evidence.KafkaEnv{Container: &evidence.ContainerEnv{Image: "local/broker", ImageID: "sha256:" + strings.Repeat("d", 64),
			RepoDigests: []string{}, Engine: "Docker 27.0.1"}},
	}
	want := "database: image mysql:8.4 (id abababababab…, mysql@sha256:" + strings.Repeat("c", 64) + "); " +
		"broker: image local/broker (id dddddddddddd…, built locally); engine Docker 27.0.1"
	if got := containersRow(env); got != want {
		t.Errorf("containersRow = %q\nwant %q", got, want)
	}
}
