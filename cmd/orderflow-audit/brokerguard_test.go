package main

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokerSurvivesMalformedRequests sends the broker command malformed
// frames (20 bytes for API key -1, which made kfake panic and the command
// die; a length field of ffffffff, which made it allocate 4 GiB) and checks
// that each closes its connection and that a client then produces and
// consumes.
func TestBrokerSurvivesMalformedRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"broker", "--listen", "127.0.0.1:0", "--topic", "guarded"}, &out, &errb)
	}()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("broker exited early with %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line after 10s; stdout %q stderr %q", out.String(), errb.String())
		}
	}

	for _, bad := range [][]byte{
		{0, 0, 0, 16, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0xff, 0xff, 0xff, 0xff, 0, 18, 0, 3},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial the broker: %v", err)
		}
		if _, err := conn.Write(bad); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		var ne net.Error
		if !errors.Is(err, io.EOF) && (!errors.As(err, &ne) || ne.Timeout()) {
			t.Errorf("after % x: read = %v; want the connection closed", bad, err)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("guarded"),
		kgo.ConsumeTopics("guarded"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce after malformed requests: %v", err)
	}
	var got string
	for got == "" && pctx.Err() == nil {
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = string(r.Value) })
	}
	if got != "after" {
		t.Fatalf("consumed %q after malformed requests; want \"after\"", got)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("broker exit %d after cancel; want 0 (stderr %q)", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not stop within 10s of cancel")
	}
}
