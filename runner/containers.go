package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/container"
)

// startDatabase starts the run's database server and returns how to reach
// it: the external server of opts.MySQL as it is, a container of
// opts.DBImage, or (the default) a private mariadbd. A server that cannot
// start is ErrUnavailable (exit 3).
func (rs *runScope) startDatabase(ctx context.Context) (*mysql.Config, error) {
	opts := rs.opts
	switch {
	case opts.MySQL != nil:
		return opts.MySQL, nil
	case opts.DBImage != "":
		t0 := time.Now()
		db, err := container.StartDB(ctx, container.Config{Image: opts.DBImage, RunID: rs.runID,
			Logger: opts.Logger.With("part", "database container")})
		if err != nil {
			return nil, infra.Unavailable(containerErr("--db container:"+opts.DBImage, err))
		}
		rs.dbc = db
		fmt.Fprintf(opts.Progress, "database server in a container of %s (%s) on %s, up in %.1f s\n",
			db.Image.Ref, shortID(db.Image.ID), db.Config().Addr, time.Since(t0).Seconds())
		return db.Config(), nil
	}
	var err error
	if rs.private, err = mariadbd.Start(ctx, opts.Private); err != nil {
		return nil, infra.Unavailable(err)
	}
	fmt.Fprintf(opts.Progress, "private MariaDB server on 127.0.0.1:%d (%s)\n", rs.private.Port, rs.private.Dir)
	return rs.private.Config(), nil
}

// startKafka starts the embedded broker with its data directory in the
// staging directory, or a broker container of opts.KafkaImage, or checks
// the external brokers of opts.Brokers. A broker in a container is used
// like an external one (same kgo clients, dumped through the Kafka
// protocol at the end); only who started it differs.
func (rs *runScope) startKafka(ctx context.Context) (*infra.Kafka, error) {
	opts := rs.opts
	if opts.KafkaImage == "" {
		kc := infra.KafkaConfig{Brokers: opts.Brokers}
		if len(opts.Brokers) == 0 {
			kc.DataDir = filepath.Join(rs.stage, witnessKafkaDir)
		}
		return infra.StartKafka(ctx, kc)
	}
	t0 := time.Now()
	b, err := container.StartBroker(ctx, container.Config{Image: opts.KafkaImage, RunID: rs.runID,
		Logger: opts.Logger.With("part", "broker container")})
	if err != nil {
		return nil, infra.Unavailable(containerErr("--kafka container:"+opts.KafkaImage, err))
	}
	rs.brokerCtr = b
	k, err := infra.StartKafka(ctx, infra.KafkaConfig{Brokers: b.Brokers})
	if err != nil {
		return nil, err
	}
	k.Mode, k.Implementation = infra.ModeContainer, b.Implementation
	fmt.Fprintf(opts.Progress, "broker in a container of %s (%s) on %s, up in %.1f s: %s\n",
		b.Image.Ref, shortID(b.Image.ID), b.Brokers[0], time.Since(t0).Seconds(), b.Implementation)
	return k, nil
}

// containerErr says what a container start needs: an engine, or, where
// no registry is reached, testcontainers' reaper turned off.
func containerErr(flag string, err error) error {
	if strings.Contains(err.Error(), "reaper") && os.Getenv("TESTCONTAINERS_RYUK_DISABLED") != "true" {
		return fmt.Errorf("%s: testcontainers could not start its reaper (Ryuk), whose image comes from a registry: %v; "+
			"set TESTCONTAINERS_RYUK_DISABLED=true (the run removes its containers itself)", flag, err)
	}
	if !errors.Is(err, container.ErrNoEngine) {
		return err
	}
	return fmt.Errorf("%s needs a container engine, and none answers: %v; start Docker (dockerd; "+
		"scripts/container-images.sh installs and starts it on Debian), point DOCKER_HOST at one, "+
		"or leave the flag out for the embedded default", flag, err)
}

// closeContainers removes the run's containers (the witnesses were taken
// before), or with --keep leaves them running and says how to reach and
// remove them.
func (rs *runScope) closeContainers() {
	for _, c := range []struct {
		what string
		ctr  *container.Container
	}{{"database", containerOf(rs.dbc)}, {"broker", brokerOf(rs.brokerCtr)}} {
		if c.ctr == nil {
			continue
		}
		if !rs.opts.Keep {
			if err := c.ctr.Terminate(); err != nil {
				fmt.Fprintf(rs.opts.Progress, "the %s container may be left behind: %s\n", c.what, oneLine(err.Error()))
			}
			continue
		}
		remove, err := c.ctr.Keep()
		if err != nil {
			fmt.Fprintf(rs.opts.Progress, "%s container: %s\n", c.what, oneLine(err.Error()))
		}
		fmt.Fprintf(rs.opts.Progress, "kept the %s container (image %s) on %s; remove it with: %s\n",
			c.what, c.ctr.Image.Ref, rs.keptAddr(c.what), remove)
	}
}

func (rs *runScope) keptAddr(what string) string {
	if what == "database" {
		return rs.dbc.Config().Addr + " (root; its password is MYSQL_ROOT_PASSWORD in `docker inspect`)"
	}
	return rs.brokerCtr.Brokers[0]
}

func containerOf(db *container.DB) *container.Container {
	if db == nil {
		return nil
	}
	return db.Container
}

func brokerOf(b *container.Broker) *container.Container {
	if b == nil {
		return nil
	}
	return b.Container
}

// containerEnv is what the evidence records of a container's image.
func containerEnv(img container.Image) *evidence.ContainerEnv {
	digests := append([]string{}, img.RepoDigests...)
	return &evidence.ContainerEnv{Image: img.Ref, ImageID: img.ID, RepoDigests: digests, Engine: img.Engine}
}

func shortID(id string) string {
	const n = len("sha256:") + 12
	return id[:min(n, len(id))]
}
