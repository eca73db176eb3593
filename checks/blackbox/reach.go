package blackbox

// OutOfReach is what a black-box audit cannot see, whatever its verdict
// (../shared/BLACKBOX.md, "What stays out of reach"; docs/blackbox.md):
// the proof boundary every black-box report states, so that a PASS is
// never read as more than the witnesses can show.
var OutOfReach = []string{
	"which process did what: there are no claim tokens; attribution goes by database user at most",
	"how many times an absorbed duplicate was processed: a rejected inbox insert leaves no binlog trace",
	"the moment an offset was committed relative to its effect, beyond the witnesses' resolution",
	"effects outside the database (an e-mail sent, a call made)",
	"exact fault windows inside a process",
	"a record published before its row committed, when the row did commit: the broker's and the binlog's clocks are not comparable to the resolution needed",
	"Postgres (logical decoding is a later witness) and MySQL 8's GTID format, until they are read",
}
