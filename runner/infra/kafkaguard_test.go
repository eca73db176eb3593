package infra

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// header is a request header v1 (key, version, correlation id, client id).
func header(key, version int16, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1) // correlation id
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	return append(b, clientID...)
}

// framed prefixes body with its length.
func framed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// apiVersionsV0 is a well-formed ApiVersions v0 request frame.
func apiVersionsV0() []byte { return framed(header(18, 0, "t")) }

// malformedFrames are the classes of bad input the guard must refuse, each
// of which used to kill the process or pin a connection (the "before"
// column).
var malformedFrames = []struct {
	name   string
	before string
	bytes  []byte
}{
	{"unknown api key", "panic: nil kmsg.Request (client_conn.go kreq.SetVersion)",
		framed(header(0x7fff, 0, "t"))},
	{"negative api key, 20 bytes", "panic: nil kmsg.Request",
		framed(append(header(-1, 0, ""), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))},
	{"too short for its header", "parsed as key 18 with zero fields",
		framed([]byte{0x00, 0x12, 0x00, 0x03})},
	{"header without its client id", "parsed with a zero header",
		framed(header(18, 0, "")[:8])},
	{"client id longer than the frame", "parsed with a short header",
		framed(append(header(18, 0, "t")[:9:9], 50, 'x'))},
	{"negative api version", "handled as a request of version -1",
		framed(header(18, -1, "t"))},
	{"garbage produce body", "unable to parse, closed",
		framed(append(header(0, 9, "t"), bytes.Repeat([]byte{0xfe}, 40)...))},
	{"garbage flexible header tags", "unable to parse, closed",
		framed(append(header(18, 3, "t"), 0xff, 0xff, 0xff, 0xff, 0x0f))},
	{"length ffffffff", "allocates 4 GiB, then waits for the body",
		append([]byte{0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0}, 16)...)},
	{"length just over the cap", "allocates it, then waits for the body",
		append(binary.BigEndian.AppendUint32(nil, MaxRequestBytes+1), 0, 0x12)},
	{"length 0", "parsed as key 0 with zero fields",
		[]byte{0, 0, 0, 0}},
}

// TestKafkaGuardRefusesMalformed sends each malformed frame to the
// embedded broker, after a well-formed request on the same connection, and
// checks that the well-formed one is answered (the guard passes requests
// intact), that the broker closes that connection, and that a kgo client then produces and consumes on the same
// broker.
func TestKafkaGuardRefusesMalformed(t *testing.T) {
	k, err := StartKafka(t.Context(), KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for i, tc := range malformedFrames {
		t.Run(tc.name, func(t *testing.T) {
			before := k.refused.Load()
			conn, err := net.Dial("tcp", k.Brokers[0])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(apiVersionsV0()); err != nil {
				t.Fatal(err)
			}
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				t.Fatalf("a well-formed request was not answered: %v", err)
			}
			if _, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
				t.Fatalf("read the ApiVersions response: %v", err)
			}
			if _, err := conn.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			n, err := conn.Read(make([]byte, 64))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open 5 s after a malformed frame (before the guard: %s)", tc.before)
			}
			if err == nil {
				t.Fatalf("broker answered a malformed frame with %d bytes (before the guard: %s)", n, tc.before)
			}
			if got := k.refused.Load() - before; got != 1 {
				t.Errorf("guard refusals = %d; want 1", got)
			}
			produceConsume(t, k, fmt.Sprintf("guard-%d", i))
		})
	}
}

// TestKafkaGuardEveryStart checks that the guard stands in front of every
// way the embedded broker starts: with an advertised address (the broker
// command in a container), with a data directory, and after Restart (which
// starts a new kfake cluster from the saved options).
func TestKafkaGuardEveryStart(t *testing.T) {
	refuses := func(t *testing.T, k *Kafka, topic string) {
		t.Helper()
		before := k.refused.Load()
		conn, err := net.Dial("tcp", k.Brokers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(malformedFrames[0].bytes); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatal("broker answered a request for an unknown API key")
		}
		if got := k.refused.Load() - before; got != 1 {
			t.Fatalf("guard refusals = %d; want 1", got)
		}
		produceConsume(t, k, topic)
	}
	t.Run("advertised", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		k, err := StartKafka(t.Context(), KafkaConfig{Listen: addr, Advertise: addr})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		refuses(t, k, "advertised")
	})
	t.Run("data dir and restart", func(t *testing.T) {
		k, err := StartKafka(t.Context(), KafkaConfig{DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		refuses(t, k, "before-restart")
		if err := k.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
		refuses(t, k, "after-restart")
	})
}

// TestKafkaGuardHugeLengthAllocatesNothing checks that a length field of
// ffffffff costs no memory: kfake allocated the 4 GiB it claims before
// reading a byte of it.
func TestKafkaGuardHugeLengthAllocatesNothing(t *testing.T) {
	k, err := StartKafka(t.Context(), KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sys := ms.Sys
	conn, err := net.Dial("tcp", k.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 18}); err != nil {
		t.Fatal(err)
	}
	// Give the broker the time to read the length (and, unguarded, to
	// allocate).
	if err := conn.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Read(make([]byte, 1))
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.Sys) - int64(sys); grown > 256<<20 {
		t.Errorf("memory obtained from the OS grew by %d MiB after one ffffffff length field", grown>>20)
	}
	produceConsume(t, k, "guard-huge")
}

// TestKafkaGuardAnnouncedLengthCostsWhatArrives checks that a frame that
// announces the cap and sends little costs little: the guard's buffer
// grows with the bytes received.
func TestKafkaGuardAnnouncedLengthCostsWhatArrives(t *testing.T) {
	client, server := net.Pipe()
	g := &guardedConn{Conn: server, refused: new(atomic.Int64)}
	go func() {
		_, _ = client.Write(binary.BigEndian.AppendUint32(nil, MaxRequestBytes))
		_, _ = client.Write(header(18, 0, "t"))
		client.Close()
	}()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc
	if _, err := g.Read(make([]byte, 4)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read of a truncated frame = %v; want io.ErrUnexpectedEOF", err)
	}
	runtime.ReadMemStats(&ms)
	if got := ms.TotalAlloc - alloc; got > 2<<20 {
		t.Errorf("a frame announcing %d bytes and sending 11 allocated %d bytes", MaxRequestBytes, got)
	}
}

// TestCheckRequestAcceptsOurClients checks that the guard passes every
// request kmsg can build, at every version, as kgo encodes it: the guard
// must never refuse what a real client sends.
func TestCheckRequestAcceptsOurClients(t *testing.T) {
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			r := kmsg.RequestForKey(key)
			r.SetVersion(v)
			body := header(key, v, "orderflow-audit")
			if r.IsFlexible() {
				body = append(body, 0) // no header tags
			}
			body = r.AppendTo(body)
			if _, err := checkRequest(body); err != nil {
				t.Errorf("checkRequest(key %d, version %d) = %v; want nil", key, v, err)
			}
		}
	}
}

// produceConsume creates topic, produces three records and consumes them
// back within a bounded time.
func produceConsume(t *testing.T, k *Kafka, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := k.CreateTopic(ctx, topic, 1); err != nil {
		t.Fatalf("after a refused connection: %v", err)
	}
	cl, err := kgo.NewClient(k.ClientOpts(kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := []string{"a", "b", "c"}
	for _, v := range want {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatalf("produce after a refused connection: %v", err)
		}
	}
	var got []string
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume after a refused connection: got %q by the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("consumed %q; want %q", got, want)
	}
}

// BenchmarkKafkaGuard produces and consumes records through the guarded
// broker and an unguarded kfake, in the same run, to show what the guard
// costs on the normal path: "batch" produces 2000 records of 200 bytes at
// once (few large requests), "sync" produces 200 one at a time, as the relay
// publishes (many small requests).
func BenchmarkKafkaGuard(b *testing.B) {
	value := bytes.Repeat([]byte{'x'}, 200)
	run := func(b *testing.B, brokers []string, records, perProduce int) {
		ctx := b.Context()
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bench"),
			kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "bench"); err != nil {
			b.Fatal(err)
		}
		recs := make([]*kgo.Record, perProduce)
		b.ResetTimer()
		for range b.N {
			for sent := 0; sent < records; sent += perProduce {
				for j := range recs {
					recs[j] = &kgo.Record{Value: value}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			for got := 0; got < records; {
				fs := cl.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
		}
		b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
	}
	for _, shape := range []struct {
		name                string
		records, perProduce int
	}{{"batch", 2000, 2000}, {"sync", 200, 1}} {
		b.Run(shape.name+"/guarded", func(b *testing.B) {
			k, err := StartKafka(b.Context(), KafkaConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			run(b, k.Brokers, shape.records, shape.perProduce)
		})
		b.Run(shape.name+"/unguarded", func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			run(b, c.ListenAddrs(), shape.records, shape.perProduce)
		})
	}
}

// FuzzKafkaGuard sends request bodies, seeded with a well-formed request of
// every key and version kmsg knows, to the guarded embedded broker. What
// the guard passes reaches kfake's handlers, which run on the broker's one
// goroutine: a panic there kills the process, and the fuzzer reports it.
func FuzzKafkaGuard(f *testing.F) {
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			r := kmsg.RequestForKey(key)
			r.SetVersion(v)
			body := header(key, v, "f")
			if r.IsFlexible() {
				body = append(body, 0)
			}
			f.Add(r.AppendTo(body))
		}
	}
	k, err := StartKafka(context.Background(), KafkaConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(k.Close)
	if err := k.CreateTopic(context.Background(), "fuzz", 1); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		conn, err := net.Dial("tcp", k.Brokers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(framed(body)); err != nil {
			return // the broker closed first
		}
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = conn.Read(make([]byte, 1))
	})
}

// BenchmarkCheckRequest is the guard's parse of one produce request
// carrying recordBytes of record batch, what it adds to each request.
func BenchmarkCheckRequest(b *testing.B) {
	for _, recordBytes := range []int{300, 400 << 10} {
		b.Run(fmt.Sprint(recordBytes), func(b *testing.B) {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = -1, 5000
			t := kmsg.NewProduceRequestTopic()
			t.Topic = "orders"
			p := kmsg.NewProduceRequestTopicPartition()
			p.Records = bytes.Repeat([]byte{1}, recordBytes)
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			body := req.AppendTo(append(header(0, 9, "orderflow-audit"), 0))
			b.SetBytes(int64(len(body)))
			for range b.N {
				if _, err := checkRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
