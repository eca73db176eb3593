package binlog

// A server killed with SIGKILL (or by a crash) leaves its last binlog file
// marked in use, without the ROTATE or STOP event that closes a file, and
// possibly cut inside an event or a transaction. Started again on the same
// data directory it runs crash recovery, in which the binary log decides:
// a transaction whose events are all in the log (its XID event included)
// is committed, one cut short is rolled back. Then it starts a new file.
// So a file in use that is followed by another file of the sequence is
// read as crashed: up to its last whole transaction, the rest dropped (and
// counted in FileInfo.Dropped), Closed "crash". The next file must have
// the next number, and the GTID state it starts with is checked against
// what the crashed file ended with, as after a STOP. The last file of a
// sequence is never read so: nothing shows that the server came back, and
// a file still in use when copied is the error it always was.

// crashed tells whether the file being read may end here as crashed: it
// is not the last of the sequence and the server marked it in use (the
// flag is read from its first event).
func (s *scanner) crashed(int64) bool {
	return s.crashable && s.inUse && s.info.Events > 0
}

// endCrashed closes a crashed file of size bytes at its last whole
// transaction: a transaction still open is dropped with the bytes after
// it.
func (s *scanner) endCrashed(size int64) {
	if s.tx != nil { // its GTID was never committed: the next file continues before it
		if s.txPrevSeen {
			s.domains[s.tx.GTID.Domain] = s.txPrev
		} else {
			delete(s.domains, s.tx.GTID.Domain)
		}
	}
	s.tx = nil
	s.annotate = ""
	s.closed = "crash"
	s.info.Dropped = size - s.txEnd
}
