package infra_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

func TestRedactDSN(t *testing.T) {
	for _, dsn := range []string{
		"root:s3cret@tcp(127.0.0.1:3306)/",
		"app:s3cret@tcp(db:3306)/orders?parseTime=true",
		"app:s3cret@not a dsn",
	} {
		got := infra.RedactDSN(dsn)
		if strings.Contains(got, "s3cret") {
			t.Errorf("RedactDSN(%q) = %q; password still there", dsn, got)
		}
	}
}

func TestScratchName(t *testing.T) {
	got := infra.ScratchName("Run-01", "normalChain")
	if got != "ofa_run_01_normalchain" {
		t.Errorf("ScratchName = %q", got)
	}
	if n := infra.ScratchName(strings.Repeat("x", 100)); len(n) > 64 {
		t.Errorf("ScratchName length %d > 64", len(n))
	}
}

func TestConnectUnreachable(t *testing.T) {
	cfg, err := infra.ResolveDSN("root:hunter2@tcp(127.0.0.1:1)/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = infra.Connect(context.Background(), cfg)
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Fatalf("Connect(unreachable) = %v; want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the password: %v", err)
	}
	if !strings.Contains(err.Error(), "mariadbd") {
		t.Errorf("error does not say how to start MariaDB: %v", err)
	}
}

func TestServerInfo(t *testing.T) {
	s := infratest.Server(t)
	if s.Info.Version == "" || s.Info.Isolation == "" {
		t.Fatalf("Info = %+v", s.Info)
	}
	if s.Info.Flavour != infra.FlavourOf(s.Info.Version) {
		t.Errorf("Flavour %q for version %q", s.Info.Flavour, s.Info.Version)
	}
}

func TestDropRefusesForeignDatabase(t *testing.T) {
	s := infratest.Server(t)
	ctx := context.Background()
	name := "ofa_foreign_" + infratest.RandomID()
	if _, err := s.DB().ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`") })
	if err := s.DropScratch(ctx, name); !errors.Is(err, infra.ErrNotOurs) {
		t.Fatalf("DropScratch(foreign) = %v; want ErrNotOurs", err)
	}
	if err := s.DropScratch(ctx, "mysql"); !errors.Is(err, infra.ErrBadName) {
		t.Fatalf("DropScratch(mysql) = %v; want ErrBadName", err)
	}
	var n int
	s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
	if n != 1 {
		t.Fatalf("foreign database was dropped")
	}
}

func TestScratchLifecycle(t *testing.T) {
	s := infratest.Server(t)
	ctx := context.Background()
	name := infra.ScratchName("t", infratest.RandomID(), "life")
	sc, err := s.CreateScratch(ctx, name, "run1")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := sc.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n == 0 {
		t.Fatalf("schema_migrations: n=%d err=%v", n, err)
	}
	if err := sc.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
	if n != 0 {
		t.Fatalf("scratch database %s still exists", name)
	}
}

func TestEmbeddedKafka(t *testing.T) {
	k := infratest.Kafka(t)
	if k.Mode != infra.ModeEmbedded && len(infra.ResolveBrokers("")) == 0 {
		t.Fatalf("mode %q", k.Mode)
	}
	topic := infratest.Topic(t, k)
	if err := k.CreateTopic(context.Background(), topic, 1); err == nil {
		t.Errorf("creating an existing topic succeeded")
	}
	if err := k.DeleteTopic(context.Background(), topic); err != nil {
		t.Errorf("DeleteTopic: %v", err)
	}
}

// TestEmbeddedKafkaAdvertised: a broker that listens on every interface
// tells its clients the advertised address (as in a container, where that
// is the port published on the host), and is reached there.
func TestEmbeddedKafkaAdvertised(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	k, err := infra.StartKafka(t.Context(), infra.KafkaConfig{Listen: "0.0.0.0:" + port, Advertise: "127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if want := []string{"127.0.0.1:" + port}; !slices.Equal(k.Brokers, want) {
		t.Errorf("brokers %v; want %v", k.Brokers, want)
	}
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Host != "127.0.0.1" || strconv.Itoa(int(md.Brokers[0].Port)) != port {
		t.Errorf("metadata brokers %+v; want 127.0.0.1:%s", md.Brokers, port)
	}
	if _, err := infra.StartKafka(t.Context(), infra.KafkaConfig{Listen: "0.0.0.0:0"}); err == nil {
		t.Error("a broker on every interface without an advertised address started")
	}
}

func TestExternalKafkaUnreachable(t *testing.T) {
	_, err := infra.StartKafka(context.Background(), infra.KafkaConfig{Brokers: []string{"127.0.0.1:1"}})
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Fatalf("StartKafka(unreachable) = %v; want ErrUnavailable", err)
	}
}

func TestConnectAccessDenied(t *testing.T) {
	infratest.Server(t) // needs the server up
	cfg, err := infra.ResolveDSN("nosuchuser:pw4711@tcp(127.0.0.1:3306)/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = infra.Connect(context.Background(), cfg)
	if !errors.Is(err, infra.ErrUnavailable) {
		t.Fatalf("Connect(bad login) = %v; want ErrUnavailable", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "refused the login") || strings.Contains(msg, "mariadbd") || strings.Contains(msg, "pw4711") {
		t.Errorf("bad-login message = %q; want 'refused the login', no start hint, no password", msg)
	}
}
