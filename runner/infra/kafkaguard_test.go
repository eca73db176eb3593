package infra_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// frame prefixes body with its big-endian length.
func frame(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// TestBrokerSurvivesBadClients: malformed or oversized frames close the
// connection that sent them and nothing else; the embedded broker then
// serves a real client. Without the guard, kfake panics on the first two
// cases (an api key it does not know: the whole test binary dies) and
// allocates 4 GiB on the third.
func TestBrokerSurvivesBadClients(t *testing.T) {
	k, err := infra.StartKafka(t.Context(), infra.KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	addr := k.Brokers[0]
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"20 malformed bytes", []byte("\x00\x00\x00\x10\x7f\xff\x00\x01\x00\x00\x00\x01\xff\xff\x13\x37\xde\xad\xbe\xef")},
		{"unknown api key", frame([]byte{0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff})},
		{"length ffffffff", []byte{0xff, 0xff, 0xff, 0xff, 0x00, 0x00}},
		{"length over the cap", binary.BigEndian.AppendUint32(nil, infra.MaxRequestBytes+1)},
		{"header too short", frame([]byte{0x00, 0x03})},
		{"version unknown", frame([]byte{0x00, 0x03, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff})},
		{"metadata body cut", frame([]byte{0x00, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0x00, 0x05, 0x01})},
		{"negative length", []byte{0x80, 0x00, 0x00, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			// The broker closes the connection: EOF, or a reset when it
			// closed with bytes of ours unread. A timeout means it waits.
			if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("the broker did not close the connection: %v", err)
			}
			produceAndConsume(t, k)
		})
	}
}

// produceAndConsume: a real client still produces and consumes a record.
func produceAndConsume(t *testing.T, k *infra.Kafka) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	topic := "guard-" + time.Now().Format("150405.000000000")
	if err := k.CreateTopic(ctx, topic, 1); err != nil {
		t.Fatalf("create topic after a bad client: %v", err)
	}
	cl, err := kgo.NewClient(k.ClientOpts(kgo.ConsumeTopics(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("produce after a bad client: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("consume after a bad client: %v", err)
	}
	if got := fs.Records(); len(got) != 1 || string(got[0].Value) != "ok" {
		t.Fatalf("consumed %d records; want the one produced", len(got))
	}
}

// BenchmarkBrokerGuard: synchronous produces of 200-byte records through
// the embedded broker with its frame guard, beside a kfake cluster started
// without it, in one run.
func BenchmarkBrokerGuard(b *testing.B) {
	b.Run("guarded", func(b *testing.B) {
		k, err := infra.StartKafka(b.Context(), infra.KafkaConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close()
		if err := k.CreateTopic(b.Context(), "guard-bench", 1); err != nil {
			b.Fatal(err)
		}
		benchProduce(b, k.Brokers)
	})
	b.Run("unguarded", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.SeedTopics(1, "guard-bench"))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchProduce(b, c.ListenAddrs())
	})
}

func benchProduce(b *testing.B, brokers []string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rec := make([]byte, 200)
	if err := cl.ProduceSync(b.Context(), &kgo.Record{Topic: "guard-bench", Value: rec}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := cl.ProduceSync(b.Context(), &kgo.Record{Topic: "guard-bench", Value: rec}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}
