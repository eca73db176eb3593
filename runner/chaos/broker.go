package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

// The broker's faults: windows in which it fails every request of a kind,
// and a restart on its data directory.

// brokerWhat says what the broker does during each window fault.
var brokerWhat = map[nemesis.Kind]string{
	nemesis.ProduceRefused: "answers INVALID_RECORD to every produce request on the topic, appending nothing",
	nemesis.ProduceTimeout: "leaves every produce request unanswered, appending nothing",
	nemesis.AckLost:        "appends every produce request on the topic and answers REQUEST_TIMED_OUT",
	nemesis.FetchError:     "answers NOT_LEADER_OR_FOLLOWER to every fetch of the topic",
	nemesis.Rebalance:      "answers REBALANCE_IN_PROGRESS to every heartbeat of the group",
}

func (r *run) brokerWindow(f nemesis.Fault) (string, heal, error) {
	h, err := r.t.Broker.Inject(f.Kind)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("the broker %s for %v (kfake, at the protocol)", brokerWhat[f.Kind], f.For.Round(time.Millisecond)),
		func(context.Context) (string, error) {
			return fmt.Sprintf("the broker answers normally again; it failed %d request(s) meanwhile (its own count)", h()), nil
		}, nil
}

// restartBroker closes the broker and starts it on its data directory and
// port, and checks that the topic's records survived.
func (r *run) restartBroker(ctx context.Context) (string, error) {
	b := r.t.Broker
	before, err := b.Records(ctx)
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	if err := b.Restart(ctx); err != nil {
		return "", err
	}
	took := time.Since(t0)
	after, err := b.Records(ctx)
	if err != nil {
		return "", err
	}
	if after < before {
		r.opts.Failf("the broker lost records in a restart: %d before, %d after", before, after)
	}
	return fmt.Sprintf("the broker was closed and started again on its data directory and port %s in %v; "+
		"the topic held %d record(s) before and %d after", b.Addr(), took.Round(time.Millisecond), before, after), nil
}

// EmbeddedBroker is the embedded broker (kfake) as a Broker: its window
// faults are installed at the protocol, on Topic and Group.
type EmbeddedBroker struct {
	Kafka *infra.Kafka
	// Topic is the run's topic; Group is the consumers' group.
	Topic, Group string
}

// brokerFaults maps the window kinds to infra's.
var brokerFaults = map[nemesis.Kind]infra.BrokerFault{
	nemesis.ProduceRefused: infra.FaultProduceRefused,
	nemesis.ProduceTimeout: infra.FaultProduceTimeout,
	nemesis.AckLost:        infra.FaultAckLost,
	nemesis.FetchError:     infra.FaultFetchError,
	nemesis.Rebalance:      infra.FaultRebalance,
}

// Addr is the broker's one address.
func (b EmbeddedBroker) Addr() string { return b.Kafka.Brokers[0] }

// Inject installs the window fault of kind k.
func (b EmbeddedBroker) Inject(k nemesis.Kind) (func() int64, error) {
	w, err := b.Kafka.Inject(brokerFaults[k], b.Topic, b.Group)
	if err != nil {
		return nil, err
	}
	return w.Heal, nil
}

// Restart closes the broker and starts it again on its data directory and
// port.
func (b EmbeddedBroker) Restart(ctx context.Context) error { return b.Kafka.Restart(ctx) }

// Records is the sum of the topic's end offsets.
func (b EmbeddedBroker) Records(ctx context.Context) (int64, error) {
	return b.Kafka.EndOffset(ctx, b.Topic)
}
