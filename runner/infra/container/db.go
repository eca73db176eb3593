package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"

	"github.com/go-sql-driver/mysql"
	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
	"github.com/testcontainers/testcontainers-go/wait"
)

// dbPort is the server's port inside the container.
const dbPort = "3306/tcp"

// ServerArgs are the server options a database container runs with: the
// binary log the witness reads (runner/witness.go), in row format with
// full row images and metadata, under a fixed name, in files of at most
// about 64 MiB (the bundle gate reads none over 128 MiB; as
// internal/mariadbd's MaxBinlogSizeArg). MySQL 8.4 and MariaDB
// 10.5 and later take them all.
var ServerArgs = []string{
	"--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL",
	"--binlog-row-metadata=FULL", "--server-id=1", "--max-binlog-size=64M",
}

// readyLog is the line a MySQL-family server logs once it accepts TCP
// connections on 3306. The official mysql and mariadb images first run a
// temporary server without networking (it logs "port: 0"), and Debian's
// build ends the line with "Debian 12", not "MySQL Community Server" (the
// mysql module's wait) nor "mariadb.org binary distribution"; the port is
// what they share.
const readyLog = `port: 3306\s`

// DB is a MySQL-family server in a container, reached as root with a
// password made for the run.
type DB struct {
	*Container
	Port     int
	Password string
}

// Config is the server's DSN: root over TCP at the published port.
func (d *DB) Config() *mysql.Config {
	c := mysql.NewConfig()
	c.User = "root"
	c.Passwd = d.Password
	c.Net = "tcp"
	c.Addr = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	return c
}

// StartDB starts cfg.Image (default DefaultDBImage) through
// testcontainers-go's mysql module, which sets the official images'
// variables (MYSQL_ROOT_PASSWORD; the mariadb images and local/mariadb take
// them too), with ServerArgs, and waits until the server logs that it
// accepts connections. It removes the containers that killed runs left
// first (sweep). Errors wrap ErrNoEngine when no engine answers.
func StartDB(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.Image == "" {
		cfg.Image = DefaultDBImage
	}
	e, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.sweep(ctx, logger(cfg))
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	password := hex.EncodeToString(pw)
	host := PublishedHost()
	// The module exposes the X protocol's port too: published on loopback
	// like the other, never used.
	c, err := start(ctx, e, cfg, host, map[string]string{dbPort: "0", "33060/tcp": "0"}, runMySQLModule,
		tcmysql.WithUsername("root"), tcmysql.WithPassword(password),
		testcontainers.WithEnv(map[string]string{"MARIADB_ROOT_PASSWORD": password}),
		testcontainers.WithCmd(ServerArgs...),
		testcontainers.WithWaitStrategyAndDeadline(StartTimeout, wait.ForLog(readyLog).AsRegexp()),
	)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("start the database container %s: %w", cfg.Image, err)
	}
	port, err := c.Port(ctx, dbPort)
	if err != nil {
		return nil, fmt.Errorf("start the database container %s: %w", cfg.Image, joinTerminate(err, c))
	}
	return &DB{Container: c, Port: port, Password: password}, nil
}

// runMySQLModule is tcmysql.Run as a runFunc.
func runMySQLModule(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, error) {
	ctr, err := tcmysql.Run(ctx, img, opts...)
	if ctr == nil {
		return nil, err
	}
	dc, _ := ctr.Container.(*testcontainers.DockerContainer)
	if dc == nil && err == nil {
		err = fmt.Errorf("the mysql module returned a %T, not a Docker container", ctr.Container)
	}
	return dc, err
}
