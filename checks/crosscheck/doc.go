// Package crosscheck holds the actors' event logs against the witnesses:
// the verifier's witness step (step 5, design principle 6). The database's
// binary log and the broker's own log, listed in the evidence's witness
// object, are the history; the actors' logs are claims held against it.
//
// The verifier (package checks) calls it through a small surface:
//
//   - Read runs steps 1 to 3 on a bundle and returns the Witnesses, with
//     the reasons it found; Missing says what the evidence itself says
//     could not be witnessed.
//   - While it replays a scenario, the verifier keeps the events a witness
//     can speak to (Keep), then Witnesses.Check runs step 4 on them and
//     returns a Result: its reasons, a one-line summary of what the
//     witnesses confirmed, and the end state rebuilt from the scenario's
//     binlog (Result.EndState), which the verifier loads into its SQL
//     engine for the digests and the invariants.
//
// The steps:
//
//  1. files (read.go): every listed file passes the bundle's gate (inside
//     the bundle, no symlink, a regular file with one link, within the size
//     limits) and has the size and sha256 the evidence recorded; no file
//     of a witness directory is left unlisted, and nothing in it is other
//     than directories and regular files.
//  2. readDatabase, readBroker (read.go): the binlog files are read into
//     transactions (witness/binlog) and the broker's directory or dump into
//     records and group offsets (witness/broker); a reader's refusal is
//     witness-damaged.
//  3. databaseBelongs, brokerBelongs (belongs.go): the witnesses are this
//     run's: its server, a GTID range without gap from gtid_start to
//     gtid_end, its databases ofa_<run id>_<scenario> and topics
//     ofa.<run id>.<scenario>, and nothing of another run or of a scenario
//     the evidence leaves out.
//  4. per scenario (scenario.go): the cross-checks of every actor event
//     against the history: the commit boundary (orders.go), the outbox's
//     compare-and-sets (outbox.go), the ack boundary (effects.go), the
//     broker (broker.go); and the end state rebuilt from the binlog
//     (endstate.go).
//
// Its findings are finding.Reason values whose rules are the checker's
// (checks.Rules lists them, and its tests read this package's source to
// hold every rule reported here to that list).
//
// It may import evidence, evidence/bundle, witness/binlog, witness/broker,
// checks/model (for model.Source) and checks/finding; never checks itself
// (which imports it), the runner or the system under test.
package crosscheck
