package spec

import "time"

// Liveness of the consumer group: how long a partition may be without an
// owner. The reference consumer (runner/internal/consumer) joins its group
// with these timeouts, and the verifier holds every interval a partition
// spent between one member's release (its partition_revoked or
// partition_lost, or the supervisor's process_exit of a member that died),
// or the next member's group_join when it joined later, and that member's
// partition_assigned to the bound of the way the previous member went:
// checks/model's partition-unowned-too-long.
const (
	// GroupSessionTimeout is the session timeout of a member: one that
	// stops heartbeating (killed, partitioned away) is dropped from the
	// group that long after its last heartbeat.
	GroupSessionTimeout = 6 * time.Second
	// GroupRebalanceTimeout is how long the coordinator waits for the
	// members to rejoin a rebalance.
	GroupRebalanceTimeout = 6 * time.Second
	// GroupHeartbeatInterval is how often a member heartbeats; a member
	// learns of a rebalance with its next heartbeat.
	GroupHeartbeatInterval = 500 * time.Millisecond

	// UnownedAfterLeave bounds a partition's time without an owner after
	// its member released it (revoked: a rebalance it took part in, or a
	// clean close that left the group): the group hands it on in a
	// rebalance the leaving member started itself, which the other
	// members join at their next heartbeat and which a member settling a
	// polled batch holds up until the batch is committed. Twice the
	// heartbeat interval covers the rejoin and the second round of a
	// cooperative rebalance; the rest is slack for a loaded machine (a
	// batch being settled, a slow scheduler). A member that closes without
	// leaving holds its partitions for the session timeout, which is
	// above it.
	UnownedAfterLeave = 3 * time.Second
	// UnownedAfterDeath bounds it after its member died without leaving
	// (a process_exit other than "exit 0", or a partition_lost): the
	// coordinator drops the member a session timeout after its last
	// heartbeat, and the members left rejoin within the rebalance
	// timeout; 3 s of slack for a loaded machine.
	UnownedAfterDeath = GroupSessionTimeout + GroupRebalanceTimeout + 3*time.Second
)

// Bounds a relay promises per round, held by the verifier from the
// relay's claims (which log the relay's publish timeout and, for a relay
// polling in a loop, its poll) and the witnesses.
const (
	// PublishRoundSlack is how much later than its claim's logged
	// publish_timeout_ms after the claim a relay's publish of the claimed
	// intent may end (a publish, refused or acknowledged, or a
	// publish_unknown): the relay publishes its whole batch at once and
	// waits for every outcome within one timeout (runner/internal/relay,
	// PublishBatch), so the batch's size does not lengthen the round.
	// The slack covers what the round does between its claim's line and
	// the publish's (flushing the log, the fault points, the event of each
	// record) and a loaded machine's scheduler, and stays below one more
	// timeout of the scenario that holds it (publishBatchTimeout: a
	// timeout of 300 ms and a batch of 6), so that a timeout that grows
	// with the batch (a timeout per record summed, or one scaled by the
	// batch's length) breaks it (checks/model's publish-past-timeout).
	// Time the nemesis held the relay or its links (a pause, a cut, a
	// latency) is added to it.
	PublishRoundSlack = 600 * time.Millisecond

	// RelayPoll is the longest wait between a polling relay's rounds that
	// found nothing to claim: the reference relay's default
	// (runner/internal/relay, DefaultPoll), which the actor process and
	// the scenarios that run a relay in a loop use unless they poll
	// faster (chaos: 50 ms).
	RelayPoll = 100 * time.Millisecond
	// ClaimWaitSlack bounds, past RelayPoll, the time from an intent's
	// insert to its first claim, as the binlog stamps both on the
	// database clock (created_at of the insert, changed_at of the
	// claim): a relay that polls in a loop (its claims log poll_ms), alive
	// and idle, with its last round over, claims what committed meanwhile
	// at its next round, at most RelayPoll later. The slack covers the
	// order transaction's commit after its insert, the claim's
	// transaction and a loaded machine's scheduler; it is short enough
	// that a relay polling every 600 ms or slower breaks the bound
	// (crosscheck's witness-claim-wait). The verifier judges only an
	// intent committed while its claiming relay was demonstrably alive
	// and idle: the relay's previous claim transaction came before the
	// intent, and its rows were all SENT before the intent (else its
	// round may still have been publishing; it is judged then only a
	// publish timeout plus PublishRoundSlack after that claim), the relay
	// made no other claim before the intent's, no earlier version of the
	// intent's aggregate was unsent, and no fault (a nemesis fault until
	// its heal, an actor's fault point, a process's exit, a failed call)
	// fell between the relay's previous claim and the intent's claim,
	// widened by a second on each side.
	ClaimWaitSlack = 400 * time.Millisecond
)
