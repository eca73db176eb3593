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
