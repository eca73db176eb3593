// Package witness holds the readers and capture libraries for the run's
// witnesses: the records the database and the broker keep themselves, from
// which the verifier derives the history instead of trusting what the
// actors logged (design principle 6; verifier step 5). It has no code of
// its own; the work is in:
//
//   - witness/binlog: MariaDB binary log files -> committed transactions
//     with full row images (Scan, Transactions, ReadAll, InSchema), and
//     capture from a server (Check, CurrentPosition, CopyFiles for a
//     private server's local files, Stream over the replication protocol
//     for an external one).
//   - witness/broker: a kfake data directory, a live cluster, or a JSON
//     Lines dump -> every record and every group's committed offsets
//     (ReadDataDir, Read, Dump, ReadDump).
//
// Neither imports the runner or the verifier; both may be used by either.
//
// # What a run must do to be witnessed
//
// Database: start mariadbd (10.5 or later) with
//
//	--log-bin=<dir>/binlog --binlog-format=ROW --binlog-row-image=FULL
//	--binlog-row-metadata=FULL --server-id=<fixed>
//
// (binlog_annotate_row_events is on by default and gives each row change
// its statement as context). Take binlog.CurrentPosition before the first
// scenario and copy at the end with binlog.CopyFiles (private server: needs
// RELOAD and BINLOG MONITOR) or binlog.Stream (external server: also
// REPLICATION SLAVE). Both flush first, so every file is closed; both keep
// the server's file names (binlog.000001, ...). Put them, and nothing else,
// in evidence/u80/witness/db/; binlog.Files lists them back in order. The
// files start at the beginning of the start position's file: keep a run's
// transactions with Transaction.After(start) and one scenario's with
// InSchema(..., "ofa_<run id>_<scenario>").
//
// Broker: run the embedded kfake with kfake.DataDir(evidence/u80/witness/kafka)
// and close it (Cluster.Close writes the partition snapshots the reader
// checks against) before the evidence is written; read it with
// broker.ReadDataDir. For an external broker, broker.Dump the run's topics
// (Selection.Prefix "ofa.<run id>.") and groups into
// evidence/u80/witness/kafka.jsonl and read it with broker.ReadDump.
//
// Record every witness file's path and sha256 in the evidence, as for the
// event logs: some damage is invisible inside the files (a kfake groups.log
// cut exactly at an entry boundary loses the last commits without a trace),
// and only the digest taken at capture shows it.
package witness
