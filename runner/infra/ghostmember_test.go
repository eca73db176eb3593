package infra

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ghostTries is how many members TestDeadJoinerExpires kills, each in a
// group of its own (the tries run at once). Each death used to leave a
// ghost with a probability of about one half (a random select in kfake),
// so ten tries all pass on the unguarded broker about once in a thousand
// runs.
var ghostTries = flag.Int("ghost.tries", 10, "members TestDeadJoinerExpires kills inside their JoinGroup")

// ghostSession is the session timeout of both members: kfake's smallest
// (group.min.session.timeout.ms, 6 s).
const ghostSession = 6 * time.Second

// TestDeadJoinerExpires kills a group member inside its JoinGroup (a raw
// client sends JoinGroup and closes its connection before the answer) and
// checks that a live member of the group owns every partition again within
// twice the session timeout of the dead one: the session timeout for the
// broker to expire it, the rest for the live member's heartbeat to see the
// rebalance and rejoin, on a loaded machine. kfake kept such a member for
// good whenever its JoinGroup answer was dropped (kafkaguard.go says why);
// the group stayed Stable and the dead member's partitions were never
// consumed. Half the tries join with JoinGroup v2 (the member id comes in
// the lost answer), half with v5 (the client learns its member id first,
// from a MEMBER_ID_REQUIRED answer, and dies in the join that names it).
func TestDeadJoinerExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills group members and waits out their session timeout")
	}
	k, err := StartKafka(t.Context(), KafkaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	// The tries run at once, not as parallel subtests: -parallel (the
	// number of CPUs by default) would run them two at a time here.
	var (
		wg    sync.WaitGroup
		stuck atomic.Int64
	)
	for i := range *ghostTries {
		version := []int16{2, 5}[i%2]
		wg.Go(func() {
			name := fmt.Sprintf("ghost-%d", i)
			ok, err := deadJoinerExpires(t, k, name, version)
			switch {
			case err != nil:
				t.Errorf("try %s (JoinGroup v%d): %v", name, version, err)
			case !ok:
				stuck.Add(1)
			}
		})
	}
	wg.Wait()
	msg := fmt.Sprintf("%d of %d tries left a member that died in its JoinGroup holding partitions", stuck.Load(), *ghostTries)
	if stuck.Load() > 0 {
		t.Error(msg)
	} else {
		t.Log(msg)
	}
}

// deadJoinerExpires is one try of TestDeadJoinerExpires on its own topic
// and group (both named name). It reports whether the live member owned
// every partition again in time; an error means the try could not be
// made. It runs on a goroutine of its own, so it reports through its
// results and t.Logf, never t.Fatal.
func deadJoinerExpires(t *testing.T, k *Kafka, name string, version int16) (bool, error) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := k.CreateTopic(ctx, name, 2); err != nil {
		return false, err
	}
	live := newOwnedPartitions()
	cl, err := kgo.NewClient(k.ClientOpts(
		kgo.ConsumeTopics(name), kgo.ConsumerGroup(name), kgo.ClientID("live"),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(ghostSession), kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(live.assigned), kgo.OnPartitionsRevoked(live.revoked),
		kgo.OnPartitionsLost(live.revoked),
	)...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	if !live.waitAll(ctx, 20*time.Second) {
		return false, errors.New("the live member never owned both partitions")
	}
	if err := ghostJoin(k.Brokers[0], name, name, version); err != nil {
		return false, err
	}
	died := time.Now()
	// The dead member did join: the rebalance it caused gave it a
	// partition (whether its answer was delivered or not).
	if !live.waitShared(ctx, 20*time.Second) {
		return false, errors.New("the live member never shared the partitions: the killed member did not join")
	}
	bound := 2 * ghostSession
	if live.waitAll(ctx, bound-time.Since(died)) {
		return true, nil
	}
	t.Logf("%s (JoinGroup v%d): the live member owns %v of [0 1] %v after the other member died in its JoinGroup (bound %v); group: %s",
		name, version, live.owned(), time.Since(died).Round(100*time.Millisecond), bound, describeGroup(ctx, cl, name))
	return false, nil
}

// ghostJoin joins group as a consumer of topic with a raw connection and
// JoinGroup of the given version, and closes the connection before the
// join is answered. From v4 a new member first gets MEMBER_ID_REQUIRED
// with its member id, and joins again naming it: that second join is the
// one it dies in.
func ghostJoin(addr, group, topic string, version int16) error {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group = group
	req.SessionTimeoutMillis = int32(ghostSession / time.Millisecond)
	req.RebalanceTimeoutMillis = 10000
	req.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	proto.Metadata = meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, proto)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("ghost"))
	if version >= 4 {
		if _, err := conn.Write(f.AppendRequest(nil, req, 1)); err != nil {
			return err
		}
		resp, err := readJoinResponse(conn, version)
		if err != nil {
			return err
		}
		if resp.ErrorCode != kerr.MemberIDRequired.Code {
			return fmt.Errorf("first JoinGroup v%d answered %v; want MEMBER_ID_REQUIRED", version, kerr.ErrorForCode(resp.ErrorCode))
		}
		req.MemberID = resp.MemberID
	}
	if _, err := conn.Write(f.AppendRequest(nil, req, 2)); err != nil {
		return err
	}
	return conn.Close() // dies with its JoinGroup unanswered
}

// readJoinResponse reads a JoinGroup response of a non-flexible version
// (below 6).
func readJoinResponse(conn net.Conn, version int16) (*kmsg.JoinGroupResponse, error) {
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, fmt.Errorf("read JoinGroup response: %w", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil || len(body) < 4 {
		return nil, fmt.Errorf("read JoinGroup response: %d bytes: %v", len(body), err)
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	if err := resp.ReadFrom(body[4:]); err != nil { // after the correlation id
		return nil, fmt.Errorf("parse JoinGroup response: %w", err)
	}
	return resp, nil
}

// describeGroup says who is in group and what each owns, for a failure
// message.
func describeGroup(ctx context.Context, cl *kgo.Client, group string) string {
	gs, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		return err.Error()
	}
	g := gs[group]
	s := g.State
	for _, m := range g.Members {
		var parts []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				parts = append(parts, tp.Partitions...)
			}
		}
		s += fmt.Sprintf(", %s (%s, %s) owns %v", m.MemberID, m.ClientID, m.ClientHost, parts)
	}
	return s
}

// ownedPartitions tracks what a kgo group member owns, from its rebalance
// callbacks.
type ownedPartitions struct {
	mu     sync.Mutex
	parts  map[int32]bool
	shared bool // an assignment gave it fewer than every partition
	change chan struct{}
}

func newOwnedPartitions() *ownedPartitions {
	return &ownedPartitions{parts: map[int32]bool{}, change: make(chan struct{}, 1)}
}

func (o *ownedPartitions) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	o.update(m, true)
}

func (o *ownedPartitions) revoked(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	o.update(m, false)
}

func (o *ownedPartitions) update(m map[string][]int32, own bool) {
	o.mu.Lock()
	for _, ps := range m {
		for _, p := range ps {
			if own {
				o.parts[p] = true
			} else {
				delete(o.parts, p)
			}
		}
	}
	if own && len(o.parts) < 2 {
		o.shared = true
	}
	o.mu.Unlock()
	select {
	case o.change <- struct{}{}:
	default:
	}
}

func (o *ownedPartitions) owned() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int32
	for p := range o.parts {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// waitAll waits up to d for the member to own both partitions.
func (o *ownedPartitions) waitAll(ctx context.Context, d time.Duration) bool {
	return o.wait(ctx, d, func() bool { return len(o.parts) == 2 })
}

// waitShared waits up to d for an assignment of fewer than both.
func (o *ownedPartitions) waitShared(ctx context.Context, d time.Duration) bool {
	return o.wait(ctx, d, func() bool { return o.shared })
}

func (o *ownedPartitions) wait(ctx context.Context, d time.Duration, done func() bool) bool {
	timer := time.NewTimer(max(d, 0))
	defer timer.Stop()
	for {
		o.mu.Lock()
		ok := done()
		o.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-o.change:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// TestGuardHoldsCloseForJoinAnswer checks the guard's part in
// TestDeadJoinerExpires deterministically, on a pipe: a client that sends
// an acks=0 produce (never answered) and a JoinGroup and closes is seen to
// close only once the JoinGroup is answered, or once kfake closes the
// connection; a client with no JoinGroup outstanding closes at once.
func TestGuardHoldsCloseForJoinAnswer(t *testing.T) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks = 7, 0
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 5, "g", "consumer"
	for _, tc := range []struct {
		name    string
		frames  [][]byte
		release func(g *guardedConn) // what kfake does while the close is held; nil: not held
	}{
		{"join answered", [][]byte{f.AppendRequest(nil, produce, 1), f.AppendRequest(nil, join, 2)},
			func(g *guardedConn) { _, _ = g.Write([]byte{0, 0, 0, 4, 0, 0, 0, 2}) }},
		{"kfake closes", [][]byte{f.AppendRequest(nil, join, 1)},
			func(g *guardedConn) { _ = g.Close() }},
		{"no join", [][]byte{f.AppendRequest(nil, produce, 1)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			g := &guardedConn{Conn: server, refused: new(atomic.Int64)}
			go func() {
				for _, fr := range tc.frames {
					_, _ = client.Write(fr)
				}
				client.Close()
			}()
			for _, fr := range tc.frames {
				if _, err := io.ReadFull(g, make([]byte, len(fr))); err != nil {
					t.Fatalf("read a frame: %v", err)
				}
			}
			closed := make(chan error, 1)
			go func() {
				_, err := g.Read(make([]byte, 1))
				closed <- err
			}()
			if tc.release != nil {
				select {
				case err := <-closed:
					t.Fatalf("the close was reported (%v) before the JoinGroup was answered", err)
				case <-time.After(200 * time.Millisecond):
				}
				tc.release(g)
			}
			select {
			case err := <-closed:
				if !errors.Is(err, io.EOF) {
					t.Errorf("Read after the client's close = %v; want EOF", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the close was not reported within 5 s")
			}
		})
	}
}
