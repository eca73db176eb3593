package infratest

import (
	"bytes"
	"database/sql"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// Chain is one test's database, broker, topic, producer and in-memory event
// log: what the relay's and the consumer's tests run against.
type Chain struct {
	DB       *sql.DB
	Kafka    *infra.Kafka
	Topic    string
	Producer *kgo.Client
	Log      *evidence.Log
	Buf      *bytes.Buffer
}

// NewChain builds a Chain whose log names scenario, and at cleanup checks
// that every event line the test emitted validates against the event
// schema.
func NewChain(t *testing.T, scenario string) *Chain {
	t.Helper()
	sc := Scratch(t)
	k := Kafka(t)
	topic := Topic(t, k)
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(cl.Close)
	c := &Chain{DB: sc.DB, Kafka: k, Topic: topic, Producer: cl, Buf: &bytes.Buffer{}}
	c.Log = evidence.NewLog(c.Buf, "test-run", scenario, nil)
	t.Cleanup(func() {
		n := 0
		err := evidence.ScanLines(bytes.NewReader(c.Buf.Bytes()), func(l evidence.Line) error {
			n++
			if err := schemas.ValidateEventJSON(l.Raw); err != nil {
				t.Errorf("event line %d does not validate: %v\n%s", l.No, err, l.Raw)
			}
			return nil
		})
		if err != nil {
			t.Errorf("scan event log: %v", err)
		}
		t.Logf("%d event lines validated", n)
	})
	return c
}
