package container

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerPort is the broker's client port inside the container.
const brokerPort = "9092/tcp"

// Broker is a Kafka wire-protocol broker in a container.
type Broker struct {
	*Container
	// Brokers are the seed addresses (host:published port).
	Brokers []string
	// Implementation is what the evidence records as the broker software:
	// the image's LabelImplementation, or what an image without our
	// labels is taken to be (Apache Kafka, as the image's name says; the
	// Kafka protocol does not name the broker software).
	Implementation string
}

// StartBroker starts cfg.Image (default DefaultKafkaImage) as a single
// KRaft node (broker and controller) with one client listener, published
// on the host at a port chosen first, since the broker must advertise it:
// an image labelled LabelBroker=kfake runs `orderflow-audit broker`
// (--listen 0.0.0.0:9092 --advertise HOST:PORT), any other image is
// configured through apache/kafka's KAFKA_* variables. testcontainers-go's
// kafka module is not used: it configures Confluent's images only (its
// start script sources /etc/confluent/docker), and v0.45.0 of it is not
// served. It waits until the broker answers a metadata request with
// itself. Errors wrap ErrNoEngine when no engine answers.
func StartBroker(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.Image == "" {
		cfg.Image = DefaultKafkaImage
	}
	e, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.sweep(ctx, logger(cfg))
	b, err := startBroker(ctx, e, cfg)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("start the broker container %s: %w", cfg.Image, err)
	}
	return b, nil
}

func startBroker(ctx context.Context, e *engine, cfg Config) (*Broker, error) {
	img, err := e.ensureImage(ctx, cfg.Image)
	if err != nil {
		return nil, err
	}
	host := PublishedHost()
	// The port is chosen before the engine binds it: another process may
	// take it in between, so a start that finds it taken tries another.
	for attempt := 1; ; attempt++ {
		port, err := freePort(host)
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		opts, impl := brokerOptions(img, addr)
		opts = append(opts, testcontainers.WithWaitStrategyAndDeadline(StartTimeout, brokerReady{addr: addr}))
		c, err := start(ctx, e, cfg, host, map[string]string{brokerPort: strconv.Itoa(port)}, testcontainers.Run, opts...)
		if err != nil && attempt < 3 && portTaken(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Broker{Container: c, Brokers: []string{addr}, Implementation: impl}, nil
	}
}

// brokerOptions configures the image's broker to listen on every
// interface of the container and advertise addr, and says what the
// evidence records as its implementation.
func brokerOptions(img Image, addr string) ([]testcontainers.ContainerCustomizer, string) {
	if img.Labels[LabelBroker] == "kfake" {
		impl := img.Labels[LabelImplementation]
		if impl == "" {
			impl = "kfake (franz-go Kafka wire-protocol broker, not Apache Kafka; image label " + LabelBroker + ")"
		}
		return []testcontainers.ContainerCustomizer{
			testcontainers.WithCmd("--listen", "0.0.0.0:9092", "--advertise", addr),
		}, impl
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	env := map[string]string{
		"CLUSTER_ID":                                     base64.RawURLEncoding.EncodeToString(id),
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_LISTENERS":                                "PLAINTEXT://0.0.0.0:9092,CONTROLLER://localhost:9093",
		"KAFKA_ADVERTISED_LISTENERS":                     "PLAINTEXT://" + addr,
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:9093",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_NUM_PARTITIONS":                           "1",
	}
	return []testcontainers.ContainerCustomizer{testcontainers.WithEnv(env)},
		"Apache Kafka, as the image " + img.Ref + " is named (single KRaft node; the Kafka protocol does not name the broker software)"
}

// ensureImage returns the image, pulling it first when the engine does not
// have it (its labels decide how the broker is configured).
func (e *engine) ensureImage(ctx context.Context, ref string) (Image, error) {
	img, ok, err := e.image(ctx, ref)
	if err != nil || ok {
		return img, err
	}
	pctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	resp, err := e.cli.ImagePull(pctx, ref, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(pctx)
	}
	if err != nil {
		return Image{}, fmt.Errorf("the engine does not have the image %s and cannot pull it: %w", ref, err)
	}
	img, ok, err = e.image(ctx, ref)
	if err == nil && !ok {
		err = fmt.Errorf("image %s: pulled, but the engine does not list it", ref)
	}
	return img, err
}

// freePort returns a port free on host now. host must be an address of
// this machine: the broker must advertise the published port, so it is
// chosen here, not by the engine.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick the broker's published port on %s (a broker container needs the engine on this machine, "+
			"or TESTCONTAINERS_HOST_OVERRIDE naming an address of this machine): %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

// brokerReady waits until the broker answers a metadata request listing
// a broker, polling every 200 ms; a container that exited ends the wait.
type brokerReady struct{ addr string }

func (b brokerReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	for {
		if st, err := target.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("broker container stopped (%s, exit code %d)", st.Status, st.ExitCode)
		}
		err := metadata(ctx, b.addr)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker at %s did not answer in time: %w", b.addr, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func metadata(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(mctx)
	if err == nil && len(md.Brokers) == 0 {
		err = errors.New("no broker in the metadata")
	}
	return err
}
