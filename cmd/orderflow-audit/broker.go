package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

func cmdBroker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("broker", "broker [flags]",
		`Runs the embedded Kafka wire-protocol broker (franz-go kfake, in-process;
not Apache Kafka) until SIGINT or SIGTERM, so that Kafka tools and actor
processes can connect to it.

It listens on loopback only, unless --advertise
is given: a broker in a container (the local/broker image of
scripts/container-images.sh) listens on the container's every interface
(--listen 0.0.0.0:9092) and tells its clients the address of the port
published on the host (--advertise 127.0.0.1:PORT). Topics are not
created automatically: create them with --topic or with your own tools.
Without --data-dir the broker keeps everything in memory. With --data-dir it
persists its log there and keeps every record and committed offset however
old (no retention), so that it serves a copy of a run's witness
(evidence/u80/witness/kafka) to any Kafka client; kfake writes into the
directory it serves, so give it a copy.`,
		`orderflow-audit broker --listen 127.0.0.1:9092 --topic orders
cp -r evidence/u80/witness/kafka /tmp/kafka && orderflow-audit broker --data-dir /tmp/kafka`)
	listen := fs.String("listen", "127.0.0.1:9092", "`address` to listen on (127.0.0.1 or localhost, any with --advertise; port 0 picks a free port)")
	advertise := fs.String("advertise", "", "`address` host:port that clients are told to connect to (default: the listen address)")
	dataDir := fs.String("data-dir", "", "`directory` in which the broker persists its log (default: memory only)")
	var topics stringList
	fs.Var(&topics, "topic", "create topic `NAME` with one partition at start (repeatable)")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "broker", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := checkListen(*listen, *advertise); err != nil {
		return fail(stderr, "broker", err)
	}
	k, err := infra.StartKafka(ctx, infra.KafkaConfig{Listen: *listen, Advertise: *advertise, DataDir: *dataDir})
	if err != nil {
		return fail(stderr, "broker", fmt.Errorf("listen on %s: %w", *listen, err))
	}
	defer k.Close()
	for _, t := range topics {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := k.CreateTopic(tctx, t, 1)
		cancel()
		if err != nil {
			return fail(stderr, "broker", err)
		}
	}
	fmt.Fprintf(stdout, "broker listening on %s (kfake %s, embedded; not Apache Kafka)\n",
		strings.Join(k.Brokers, ","), infra.ModuleVersion("github.com/twmb/franz-go/pkg/kfake"))
	<-ctx.Done()
	k.Close()
	fmt.Fprintln(stderr, "broker stopped")
	return exitOK
}

// checkListen accepts host:port with host 127.0.0.1 or localhost (the
// embedded broker binds loopback only) and a numeric port; with an
// advertised address (host:port, port not 0), any host: an address such as
// 0.0.0.0 would be useless to clients without one.
func checkListen(addr, advertise string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--listen %q: %v", addr, err)
	}
	if advertise != "" {
		if _, aport, err := net.SplitHostPort(advertise); err != nil || aport == "" || aport == "0" {
			return usageErrorf("--advertise %q: want host:port with a port other than 0", advertise)
		}
	} else if host != "127.0.0.1" && host != "localhost" {
		return usageErrorf("--listen %q: the embedded broker listens on 127.0.0.1 only (any interface with --advertise)", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return usageErrorf("--listen %q: bad port", addr)
	}
	return nil
}
