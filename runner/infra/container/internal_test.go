package container

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/testcontainers/testcontainers-go"
)

func TestPublishedHost(t *testing.T) {
	for _, tc := range []struct {
		override, dockerHost, want string
	}{
		{"", "", "127.0.0.1"},
		{"", "unix:///var/run/docker.sock", "127.0.0.1"},
		{"", "tcp://10.0.0.5:2375", "10.0.0.5"},
		{"192.0.2.1", "tcp://10.0.0.5:2375", "192.0.2.1"},
		{"localhost", "", "localhost"},
	} {
		t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", tc.override)
		if tc.override == "" {
			os.Unsetenv("TESTCONTAINERS_HOST_OVERRIDE")
		}
		t.Setenv("DOCKER_HOST", tc.dockerHost)
		if got := PublishedHost(); got != tc.want {
			t.Errorf("PublishedHost() with override %q, DOCKER_HOST %q = %q; want %q", tc.override, tc.dockerHost, got, tc.want)
		}
	}
}

// request applies opts to a request, as testcontainers does.
func request(t *testing.T, opts []testcontainers.ContainerCustomizer) testcontainers.GenericContainerRequest {
	t.Helper()
	var req testcontainers.GenericContainerRequest
	for _, o := range opts {
		if err := o.Customize(&req); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

func TestBrokerOptions(t *testing.T) {
	const addr = "127.0.0.1:40001"
	kfake := Image{Ref: "local/broker", Labels: map[string]string{LabelBroker: "kfake", LabelImplementation: "kfake v1 (not Apache Kafka)"}}
	opts, impl := brokerOptions(kfake, addr)
	req := request(t, opts)
	if want := []string{"--listen", "0.0.0.0:9092", "--advertise", addr}; !slices.Equal(req.Cmd, want) {
		t.Errorf("kfake image: cmd %q; want %q", req.Cmd, want)
	}
	if impl != "kfake v1 (not Apache Kafka)" {
		t.Errorf("kfake image: implementation %q; want the image's label", impl)
	}
	kfake.Labels = map[string]string{LabelBroker: "kfake"}
	if _, impl := brokerOptions(kfake, addr); !strings.HasPrefix(impl, "kfake") || !strings.Contains(impl, "not Apache Kafka") {
		t.Errorf("kfake image without an implementation label: %q; want kfake, not Apache Kafka", impl)
	}

	opts, impl = brokerOptions(Image{Ref: "apache/kafka:4.1.0"}, addr)
	req = request(t, opts)
	if len(req.Cmd) != 0 {
		t.Errorf("apache/kafka: cmd %q; want the image's own", req.Cmd)
	}
	for k, want := range map[string]string{
		"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://" + addr, "KAFKA_PROCESS_ROLES": "broker,controller",
		"KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://localhost:9093", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
	} {
		if req.Env[k] != want {
			t.Errorf("apache/kafka: %s=%q; want %q", k, req.Env[k], want)
		}
	}
	if len(req.Env["CLUSTER_ID"]) != 22 {
		t.Errorf("CLUSTER_ID %q: want a base64 UUID (22 characters)", req.Env["CLUSTER_ID"])
	}
	if !strings.HasPrefix(impl, "Apache Kafka, as the image apache/kafka:4.1.0 is named") {
		t.Errorf("apache/kafka: implementation %q", impl)
	}
}

func TestAbandonedAndKept(t *testing.T) {
	host, _ := os.Hostname()
	me := strconv.Itoa(os.Getpid())
	for owner, want := range map[string]bool{
		ownerLabel():              false,
		host + " " + me:           false,
		host + " " + me + " 1":    true, // a reused pid: another start time
		host + " 999999999":       true,
		"elsewhere 999999999":     false,
		"":                        false,
		host + " not-a-pid 12345": false,
	} {
		if got := abandoned(owner); got != want {
			t.Errorf("abandoned(%q) = %v; want %v", owner, got, want)
		}
	}
	if !kept([]string{"/" + keptPrefix + "abc"}) || kept([]string{"/ofa-x", "/other"}) {
		t.Error("kept: want true only for a name starting with " + keptPrefix)
	}
}
