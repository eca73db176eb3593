package evidence_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// TestContainerEnvSchema: an environment with a database and a broker in
// containers fits the evidence schema; an image id that is not a sha256
// digest or a missing field does not.
func TestContainerEnvSchema(t *testing.T) {
	ev, _, err := evidence.ReadFile("example/u80.json")
	if err != nil {
		t.Fatal(err)
	}
	ctr := func(id string) *evidence.ContainerEnv {
		return &evidence.ContainerEnv{Image: "local/mariadb:10.11", ImageID: id, RepoDigests: []string{}, Engine: "Docker 20.10.24"}
	}
	for _, tc := range []struct {
		name string
		db   *evidence.ContainerEnv
		want string // a problem, or "" for valid
	}{
		{"containers", ctr("sha256:" + strings.Repeat("0", 64)), ""},
		{"bad image id", ctr("07e9108bf721"), "/environment/database/container/image_id"},
		{"no engine", &evidence.ContainerEnv{Image: "x", ImageID: "sha256:" + strings.Repeat("0", 64), RepoDigests: []string{}}, "/environment/database/container/engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := *ev
			e.Environment.Database.Mode, e.Environment.Database.Container = evidence.DatabaseContainer, tc.db
			e.Environment.Kafka.Mode, e.Environment.Kafka.Container = evidence.KafkaContainer, ctr("sha256:"+strings.Repeat("1", 64))
			raw, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			err = schemas.ValidateEvidenceJSON(raw)
			if tc.want == "" && err != nil {
				t.Fatalf("valid environment refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("ValidateEvidenceJSON = %v; want a problem at %s", err, tc.want)
			}
		})
	}
}
