package infra

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group member that dies inside its JoinGroup must still expire. kfake
// starts a member's session timer only once its JoinGroup answer is on its
// way (groups.go, group.reply calls updateHeartbeat only when
// clientReq.reply returns true), and clientReq.reply (client_conn.go)
// gives up when the connection is done: a select between the connection's
// response channel (buffered, so ready) and its done channel (closed when
// kfake's reader sees the client's close), which Go picks at random. Half
// the time a new member that died while its JoinGroup was parked gets no
// timer at all; once the leader's SyncGroup makes the group Stable
// (completeLeaderSync stops the pending-sync timer, the only other one
// that would remove it), it keeps its partitions for good, and no one
// consumes them (TestDeadJoinerExpires).
//
// The guard therefore reports a client's close to kfake only once kfake
// has answered the last JoinGroup it handed on: the answer then always
// goes to the response channel, the member gets its session timer, and it
// expires after its session timeout as on Apache Kafka. The answer is
// written to a dead socket, which is harmless.

// joinHoldMax bounds how long a closed connection waits for its JoinGroup
// answer, in case kfake never gives one. kfake answers a parked join at
// the latest after the group's longest rebalance timeout: 6 s for our
// consumers, 60 s by default for kgo, 5 minutes by default for Java
// clients (max.poll.interval.ms).
const joinHoldMax = 5 * time.Minute

// handed notes a request the guard passes to kfake: whether kfake will
// answer it (every request but an acks=0 produce), and whether it is a
// JoinGroup, whose answer the connection's close must wait for.
func (c *guardedConn) handed(req kmsg.Request) {
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	if req.Key() == kmsg.JoinGroup.Int16() {
		c.joinAt = c.asked
		if c.wake == nil {
			c.wake = make(chan struct{}, 1)
		}
	}
}

// awaitJoinAnswer returns once kfake has written the answer to the last
// JoinGroup this connection handed it (at once if it has, or if there was
// none), once kfake closed the connection, or after joinHoldMax. kfake
// answers a connection's requests in order, so that answer is the
// joinAt-th Write.
func (c *guardedConn) awaitJoinAnswer() {
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		done := c.closed || c.answered >= c.joinAt
		wake := c.wake
		c.mu.Unlock()
		if done {
			return
		}
		if timeout == nil {
			t := time.NewTimer(joinHoldMax)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-wake:
		case <-timeout:
			return
		}
	}
}

// Write is kfake writing one answer (kfake's clientConn.write writes each
// response with one Write); it counts the answer, written or not.
func (c *guardedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.answered++
	c.signal()
	c.mu.Unlock()
	return n, err
}

// Close is kfake closing the connection: a close waiting for a JoinGroup
// answer waits no more.
func (c *guardedConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.signal()
	c.mu.Unlock()
	return c.Conn.Close()
}

// signal wakes awaitJoinAnswer; c.mu is held.
func (c *guardedConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
