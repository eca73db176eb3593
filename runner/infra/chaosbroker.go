package infra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The chaos scenario's broker faults: failures of every request of a kind
// on a topic or a group for a while (a window), installed at the protocol
// through kfake's Fault and ControlKey, and a restart of the embedded
// broker on its data directory and port.

// BrokerFault is a kind of window fault.
type BrokerFault int

// The window faults.
const (
	// FaultProduceRefused: produce requests on the topic are answered
	// INVALID_RECORD and nothing is appended.
	FaultProduceRefused BrokerFault = iota + 1
	// FaultProduceTimeout: produce requests are read and never answered
	// nor appended (every produce request: the scenario's relays are the
	// only producers while it runs).
	FaultProduceTimeout
	// FaultAckLost: produce requests on the topic are appended and
	// answered REQUEST_TIMED_OUT.
	FaultAckLost
	// FaultFetchError: fetches of the topic's partitions are answered
	// NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata and
	// fetches again).
	FaultFetchError
	// FaultRebalance: heartbeats of the group are answered
	// REBALANCE_IN_PROGRESS: every member rejoins.
	FaultRebalance
)

// Window is an installed window fault; Heal removes it.
type Window struct {
	k      *Kafka
	handle *kfake.FaultHandle // nil for a swallow
	sw     *swallow
	once   sync.Once
	hits   int64
}

// swallow is the ControlKey state of a produce-timeout window.
type swallow struct {
	mu     sync.Mutex
	active bool
	hits   int64
}

// Inject installs fault f on topic (produce and fetch faults) or group
// (rebalance) until Heal. It needs the embedded broker.
func (k *Kafka) Inject(f BrokerFault, topic, group string) (*Window, error) {
	k.restartMu.RLock()
	defer k.restartMu.RUnlock()
	if k.cluster == nil {
		return nil, ErrNoBrokerControl
	}
	w := &Window{k: k}
	switch f {
	case FaultProduceRefused:
		w.handle = k.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.InvalidRecord, Count: -1})
	case FaultAckLost:
		w.handle = k.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.RequestTimedOut, Count: -1})
	case FaultFetchError:
		w.handle = k.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	case FaultRebalance:
		w.handle = k.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, Err: kerr.RebalanceInProgress, Count: -1})
	case FaultProduceTimeout:
		w.sw = &swallow{active: true}
		c := k.cluster
		c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			w.sw.mu.Lock()
			defer w.sw.mu.Unlock()
			if !w.sw.active {
				c.DropControl()
				return nil, nil, false
			}
			// Every produce request: newer ones name their topic by id
			// only, and while a scenario runs its relays are the only
			// producers on the broker.
			if _, ok := req.(*kmsg.ProduceRequest); ok {
				w.sw.hits++
				return nil, nil, true // handled, never answered
			}
			return nil, nil, false
		})
	default:
		return nil, fmt.Errorf("unknown broker fault %d", f)
	}
	return w, nil
}

// Heal removes the fault (once) and returns how many requests it failed
// or left unanswered: the broker's own count.
func (w *Window) Heal() int64 {
	w.once.Do(func() {
		if w.handle != nil {
			w.hits = int64(w.handle.Hits())
			w.handle.Remove()
		}
		if w.sw != nil {
			w.sw.mu.Lock()
			w.sw.active = false
			w.hits = w.sw.hits
			w.sw.mu.Unlock()
		}
	})
	return w.hits
}

// ErrNoRestart: only the embedded broker with a data directory can be
// restarted with its records.
var ErrNoRestart = errors.New("a broker restart needs the embedded broker with a data directory")

// Restart closes the embedded broker (it writes its state into its data
// directory as it closes) and starts it again on the same directory and
// port. Window faults installed before are gone with the old broker: heal
// them first. Clients reconnect by themselves.
func (k *Kafka) Restart(ctx context.Context) error {
	k.restartMu.Lock()
	defer k.restartMu.Unlock()
	if k.cluster == nil || k.errs == nil || len(k.Brokers) != 1 {
		return ErrNoRestart
	}
	_, portStr, err := net.SplitHostPort(k.Brokers[0])
	if err != nil {
		return fmt.Errorf("restart broker: %w", err)
	}
	port, _ := strconv.Atoi(portStr)
	k.cluster.Close()
	if err := k.errs.err(); err != nil {
		return fmt.Errorf("restart broker: closing it: %w", err)
	}
	opts := append(append([]kfake.Opt{}, k.opts...), kfake.Ports(port))
	var c *kfake.Cluster
	for attempt := 0; ; attempt++ { // the port may take a moment to be free again
		if c, err = kfake.NewCluster(opts...); err == nil || attempt == 20 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("%w: restart embedded broker on port %d: %v", ErrUnavailable, port, err)
	}
	k.cluster = c
	return nil
}

// GroupLag returns, for group on topic, the end offset of each partition
// minus the group's committed offset (a partition without a commit counts
// from 0), summed.
func (k *Kafka) GroupLag(ctx context.Context, topic, group string) (int64, error) {
	cl, err := kgo.NewClient(k.ClientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("lag of %s: %w", group, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("lag of %s: end offsets: %w", group, err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("lag of %s: committed offsets: %w", group, err)
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		at := int64(0)
		if ok {
			at = c.At
		}
		lag += o.Offset - at
	})
	return lag, nil
}
