package chaos_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/chaos"
)

// echo serves lines back until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and times the answer.
func roundTrip(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	t0 := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

func TestLinkDelayCutHeal(t *testing.T) {
	ps := chaos.NewProxies()
	defer ps.Close()
	l, err := ps.Add("relay-1>database", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	base, err := roundTrip(l.Addr)
	if err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if err := l.Delay(150 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	slow, err := roundTrip(l.Addr)
	if err != nil {
		t.Fatalf("with latency: %v", err)
	}
	if slow < 200*time.Millisecond { // 150 ms each way, minus jitter
		t.Fatalf("round trip with 150 ms latency each way took %v (without: %v)", slow, base)
	}
	if err := l.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.Cut()
	if _, err := roundTrip(l.Addr); err == nil {
		t.Fatal("a round trip went through a cut link")
	}
	if err := l.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	healed, err := roundTrip(l.Addr)
	if err != nil {
		t.Fatalf("after heal: %v", err)
	}
	if healed > 100*time.Millisecond {
		t.Fatalf("healed round trip took %v", healed)
	}
}

// packet is a MySQL protocol packet: payload length, sequence 0, payload.
func packet(payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0}, payload...)
}

// query is a COM_QUERY packet of text.
func query(text string) []byte { return packet(append([]byte{0x03}, text...)) }

// TestLinkLoseCommits: while commits are lost, a COMMIT on an open
// connection never reaches the server and the connection is closed, while
// other statements pass; after Heal a COMMIT passes again.
func TestLinkLoseCommits(t *testing.T) {
	ps := chaos.NewProxies()
	defer ps.Close()
	l, err := ps.Add("consumer-1>database", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", l.Addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	c := dial()
	send := func(conn net.Conn, p []byte) error {
		if _, err := conn.Write(p); err != nil {
			return err
		}
		got := make([]byte, len(p))
		_, err := io.ReadFull(conn, got)
		return err
	}
	if err := l.LoseCommits(); err != nil {
		t.Fatal(err)
	}
	if err := send(c, query("INSERT INTO inbox VALUES (1)")); err != nil {
		t.Fatalf("an INSERT while commits are lost: %v; want it through", err)
	}
	if n := l.CommitsLost(); n != 0 {
		t.Fatalf("CommitsLost %d before any COMMIT; want 0", n)
	}
	if err := send(c, query("COMMIT")); err == nil {
		t.Fatal("a COMMIT came back while commits are lost; want the connection closed")
	}
	if err := send(dial(), query("commit ;")); err == nil {
		t.Fatal("a COMMIT on a new connection came back while commits are lost; want the connection closed")
	}
	if err := l.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := send(dial(), query("COMMIT")); err != nil {
		t.Fatalf("a COMMIT after Heal: %v; want it through", err)
	}
	if n := l.CommitsLost(); n != 2 {
		t.Fatalf("CommitsLost %d after two lost COMMITs and one through; want 2", n)
	}
}
