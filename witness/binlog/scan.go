package binlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// MariaDB GTID event flags this reader refuses: XA transactions are logged
// as two groups (prepare, then commit) that it does not model.
const (
	flPreparedXA  = 64
	flCompletedXA = 128
)

// callbackError carries the caller's own error through the scanner
// unchanged, so that Scan can return it without a FileError around it.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// scanner folds events into transactions and keeps the continuity state
// across files: the last sequence number of every GTID domain.
type scanner struct {
	fn func(Transaction) error
	p  *replication.BinlogParser

	// per file
	info   FileInfo
	inUse  bool
	closed string

	// across files
	domains   map[uint32]uint64
	haveState bool
	// allowGaps: a transaction whose sequence number is ahead of its
	// domain's next is read, not refused (ReadAllInputsAllowingGaps); one
	// at or below the last is still refused.
	allowGaps bool

	// crashable: the file being read is not the last of the sequence, so
	// ending in use (and cut inside its last transaction) means the server
	// crashed and was started again on a new file (crash.go).
	crashable bool
	// txEnd is where the last whole transaction (or the last event outside
	// one) of the file ends.
	txEnd int64
	// txPrev is the open transaction's domain's sequence before it began
	// (txPrevSeen: the domain had one), restored when a crash drops it.
	txPrev     uint64
	txPrevSeen bool

	// per transaction
	tx       *Transaction
	annotate string
	tables   map[*replication.TableMapEvent]*table
	// fastLayouts are the fast path's layouts of the tables it read
	// (fastrows.go), per table map as tables.
	fastLayouts map[*replication.TableMapEvent][]fastColumn
	// boxes makes the fast path's Values (boxes.go).
	boxes boxes

	// the format description of the file being read: the post-header
	// length of each event type (the decoder sizes table ids from it) and
	// whether events carry a CRC32 checksum
	postHeader []byte
	checksum   bool
	// maps mirrors the decoder's table maps by table id, so that vet
	// checks a rows event against the table map the decoder will use. It
	// is cleared when the decoder clears its own (a rows event ending a
	// statement) and, stricter, at each transaction's start and end.
	maps map[uint64]*replication.TableMapEvent

	// across files, for the limits: bytes read, decoded size (estimated),
	// transactions begun, row changes
	read, cost    int64
	txns, changes int64
	// maxTxns and maxChanges bound txns and changes: MaxTransactions and
	// MaxRowChanges, or their streamed counterparts (newScanner, scan).
	maxTxns, maxChanges int64

	// done is the transaction the last event committed, handed to fn by
	// the file loop outside the decoder's guard (a panic of the caller's
	// own is not a damaged binlog).
	done *Transaction

	// reuse (a streamed read, always with pipe): a transaction's Changes
	// and row images are fn's only for the time of the call, and then
	// reused for a later transaction's (spare, images; used of them so
	// far; pipe turns them), so that a read of millions of rows does not
	// allocate a map per image.
	reuse  bool
	spare  []RowChange
	images []image
	used   int
	// pipe (a streamed read) runs fn on a goroutine of its own, so that
	// decoding the next transaction overlaps the caller's work on this
	// one.
	pipe *pipe
}

func newScanner(fn func(Transaction) error) *scanner {
	p := replication.NewBinlogParser()
	p.SetFlavor(mysql.MariaDBFlavor)
	p.SetVerifyChecksum(true)
	p.SetParseTime(true)
	p.SetUseDecimal(true)
	p.SetTimestampStringLocation(time.UTC)
	return &scanner{fn: fn, p: p, domains: map[uint32]uint64{}, maxTxns: MaxTransactions, maxChanges: MaxRowChanges,
		tables: map[*replication.TableMapEvent]*table{}, maps: map[uint64]*replication.TableMapEvent{},
		fastLayouts: map[*replication.TableMapEvent][]fastColumn{}}
}

func (s *scanner) startFile(name string) {
	s.p.Reset()
	s.info = FileInfo{Name: name}
	s.inUse, s.closed = false, ""
	s.txEnd = 0
	s.postHeader, s.checksum = nil, false
}

func (s *scanner) endFile() error {
	if s.tx != nil {
		return fmt.Errorf("%w: transaction %s begun at %d never committed", ErrTruncated, s.tx.GTID, s.tx.Pos)
	}
	if s.info.Events == 0 {
		return fmt.Errorf("%w: no events", ErrTruncated)
	}
	if s.closed == "" {
		if s.inUse {
			return fmt.Errorf("%w: the server still marked it in use", ErrUnclosed)
		}
		return ErrUnclosed
	}
	s.info.Closed = s.closed
	return nil
}

// event decodes one framed event and folds it into the current
// transaction. It is one switch over the event types MariaDB writes, kept
// together so that every type the reader accepts is visible in one place.
// Everything it does with the event's bytes (the decoder's work and ours)
// runs under guard: a panic is a damaged event, never a crash.
func (s *scanner) event(raw []byte, off int64) (err error) {
	defer guard(&err)
	typ := replication.EventType(raw[4])
	flags := binary.LittleEndian.Uint16(raw[17:19])
	switch {
	case s.closed != "":
		return fmt.Errorf("%w: %s after the file's closing %s event", ErrCorrupt, typ, s.closed)
	case s.info.Events == 0 && typ != replication.FORMAT_DESCRIPTION_EVENT:
		// checked before decoding: the decoder needs a format description
		return fmt.Errorf("%w: first event is %s, not a format description", ErrNotBinlog, typ)
	case s.info.Events > 0 && typ == replication.FORMAT_DESCRIPTION_EVENT:
		return fmt.Errorf("%w: second format description event", ErrCorrupt)
	}
	body := raw[replication.EventHeaderSize:]
	if typ == replication.FORMAT_DESCRIPTION_EVENT {
		// The server checksums this event with the in-use flag clear, so
		// that it can clear the flag in place when it closes the file.
		s.inUse = flags&replication.LOG_EVENT_BINLOG_IN_USE_F != 0
		binary.LittleEndian.PutUint16(raw[17:19], flags&^replication.LOG_EVENT_BINLOG_IN_USE_F)
	} else if s.checksum {
		if len(body) < replication.BinlogChecksumLength {
			return fmt.Errorf("%w: %s of %d bytes has no room for its checksum", ErrCorrupt, typ, len(raw))
		}
		n := len(raw) - replication.BinlogChecksumLength
		if crc32.ChecksumIEEE(raw[:n]) != binary.LittleEndian.Uint32(raw[n:]) {
			return fmt.Errorf("%w: %s fails its checksum", ErrCorrupt, typ)
		}
		body = raw[replication.EventHeaderSize:n]
	}
	if !decoded[typ] {
		return s.headerOnly(raw, off)
	}
	cost, err := s.vet(typ, body)
	if err != nil {
		return err
	}
	s.cost += cost
	if limit := MaxAmplification*s.read + AmplificationAllowance; s.cost > limit {
		return fmt.Errorf("%w: %d bytes read decode to about %d, more than MaxAmplification (%d) times as many",
			ErrLimit, s.read, s.cost, MaxAmplification)
	}
	if taken, err := s.fastRows(typ, raw, body, off); taken {
		return err
	}
	ev, err := s.p.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	h := ev.Header
	end := uint32(off) + h.EventSize
	if h.LogPos != end {
		return fmt.Errorf("%w: %s ends at %d by its header, at %d in the file", ErrCorrupt, h.EventType, h.LogPos, end)
	}
	s.info.Events++
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		return s.format(e)
	case *replication.MariadbGTIDListEvent:
		return s.gtidList(e.GTIDs)
	case *replication.MariadbBinlogCheckPointEvent:
	case *replication.MariadbGTIDEvent:
		return s.begin(e, h, off)
	case *replication.QueryEvent:
		return s.query(e, end)
	case *replication.MariadbAnnotateRowsEvent:
		s.annotate = string(e.Query)
	case *replication.TableMapEvent:
		s.maps[e.TableID] = e
		if s.tx == nil {
			return fmt.Errorf("%w: table map outside a transaction", ErrCorrupt)
		}
		if len(e.ColumnName) == 0 {
			return fmt.Errorf("%w: table %s.%s", ErrNoColumnNames, e.Schema, e.Table)
		}
	case *replication.RowsEvent:
		if e.Flags&replication.RowsEventStmtEndFlag != 0 {
			clear(s.maps) // as the decoder does
		}
		return s.rows(e)
	case *replication.XIDEvent:
		return s.commit(end, e.XID, false)
	case *replication.RotateEvent:
		if s.tx != nil {
			return fmt.Errorf("%w: rotate inside transaction %s", ErrCorrupt, s.tx.GTID)
		}
		s.closed, s.info.Next = "rotate", string(e.NextLogName)
	case *replication.IntVarEvent:
		// statement-based context for the query that follows; nothing to keep
	default:
		return fmt.Errorf("%w: event type %s decoded as %T", ErrUnsupported, h.EventType, ev.Event)
	}
	return nil
}

// headerOnly takes an event the reader does not hand to the decoder (see
// decoded): what it needs of one is in the header.
func (s *scanner) headerOnly(raw []byte, off int64) error {
	typ := replication.EventType(raw[4])
	flags := binary.LittleEndian.Uint16(raw[17:19])
	end := binary.LittleEndian.Uint32(raw[13:17])
	if size := binary.LittleEndian.Uint32(raw[9:13]); end != uint32(off)+size {
		return fmt.Errorf("%w: %s ends at %d by its header, at %d in the file", ErrCorrupt, typ, end, uint32(off)+size)
	}
	s.info.Events++
	switch {
	case typ == replication.STOP_EVENT:
		if s.tx != nil {
			return fmt.Errorf("%w: stop inside transaction %s", ErrCorrupt, s.tx.GTID)
		}
		s.closed = "stop"
	case typ == replication.MARIADB_START_ENCRYPTION_EVENT:
		return fmt.Errorf("%w: encrypted binlog (encrypt_binlog=ON)", ErrUnsupported)
	case typ == replication.RAND_EVENT || typ == replication.USER_VAR_EVENT:
		// statement-based context, as IntVar
	case flags&replication.LOG_EVENT_IGNORABLE_F != 0:
	default:
		return fmt.Errorf("%w: event type %s (%d)", ErrUnsupported, typ, byte(typ))
	}
	return nil
}

// format takes the file's format description: the decoder has checked its
// checksum; the reader needs one it can frame events by.
func (s *scanner) format(e *replication.FormatDescriptionEvent) error {
	s.info.ServerVersion = e.ServerVersion
	switch e.ChecksumAlgorithm {
	case replication.BINLOG_CHECKSUM_ALG_CRC32:
		s.checksum = true
	case replication.BINLOG_CHECKSUM_ALG_OFF:
	default:
		return fmt.Errorf("%w: checksum algorithm %d (server %q)", ErrUnsupported, e.ChecksumAlgorithm, e.ServerVersion)
	}
	s.postHeader = e.EventTypeHeaderLengths
	return nil
}

// guard turns a panic of the decoder, or of the reader's own decoding, on
// a hostile event into ErrCorrupt: the caller turns that into a reason and
// a verdict, where a crash would lose the whole verification.
func guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: the decoder failed on it: %v", ErrCorrupt, r)
	}
}

// gtidList checks the binlog state written at a file's start against where
// the previous file ended; the first file's list sets the state.
func (s *scanner) gtidList(list []mysql.MariadbGTID) error {
	state := map[uint32]uint64{}
	s.info.GTIDList = make([]GTID, 0, len(list))
	for _, g := range list {
		s.info.GTIDList = append(s.info.GTIDList, GTID{Domain: g.DomainID, Server: g.ServerID, Seq: g.SequenceNumber})
		state[g.DomainID] = max(state[g.DomainID], g.SequenceNumber)
	}
	if s.tx != nil {
		return fmt.Errorf("%w: gtid list inside transaction %s", ErrCorrupt, s.tx.GTID)
	}
	if !s.haveState {
		s.domains, s.haveState = state, true
		return nil
	}
	if !maps.Equal(state, s.domains) {
		return fmt.Errorf("%w: file starts after %s, previous file ended after %s",
			ErrNotContiguous, formatState(state), formatState(s.domains))
	}
	return nil
}

func formatState(m map[uint32]uint64) string {
	if len(m) == 0 {
		return "nothing"
	}
	out := ""
	for _, d := range slices.Sorted(maps.Keys(m)) {
		if out != "" {
			out += ","
		}
		out += fmt.Sprintf("%d-*-%d", d, m[d])
	}
	return out
}

func (s *scanner) begin(e *replication.MariadbGTIDEvent, h *replication.EventHeader, off int64) error {
	g := GTID{Domain: e.GTID.DomainID, Server: h.ServerID, Seq: e.GTID.SequenceNumber}
	if s.tx != nil {
		return fmt.Errorf("%w: transaction %s begun at %d not committed before %s",
			ErrTruncated, s.tx.GTID, s.tx.Pos, g)
	}
	if e.Flags&(flPreparedXA|flCompletedXA) != 0 {
		return fmt.Errorf("%w: XA transaction %s", ErrUnsupported, g)
	}
	last, seen := s.domains[g.Domain]
	switch {
	case seen && g.Seq <= last:
		return fmt.Errorf("%w: %s follows sequence %d of domain %d, not after it", ErrGTIDGap, g, last, g.Domain)
	case seen && g.Seq != last+1 && !s.allowGaps:
		return fmt.Errorf("%w: %s follows sequence %d of domain %d", ErrGTIDGap, g, last, g.Domain)
	case !seen && s.haveState && g.Seq != 1 && !s.allowGaps:
		return fmt.Errorf("%w: %s is the first of domain %d, not sequence 1", ErrGTIDGap, g, g.Domain)
	}
	if s.txns++; s.txns > s.maxTxns {
		return fmt.Errorf("%w: more than %d transactions", ErrLimit, s.maxTxns)
	}
	clear(s.maps)
	s.txPrev, s.txPrevSeen = last, seen
	s.domains[g.Domain] = g.Seq
	s.tx = &Transaction{GTID: g, File: s.info.Name, Pos: uint32(off),
		Time: time.Unix(int64(h.Timestamp), 0).UTC(), Standalone: e.IsStandalone()}
	if s.reuse {
		s.tx.Changes, s.spare, s.used = s.spare[:0], nil, 0
	}
	s.annotate = ""
	return nil
}

func (s *scanner) query(e *replication.QueryEvent, end uint32) error {
	if s.tx == nil {
		return fmt.Errorf("%w: query outside a transaction", ErrCorrupt)
	}
	switch q := string(e.Query); q {
	case "BEGIN":
		// MariaDB's GTID event of a non-standalone group stands for BEGIN;
		// an explicit one (older servers) changes nothing.
		if s.tx.Standalone {
			return fmt.Errorf("%w: BEGIN in standalone group %s", ErrCorrupt, s.tx.GTID)
		}
	case "COMMIT":
		return s.commit(end, 0, false)
	case "ROLLBACK":
		return s.commit(end, 0, true)
	default:
		s.tx.Statements = append(s.tx.Statements, Statement{Schema: string(e.Schema), SQL: q})
		if s.tx.Standalone {
			return s.commit(end, 0, false)
		}
	}
	return nil
}

func (s *scanner) commit(end uint32, xid uint64, rolledBack bool) error {
	if s.tx == nil {
		return fmt.Errorf("%w: commit outside a transaction", ErrCorrupt)
	}
	t := s.tx
	t.EndPos, t.XID, t.RolledBack = end, xid, rolledBack
	s.tx, s.annotate = nil, ""
	clear(s.tables)
	clear(s.fastLayouts)
	clear(s.maps)
	if s.info.First.IsZero() {
		s.info.First = t.GTID
	}
	s.info.Last = t.GTID
	s.info.Transactions++
	s.done = t
	return nil
}

// deliver hands the transaction the last event committed to fn: through
// the pipe in a streamed read (which recycles its Changes and images),
// else directly.
func (s *scanner) deliver() error {
	t := s.done
	if t == nil {
		return nil
	}
	s.done = nil
	if s.pipe != nil {
		return s.pipe.send(s, t)
	}
	if err := s.fn(*t); err != nil {
		return &callbackError{err}
	}
	return nil
}

// image is a map to fill with one row image of tb, every column: a new
// one, or in a streamed read one of the last transaction's, emptied
// unless it held a row of tb's columns, which the filling writes over.
func (s *scanner) image(tb *table) map[string]Value {
	if !s.reuse {
		return make(map[string]Value, len(tb.cols))
	}
	if s.used == len(s.images) {
		s.images = append(s.images, image{m: make(map[string]Value, len(tb.cols))})
	}
	img := &s.images[s.used]
	s.used++
	if !slices.Equal(img.cols, tb.names) {
		clear(img.m)
		img.cols = tb.names
	}
	return img.m
}

// image is a row image map a streamed read reuses, and the columns of
// the row it holds (a map emptied is 40 ns at each reuse: one filled
// with the same columns is written over instead).
type image struct {
	m    map[string]Value
	cols []string
}
