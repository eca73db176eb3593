package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

func TestRunContainerFlags(t *testing.T) {
	t.Setenv(infra.EnvMySQLDSN, "root@tcp(192.0.2.1:3306)/")
	t.Setenv(infra.EnvKafkaBrokers, "192.0.2.1:9092")
	for _, tc := range []struct {
		name               string
		args               []string
		db, kafka, problem string
		external           bool // the environment's server and brokers are used
	}{
		{name: "environment", args: nil, external: true},
		{name: "defaults", args: []string{"--db", "container", "--kafka", "container"},
			db: container.DefaultDBImage, kafka: container.DefaultKafkaImage},
		{name: "images", args: []string{"--db=container:mariadb:11.4", "--kafka", "container:local/broker"},
			db: "mariadb:11.4", kafka: "local/broker"},
		{name: "embedded", args: []string{"--db", "embedded", "--kafka", "embedded"}},
		{name: "bad db", args: []string{"--db", "docker"}, problem: "want embedded, container or container:IMAGE"},
		{name: "empty image", args: []string{"--kafka", "container:"}, problem: "want embedded, container or container:IMAGE"},
		{name: "db and dsn", args: []string{"--db", "container", "--mysql-dsn", "root@tcp(h:1)/"}, problem: "exclude each other"},
		{name: "kafka and brokers", args: []string{"--kafka", "container", "--kafka-brokers", "h:1"}, problem: "exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rf runFlags
			fs := runFlagSet(&rf)
			args := append(tc.args, "--out", filepath.Join(t.TempDir(), "u80.json"))
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			opts, err := rf.check(fs, args)
			if tc.problem != "" {
				if err == nil || exitCodeFor(err) != exitUsage || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("check(%q) = %v; want a usage error saying %q", tc.args, err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.DBImage != tc.db || opts.KafkaImage != tc.kafka {
				t.Errorf("images %q, %q; want %q, %q", opts.DBImage, opts.KafkaImage, tc.db, tc.kafka)
			}
			if (opts.MySQL != nil) != tc.external || (len(opts.Brokers) > 0) != tc.external {
				t.Errorf("external server %v, brokers %v; want the environment's: %v", opts.MySQL != nil, opts.Brokers, tc.external)
			}
		})
	}
}

// containerIDs lists the containers labelled label=value (label alone: any value).
func containerIDs(t *testing.T, label string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func networkIDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("docker", "network", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("docker network ls: %v\n%s", err, out)
	}
	ids := strings.Fields(string(out))
	slices.Sort(ids)
	return ids
}

// runBinary runs this command's binary with args, bounded by d.
func runBinary(t *testing.T, d time.Duration, env []string, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = &out, &errb, env
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", name, err)
	}
	return code, out.String(), errb.String()
}

// TestRunInContainers is the acceptance test of the container mode: a run
// of every scenario that can run against an external broker, with the database and the broker in containers of the
// images scripts/container-images.sh builds passes, verify passes, the
// evidence records the images with their digests, both witnesses are
// taken through the protocols (the binlog streamed, the broker dumped), the
// broker is recorded as kfake, and no container or network is left.
func TestRunInContainers(t *testing.T) {
	infratest.RequireContainers(t)
	nets := networkIDs(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	// Every scenario but those that tell the embedded broker to fail
	// requests: the broker in its container is out of the run's reach
	// (selected, they would be NOT_RUN and the verdict INCONCLUSIVE).
	var ids []string
	for _, sc := range spec.All() {
		if !sc.BrokerControlled() && !sc.OptIn {
			ids = append(ids, sc.ID)
		}
	}
	if len(ids) == len(spec.All()) || len(ids) < 15 {
		t.Fatalf("%d of %d scenarios run against a broker in a container: the selection is wrong", len(ids), len(spec.All()))
	}
	code, stdout, stderr := runBinary(t, 5*time.Minute, os.Environ(), binary(t), "run",
		"--db", "container:"+infratest.LocalMariaDB, "--kafka", "container:"+infratest.LocalBroker,
		"--scenarios", strings.Join(ids, ","), "--out", out)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "=PASS "); n != len(ids) {
		t.Errorf("%d scenarios passed; want all %d selected:\n%s", n, len(ids), stdout)
	}
	if code, vout, verr := runCLI(t, "verify", out); code != exitOK {
		t.Fatalf("verify: exit %d\n%s\n%s", code, vout, verr)
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	db, k := ev.Environment.Database, ev.Environment.Kafka
	if db.Mode != evidence.DatabaseContainer || db.Container == nil || db.Container.Image != infratest.LocalMariaDB ||
		!strings.HasPrefix(db.Container.ImageID, "sha256:") {
		t.Errorf("database environment %+v (container %+v): want the container of %s with its image id", db, db.Container, infratest.LocalMariaDB)
	}
	if k.Mode != evidence.KafkaContainer || k.Container == nil || k.Container.Image != infratest.LocalBroker ||
		!strings.HasPrefix(k.Implementation, "kfake ") || strings.HasPrefix(k.Implementation, "Apache") {
		t.Errorf("broker environment %+v: want the container of %s recorded as kfake", k, infratest.LocalBroker)
	}
	w := ev.Witness
	if w == nil || len(w.Missing) > 0 || w.Database == nil || w.Database.Source != evidence.WitnessBinlogStream ||
		w.Broker == nil || w.Broker.Source != evidence.WitnessKafkaDump {
		t.Errorf("witness %+v: want the binlog streamed and the broker dumped, nothing missing", w)
	}
	real := strings.Join(ev.ProofBoundary[0].Had, "\n")
	for _, want := range []string{"in a container that the run started for itself", db.Container.ImageID, k.Container.ImageID} {
		if !strings.Contains(real, want) {
			t.Errorf("proof-boundary matrix, real components, lacks %q:\n%s", want, real)
		}
	}
	if left := containerIDs(t, container.LabelRun+"="+ev.Run.ID); len(left) > 0 {
		t.Errorf("containers of the run left behind: %v", left)
	}
	if got := networkIDs(t); !slices.Equal(got, nets) {
		t.Errorf("networks %v after the run; want %v as before", got, nets)
	}
}

// TestRunContainersCtrlC: Ctrl-C during a run in containers removes them
// (exit 4, evidence marked interrupted).
func TestRunContainersCtrlC(t *testing.T) {
	infratest.RequireContainers(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	p := startProc(t, "run", "--db", "container:"+infratest.LocalMariaDB, "--kafka", "container:"+infratest.LocalBroker, "--out", out)
	p.line(t) // the first scenario finished: both containers run
	owner := container.LabelOwner
	if len(containerIDs(t, owner)) < 2 {
		t.Fatalf("fewer than 2 containers while the run runs: %v", containerIDs(t, owner))
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 60*time.Second); code != exitInconclusive {
		t.Fatalf("exit %d after Ctrl-C; want %d\n%s", code, exitInconclusive, p.stderr.String())
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Run.Interrupted {
		t.Error("evidence not marked interrupted")
	}
	if left := containerIDs(t, container.LabelRun+"="+ev.Run.ID); len(left) > 0 {
		t.Errorf("containers of the interrupted run left behind: %v", left)
	}
}

// TestRunContainerStartFails: an image the engine lacks and cannot pull
// (no registry here; elsewhere, no such image), and a broker container
// that exits after the database container started (the MariaDB image taken
// for a broker), exit 3 naming the image, write nothing and leave no
// container.
func TestRunContainerStartFails(t *testing.T) {
	infratest.RequireContainers(t)
	const missing = "local/orderflow-audit-no-such-image:0"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing image", []string{"--db", "container:" + missing}, missing},
		{"broker exits", []string{"--db", "container:" + infratest.LocalMariaDB, "--kafka", "container:" + infratest.LocalMariaDB},
			"start the broker container " + infratest.LocalMariaDB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "u80.json")
			code, _, stderr := runCLI(t, append(append([]string{"run"}, tc.args...), "--out", out)...)
			if code != exitUnavailable || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d; want %d saying %q:\n%s", code, exitUnavailable, tc.want, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an evidence file was written (stat: %v)", err)
			}
			if left := ownedBy(t, os.Getpid()); len(left) > 0 {
				t.Errorf("containers left: %v", left)
			}
		})
	}
}

// ownedBy lists the containers that process pid of this host started.
func ownedBy(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+container.LabelOwner,
		"--format", `{{.ID}} {{.Label "`+container.LabelOwner+`"}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	host, _ := os.Hostname()
	var ids []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[1] == host && f[2] == strconv.Itoa(pid) {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// TestRunNoContainerEngine: without a container engine, --db container and
// --kafka container exit 3 with a message saying what is missing, write
// nothing and leave no network behind. Where an engine
// runs, the run is started in a mount namespace whose /run (and so
// /var/run/docker.sock) is an empty tmpfs, with a HOME of its own (no
// docker context, no ~/.testcontainers.properties) and no DOCKER_HOST.
func TestRunNoContainerEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary (skipped with -short)")
	}
	infratest.RyukOff(t) // testcontainers reads its settings once per process, at its first use
	bin := binary(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir(), "TESTCONTAINERS_RYUK_DISABLED=true"}
	prefix := []string{bin}
	var nets []string
	if _, err := container.EngineVersion(t.Context()); err == nil {
		if _, lerr := exec.LookPath("unshare"); lerr != nil || os.Geteuid() != 0 {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set, an engine answers, and it cannot be hidden (unshare: %v, euid %d)", lerr, os.Geteuid())
			}
			t.Skip("an engine answers and cannot be hidden without root and unshare")
		}
		prefix = []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`mount -t tmpfs tmpfs /run && exec "$@"`, "sh", bin}
		nets = networkIDs(t)
	}
	for flag, img := range map[string]string{"--db": infratest.LocalMariaDB, "--kafka": infratest.LocalBroker} {
		t.Run(flag, func(t *testing.T) {
			if flag == "--kafka" {
				infratest.RequireMariaDB(t) // the private server starts first
			}
			out := filepath.Join(t.TempDir(), "u80.json")
			args := append(slices.Clone(prefix[1:]), "run", flag, "container:"+img, "--out", out)
			code, _, stderr := runBinary(t, time.Minute, env, prefix[0], args...)
			if code != exitUnavailable {
				t.Fatalf("exit %d; want %d:\n%s", code, exitUnavailable, stderr)
			}
			for _, want := range []string{flag + " container:" + img + " needs a container engine", "DOCKER_HOST", "dockerd"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an evidence file was written (stat: %v)", err)
			}
		})
	}
	// No container can have been made: the engine was hidden from the runs.
	if nets != nil {
		if after := networkIDs(t); !slices.Equal(after, nets) {
			t.Errorf("networks %v after the runs; want %v", after, nets)
		}
	}
}

// TestRunContainersKeep: with --keep the containers stay, renamed so that no
// later run sweeps them, and the run says how to remove them.
func TestRunContainersKeep(t *testing.T) {
	infratest.RequireContainers(t)
	out := filepath.Join(t.TempDir(), "u80.json")
	code, _, stderr := runBinary(t, 2*time.Minute, os.Environ(), binary(t), "run", "--scenarios", "placement", "--keep",
		"--db", "container:"+infratest.LocalMariaDB, "--kafka", "container:"+infratest.LocalBroker, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ev, _, err := evidence.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kept := containerIDs(t, container.LabelRun+"="+ev.Run.ID)
	t.Cleanup(func() {
		for _, id := range kept {
			_ = exec.Command("docker", "rm", "-f", "-v", id).Run()
		}
	})
	if len(kept) != 2 {
		t.Fatalf("containers of the kept run: %v; want the database's and the broker's", kept)
	}
	for _, what := range []string{"database", "broker"} {
		if !strings.Contains(stderr, "kept the "+what+" container") || !strings.Contains(stderr, "docker rm -f -v ofa-kept-") {
			t.Errorf("stderr does not say how to remove the kept %s container:\n%s", what, stderr)
		}
	}
	// The next container run sweeps only abandoned containers, not kept ones.
	if code, _, stderr := runBinary(t, 2*time.Minute, os.Environ(), binary(t), "run", "--scenarios", "placement",
		"--db", "container:"+infratest.LocalMariaDB, "--out", filepath.Join(t.TempDir(), "next.json")); code != exitOK {
		t.Fatalf("next run: exit %d\n%s", code, stderr)
	}
	if left := containerIDs(t, container.LabelRun+"="+ev.Run.ID); len(left) != 2 {
		t.Errorf("kept containers after the next run: %v; want both", left)
	}
}
