package binlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	driver "github.com/go-sql-driver/mysql"
)

// DefaultReplicaID is the server_id Stream presents to the server when
// StreamConfig.ReplicaID is zero. It must differ from the server's own id
// and from every real replica's.
const DefaultReplicaID = 0x0fa0_0fa0

// StreamConfig says how to reach an external server over the replication
// protocol.
type StreamConfig struct {
	// DSN is a go-sql-driver DSN over TCP ("user:pass@tcp(host:port)/").
	// The account needs REPLICATION SLAVE (the binlog dump), BINLOG
	// MONITOR (SHOW BINARY LOGS) and RELOAD (FLUSH BINARY LOGS).
	DSN string
	// ReplicaID is the server_id announced to the server; default
	// DefaultReplicaID.
	ReplicaID uint32
	// Logger receives go-mysql's connection messages; default: discarded.
	Logger *slog.Logger
}

// Stream fetches the binlog files of an external server over the
// replication protocol (COM_BINLOG_DUMP, as a replica would) and writes
// them into dst under the server's file names. It checks the server's
// settings first (Check), runs FLUSH BINARY LOGS so that the range is in
// closed files, and then streams every file from the start of from.File up
// to and including to.File (a zero to: up to the flush), each ending with
// its ROTATE event. Events are written as the server sends them, so the
// files are the server's files byte for byte: the reader and mariadb-binlog
// both read them. On error the files written so far are removed.
func Stream(ctx context.Context, cfg StreamConfig, from, to Position, dst string) (out []Captured, err error) {
	dc, err := driver.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("stream binlog: parse DSN: %w", err)
	}
	if dc.Net != "tcp" {
		return nil, fmt.Errorf("stream binlog: DSN network %q: only tcp is supported", dc.Net)
	}
	db, err := sql.Open("mysql", cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("stream binlog: %w", err)
	}
	defer db.Close()
	if _, err := Check(ctx, db); err != nil {
		return nil, fmt.Errorf("stream binlog: %w", err)
	}
	files, err := flushAndList(ctx, db, from, to)
	if err != nil {
		return nil, fmt.Errorf("stream binlog: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("stream binlog: %w", err)
	}
	w := &fileWriter{dst: dst, files: files}
	defer func() {
		if err != nil {
			w.abort()
			out = nil
		}
	}()
	if err := w.run(ctx, cfg, dc); err != nil {
		return nil, fmt.Errorf("stream binlog: %w", err)
	}
	return w.done, nil
}

// fileWriter writes a raw event stream into files, one per binlog file.
type fileWriter struct {
	dst   string
	files []serverFile // still to receive, in order
	done  []Captured

	name string // file the server is sending, from the last ROTATE
	f    *os.File
	h    hash.Hash
	n    int64
}

// newSyncer is the replication client of Stream and of ProbeDump, so that
// the probe asks the server exactly what a stream will: raw events from
// its address, as replica cfg.ReplicaID, with the Annotate_rows events.
func newSyncer(cfg StreamConfig, dc *driver.Config) (*replication.BinlogSyncer, error) {
	host, portStr, err := net.SplitHostPort(dc.Addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", dc.Addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", dc.Addr, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	id := cfg.ReplicaID
	if id == 0 {
		id = DefaultReplicaID
	}
	return replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: id, Flavor: mysql.MariaDBFlavor, Host: host, Port: uint16(port),
		User: dc.User, Password: dc.Passwd, TLSConfig: dc.TLS, RawModeEnabled: true,
		// Without this flag MariaDB leaves its Annotate_rows events out of
		// the stream, and the files would not be the server's.
		DumpCommandFlag:  replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT,
		DisableRetrySync: true, Logger: logger,
	}), nil
}

// startDump starts a binlog dump from pos of the server cfg.DSN names, as
// Follow and ProbeDump ask for it; the caller closes the syncer.
func startDump(cfg StreamConfig, pos mysql.Position) (*replication.BinlogSyncer, *replication.BinlogStreamer, error) {
	dc, err := driver.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("parse DSN: %w", err)
	}
	syncer, err := newSyncer(cfg, dc)
	if err != nil {
		return nil, nil, err
	}
	s, err := syncer.StartSync(pos)
	if err != nil {
		syncer.Close()
		return nil, nil, dumpErr(err)
	}
	return syncer, s, nil
}

func (w *fileWriter) run(ctx context.Context, cfg StreamConfig, dc *driver.Config) error {
	syncer, err := newSyncer(cfg, dc)
	if err != nil {
		return err
	}
	defer syncer.Close()
	s, err := syncer.StartSync(mysql.Position{Name: w.files[0].name, Pos: 4})
	if err != nil {
		return fmt.Errorf("start binlog dump: %w", dumpErr(err))
	}
	for len(w.files) > 0 {
		ev, err := s.GetEvent(ctx)
		if err != nil {
			return fmt.Errorf("receive event of %s: %w", w.name, dumpErr(err))
		}
		if err := w.event(ev); err != nil {
			return err
		}
	}
	return nil
}

// event writes one event. A ROTATE with no position is the server's
// artificial announcement of the file it starts sending (not in any file);
// a FORMAT_DESCRIPTION starts a file; the real ROTATE ends it.
func (w *fileWriter) event(ev *replication.BinlogEvent) error {
	h := ev.Header
	if h.EventType == replication.ROTATE_EVENT && (h.Timestamp == 0 || h.LogPos == 0) {
		w.name = string(ev.Event.(*replication.RotateEvent).NextLogName)
		return nil
	}
	if h.EventType == replication.FORMAT_DESCRIPTION_EVENT {
		if w.f != nil {
			return fmt.Errorf("format description inside %s", w.name)
		}
		if w.name != w.files[0].name {
			return fmt.Errorf("server sent %s, expected %s", w.name, w.files[0].name)
		}
		f, err := os.OpenFile(filepath.Join(w.dst, w.name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("create %s: %w", w.name, err)
		}
		w.f, w.h, w.n = f, sha256.New(), 0
		if err := w.write(replication.BinLogFileHeader); err != nil {
			return err
		}
	}
	if w.f == nil {
		return fmt.Errorf("%s event before a format description", h.EventType)
	}
	if err := w.write(ev.RawData); err != nil {
		return err
	}
	if h.EventType != replication.ROTATE_EVENT {
		return nil
	}
	want := w.files[0]
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.name, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.name, err)
	}
	w.f = nil
	if w.n != want.size {
		return fmt.Errorf("%s: received %d bytes, the server lists %d", want.name, w.n, want.size)
	}
	w.done = append(w.done, Captured{Name: want.name, Path: filepath.Join(w.dst, want.name), Size: w.n,
		SHA256: hex.EncodeToString(w.h.Sum(nil))})
	w.files = w.files[1:]
	return nil
}

func (w *fileWriter) write(b []byte) error {
	if _, err := io.MultiWriter(w.f, w.h).Write(b); err != nil {
		return fmt.Errorf("write %s: %w", w.name, err)
	}
	w.n += int64(len(b))
	return nil
}

// abort removes every file this stream wrote, so that a failed capture
// never leaves a partial witness that looks like a whole one.
func (w *fileWriter) abort() {
	if w.f != nil {
		_ = w.f.Close()
		_ = os.Remove(w.f.Name())
	}
	for _, c := range w.done {
		_ = os.Remove(c.Path)
	}
}

// dumpErr marks the server's refusal of the binlog dump as ErrServer and
// says which grant it wants.
func dumpErr(err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) && (me.Code == 1227 || me.Code == 1045) {
		// MariaDB answers a replica registration without the privilege
		// with a plain "access denied", although the login succeeded.
		return fmt.Errorf("%w: the server refused the binlog dump: %v (the account needs REPLICATION SLAVE: GRANT REPLICATION SLAVE ON *.* TO ...)", ErrServer, err)
	}
	return err
}

// ProbeDump asks the server for a binlog dump from the start of file, as
// Stream would, and reads its first event: a preflight that tells, before
// a run, whether the account may stream the binlog at all (REPLICATION
// SLAVE). A refusal wraps ErrServer and names the grant.
func ProbeDump(ctx context.Context, cfg StreamConfig, file string) error {
	syncer, s, err := startDump(cfg, mysql.Position{Name: file, Pos: 4})
	if err != nil {
		return fmt.Errorf("probe the binlog dump: %w", err)
	}
	defer syncer.Close()
	if _, err := s.GetEvent(ctx); err != nil {
		return fmt.Errorf("probe the binlog dump: %w", dumpErr(err))
	}
	return nil
}
