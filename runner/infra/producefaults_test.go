package infra_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// The broker finds a record's event_id header in a produce request
// whatever the batch's compression, and fails only the requests that
// carry the event id it was told about, until Clear.
func TestProduceFaultsMatchEventID(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded broker")
	}
	k, err := infra.StartKafka(t.Context(), infra.KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.CreateTopic(t.Context(), "t", 1); err != nil {
		t.Fatal(err)
	}
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(),
		kgo.Lz4Compression(), kgo.ZstdCompression()} {
		pf, err := k.ProduceFaults()
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(k.ClientOpts(kgo.ProducerLinger(0), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("t"))...)
		if err != nil {
			t.Fatal(err)
		}
		produce := func(eventID string) error {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			r := &kgo.Record{Value: []byte(`{"orderId":1}`), Headers: []kgo.RecordHeader{{Key: "event_id", Value: []byte(eventID)}}}
			return cl.ProduceSync(ctx, r).FirstErr()
		}
		pf.Refuse("e-1")
		if err := produce("e-2"); err != nil {
			t.Errorf("%v: a record of another event id: %v", codec, err)
		}
		if err := produce("e-1"); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%v: the refused event id: %v; want INVALID_RECORD", codec, err)
		}
		if n := pf.Hits("e-1"); n != 1 {
			t.Errorf("%v: Hits(e-1) = %d; want 1", codec, n)
		}
		pf.Clear()
		if err := produce("e-1"); err != nil {
			t.Errorf("%v: after Clear: %v", codec, err)
		}
		cl.Close()
	}
	if _, err := (&infra.Kafka{Mode: infra.ModeExternal}).ProduceFaults(); !errors.Is(err, infra.ErrNoBrokerControl) {
		t.Errorf("ProduceFaults on an external cluster = %v; want ErrNoBrokerControl", err)
	}
}
