package binlog

// Limits of the reader. A binlog may come from a bundle that a stranger
// built, so every length and count a file declares is held to the bytes
// that are there and to these limits before anything is allocated for it;
// a file or history past one of them is refused with ErrLimit, inside a
// *FileError naming the file and the event. Each limit sits far above what
// a run of this project writes: a default run logs about 300 transactions
// and 700 row changes, in events of a few hundred bytes, in well under a
// megabyte of binlog.
const (
	// MaxEventBytes bounds one event, header and checksum included: twice
	// MariaDB's default max_allowed_packet (16 MiB), beyond which a server
	// logs no statement or row unless that setting was raised. A compressed
	// event (log_bin_compress) is held to it uncompressed as well.
	MaxEventBytes = 32 << 20

	// MaxColumns bounds the columns of a table map or rows event: MariaDB's
	// own limit on the columns of a table.
	MaxColumns = 4096

	// MaxEventsPerFile bounds the events of one file (a file of MariaDB's
	// default max_binlog_size, 1 GiB, holds fewer of the events a run
	// writes).
	MaxEventsPerFile = 1 << 22

	// MaxTransactions bounds the transactions of one read (all its files).
	MaxTransactions = 1 << 20

	// MaxRowChanges bounds the row changes of one read (all its files).
	MaxRowChanges = 1 << 22

	// MaxStreamedTransactions and MaxStreamedRowChanges replace the two
	// above for a read that keeps nothing of a transaction once its
	// caller had it (ScanInputsAllowingGaps: the black-box verifier,
	// whose model keeps a few dozen bytes of a transaction and of a row
	// it audits). The reference pipeline writes about four transactions
	// and five row changes an order, so the History bounds refused the
	// witness of an audit of a quarter of a million orders; these take
	// two million, and keep a hostile stream's model within a few GiB.
	MaxStreamedTransactions = 1 << 23
	MaxStreamedRowChanges   = 1 << 24

	// MaxAmplification bounds the memory a read decodes relative to the
	// bytes it has read: the estimated size of the decoded row images,
	// statements and table maps may not exceed MaxAmplification times the
	// bytes read plus AmplificationAllowance. The estimate follows what a
	// History keeps (a run's 461 KB binlog: estimated 1.57 MB, kept 1.58
	// MB); the committed real binlogs are estimated at 2 to 5 times their
	// size (TestDecodedSizeOfARealBinlog), a hostile one (images of NULLs,
	// one byte each) at hundreds. 16 leaves three times the headroom of
	// the largest real ratio while keeping the whole witness budget of a
	// bundle (evidence/bundle.MaxWitnessBytes) within a few GiB decoded;
	// a bundle's real binlogs are far below that budget.
	MaxAmplification = 16

	// AmplificationAllowance is the fixed part of the decoded-size bound,
	// so that a small file's first events are not held to a ratio.
	AmplificationAllowance = 4 << 20
)
