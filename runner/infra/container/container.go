// Package container starts a run's database server or Kafka broker in a
// container through testcontainers-go, for the run alone, and throws it
// away after: the audit then runs against the same server and broker
// software as production (mysql:8.4 and apache/kafka by default), fresh.
//
// Both are reached on a port published on the host. The tool terminates
// its containers itself on every way out of a run (the end, a failure,
// Ctrl-C); a run killed outright leaves its containers behind, and the next
// container run on the same host removes them (Sweep): each container is
// labelled with the run and the process that started it. testcontainers'
// own reaper (Ryuk) is not needed for that, and its image must be pulled
// from a registry: set TESTCONTAINERS_RYUK_DISABLED=true where there is none.
package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Default images, as `--db container` and `--kafka container` use them.
const (
	DefaultDBImage    = "mysql:8.4"
	DefaultKafkaImage = "apache/kafka:4.1.0"
)

// Labels every container of ours carries (Sweep reads them), and the
// labels of an image that say which broker software it holds.
const (
	LabelRun   = "org.orderflow-audit.run"   // the run id
	LabelOwner = "org.orderflow-audit.owner" // "<host> <pid> <start>" of the process that started it
	// LabelBroker on an image names the broker software in it ("kfake"
	// for the local/broker image of scripts/container-images.sh); an
	// image without it is taken to be Apache Kafka's (apache/kafka).
	LabelBroker = "org.orderflow-audit.broker"
	// LabelImplementation on an image is what the evidence records as the
	// broker's implementation.
	LabelImplementation = "org.orderflow-audit.implementation"
)

// Bounds of the steps that talk to the engine.
const (
	// StartTimeout bounds starting one container: pulling its image if
	// the engine does not have it, creating it, and waiting until the
	// server in it answers (mysql:8.4 initialises its data directory on
	// first start: 10-30 s on 2 cores).
	StartTimeout = 5 * time.Minute
	// engineTimeout bounds the first contact with the engine.
	engineTimeout = 10 * time.Second
	// terminateTimeout bounds removing a container (killed, not stopped:
	// it is thrown away).
	terminateTimeout = 20 * time.Second
)

// ErrNoEngine is wrapped by the error of a start that found no container
// engine to talk to.
var ErrNoEngine = errors.New("no container engine")

// Config configures StartDB and StartBroker.
type Config struct {
	// Image is the image reference; empty takes the default.
	Image string
	// RunID labels the container with the run.
	RunID string
	// Logger receives testcontainers' own messages (default: discarded).
	Logger *slog.Logger
}

// Image is what a run records of the image a container ran from.
type Image struct {
	// Ref is the reference as given (mysql:8.4, local/mariadb:10.11).
	Ref string
	// ID is the image's content digest (sha256 of its configuration),
	// which names the image exactly on any engine.
	ID string
	// RepoDigests are the registry digests (name@sha256:...) of an image
	// pulled from a registry; none for an image built locally.
	RepoDigests []string
	// Labels are the image's labels.
	Labels map[string]string
	// Engine is the container engine ("Docker 20.10.24+dfsg1").
	Engine string
}

// Container is one started container, and how to reach what it serves.
type Container struct {
	Image Image
	// ID is the container's id.
	ID string
	// Host is where its published ports are reached.
	Host string
	ctr  *testcontainers.DockerContainer
	eng  *engine
	once sync.Once
	err  error
}

// Terminate removes the container and its anonymous volumes, bounded by
// terminateTimeout whatever ctx says (Ctrl-C must not leave it behind).
// Calling it again returns the first call's result.
func (c *Container) Terminate() error {
	if c == nil || c.ctr == nil {
		return nil
	}
	c.once.Do(func() {
		c.err = terminate(c.ctr)
		c.eng.close()
	})
	return c.err
}

func terminate(ctr *testcontainers.DockerContainer) error {
	ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
	defer cancel()
	if err := ctr.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil {
		return fmt.Errorf("remove container %s: %w", short(ctr.GetContainerID()), err)
	}
	return nil
}

// Keep leaves the container running, renamed keptPrefix+<id> so that no
// later run sweeps it, and returns how to remove it.
func (c *Container) Keep() (string, error) {
	var err error
	c.once.Do(func() { // Terminate does nothing from now on
		ctx, cancel := context.WithTimeout(context.Background(), engineTimeout)
		defer cancel()
		_, err = c.eng.cli.ContainerRename(ctx, c.ID, client.ContainerRenameOptions{NewName: keptPrefix + short(c.ID)})
		c.eng.close()
	})
	return fmt.Sprintf("docker rm -f -v %s%s", keptPrefix, short(c.ID)), err
}

// engine is a connection to the container engine.
type engine struct {
	cli     *testcontainers.DockerClient
	version string
}

// logOnce routes testcontainers' process-wide logger to the first
// caller's logger (a run has one).
var logOnce sync.Once

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, v ...any) {
	a.l.Debug("testcontainers: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// connect finds the engine the way testcontainers does (DOCKER_HOST, the
// docker context, /var/run/docker.sock, rootless sockets, and
// ~/.testcontainers.properties) and asks it for its version. A failure
// wraps ErrNoEngine.
func connect(ctx context.Context, cfg Config) (e *engine, err error) {
	logOnce.Do(func() {
		tclog.SetDefault(slogAdapter{logger(cfg)})
	})
	defer func() {
		if r := recover(); r != nil { // testcontainers panics on some discovery paths
			err = fmt.Errorf("%w: %v", ErrNoEngine, r)
		}
	}()
	ectx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ectx)
	if err != nil {
		return nil, fmt.Errorf("%w (testcontainers-go looked at ~/.testcontainers.properties, DOCKER_HOST, the docker "+
			"context, /var/run/docker.sock and rootless Docker's sockets): %v", ErrNoEngine, err)
	}
	v, err := cli.ServerVersion(ectx, client.ServerVersionOptions{})
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	name := "Docker"
	if v.Platform.Name != "" && !strings.Contains(v.Platform.Name, "Docker") {
		name = v.Platform.Name
	}
	return &engine{cli: cli, version: name + " " + v.Version}, nil
}

func (e *engine) close() { e.cli.Close() }

// image returns what the engine knows of the image ref; ok is false when
// it does not have it (testcontainers pulls it then).
func (e *engine) image(ctx context.Context, ref string) (Image, bool, error) {
	ictx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	res, err := e.cli.ImageInspect(ictx, ref)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "no such image") || isNotFound(err) {
			return Image{Ref: ref, Engine: e.version}, false, nil
		}
		return Image{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	img := Image{Ref: ref, ID: res.ID, RepoDigests: res.RepoDigests, Engine: e.version}
	if res.Config != nil {
		img.Labels = res.Config.Labels
	}
	return img, true, nil
}

func isNotFound(err error) bool {
	var nf interface{ NotFound() }
	return errors.As(err, &nf)
}

// start runs cfg.Image with opts (after ours: the labels, and the ports,
// published on the host address only: container port "9092/tcp" -> host
// port, "0" for any free one), and returns the container with the image
// it ran from. On any error the container, if one was created, is removed
// again and the error carries the last lines of its log.
func start(ctx context.Context, e *engine, cfg Config, host string, ports map[string]string, run runFunc,
	opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	exposed := make([]string, 0, len(ports))
	for p := range ports {
		exposed = append(exposed, p)
	}
	token := startToken()
	all := []testcontainers.ContainerCustomizer{
		testcontainers.WithLabels(map[string]string{LabelRun: cfg.RunID, LabelOwner: ownerLabel(), labelStart: token}),
	}
	all = append(all, opts...)
	all = append(all, testcontainers.WithExposedPorts(exposed...), publishOn(host, ports))
	_, had, _ := e.image(ctx, cfg.Image)
	ctr, err := run(sctx, cfg.Image, all...)
	if err != nil && !had {
		err = fmt.Errorf("the engine did not have the image %s, and pulling it failed or the start after it did: %w", cfg.Image, err)
	}
	if err != nil {
		if ctr != nil {
			err = fmt.Errorf("%w%s", err, logTail(ctr))
			if terr := terminate(ctr); terr != nil {
				err = fmt.Errorf("%w; %v", err, terr)
			}
		}
		// A start cut short (Ctrl-C, its timeout) may have had the
		// engine create the container after the client gave up on it:
		// remove whatever carries this start's label.
		e.removeStray(context.WithoutCancel(ctx), token)
		return nil, err
	}
	c := &Container{ID: ctr.GetContainerID(), Host: host, ctr: ctr, eng: e}
	img, _, ierr := e.image(ctx, cfg.Image) // pulled by now
	if ierr == nil && img.ID == "" {
		ierr = fmt.Errorf("image %s is gone from the engine", cfg.Image)
	}
	if ierr != nil {
		return nil, joinTerminate(ierr, c)
	}
	c.Image = img
	return c, nil
}

// runFunc runs a container: testcontainers.Run, or a module's Run.
type runFunc func(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, error)

// joinTerminate removes c after err and returns both errors.
func joinTerminate(err error, c *Container) error {
	return errors.Join(err, c.Terminate())
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg.Logger
}

// Port returns the host port published for the container port p ("3306/tcp").
func (c *Container) Port(ctx context.Context, p string) (int, error) {
	mp, err := c.ctr.MappedPort(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("published port of %s: %w", p, err)
	}
	return int(mp.Num()), nil
}

// PublishedHost is the address the published ports are bound to and
// reached on: TESTCONTAINERS_HOST_OVERRIDE if set, the host of a DOCKER_HOST
// tcp:// address, else 127.0.0.1 (a local engine). testcontainers itself
// guesses the default gateway when it sees /.dockerenv; a run never dials
// that unless told to.
func PublishedHost() string {
	if h := os.Getenv("TESTCONTAINERS_HOST_OVERRIDE"); h != "" {
		return h
	}
	if dh := os.Getenv("DOCKER_HOST"); strings.Contains(dh, "://") && !strings.HasPrefix(dh, "unix://") && !strings.HasPrefix(dh, "npipe://") {
		if u, err := url.Parse(dh); err == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}
	return "127.0.0.1"
}

// publishOn binds each port to the host port ports names, on 127.0.0.1 when
// host is loopback (nothing outside the machine reaches the server), on
// every interface of the engine's host otherwise.
func publishOn(host string, ports map[string]string) testcontainers.CustomizeRequestOption {
	var ip netip.Addr
	if a, err := netip.ParseAddr(host); (err == nil && a.IsLoopback()) || host == "localhost" {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		if hc.PortBindings == nil {
			hc.PortBindings = network.PortMap{}
		}
		for p, hostPort := range ports {
			if port, err := network.ParsePort(p); err == nil {
				hc.PortBindings[port] = []network.PortBinding{{HostIP: ip, HostPort: hostPort}}
			}
		}
	})
}

// logTail returns the last lines of a container's log, for an error
// message ("" when there are none).
func logTail(ctr *testcontainers.DockerContainer) string {
	ctx, cancel := context.WithTimeout(context.Background(), engineTimeout)
	defer cancel()
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(rc, 1<<20))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "; the container's log ended with: " + strings.Join(lines[max(0, len(lines)-5):], " | ")
}

func short(id string) string { return id[:min(12, len(id))] }

// EngineVersion returns the container engine that testcontainers finds
// ("Docker 20.10.24+dfsg1"), or an error wrapping ErrNoEngine.
func EngineVersion(ctx context.Context) (string, error) {
	e, err := connect(ctx, Config{})
	if err != nil {
		return "", err
	}
	defer e.close()
	return e.version, nil
}

// HasImage tells whether the engine has the image ref (without pulling it).
func HasImage(ctx context.Context, ref string) (bool, error) {
	e, err := connect(ctx, Config{})
	if err != nil {
		return false, err
	}
	defer e.close()
	_, ok, err := e.image(ctx, ref)
	return ok, err
}
