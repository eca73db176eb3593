package binlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	driver "github.com/go-sql-driver/mysql"
)

// Settings are the server's binlog settings as Check read them.
type Settings struct {
	Version     string `json:"version"`
	LogBin      bool   `json:"log_bin"`
	Format      string `json:"binlog_format"`
	RowImage    string `json:"binlog_row_image"`
	RowMetadata string `json:"binlog_row_metadata"`
	Checksum    string `json:"binlog_checksum"`
	ServerID    uint32 `json:"server_id"`
	Domain      uint32 `json:"gtid_domain_id"`
	// Basename is @@log_bin_basename: the binlog files are Basename.NNNNNN
	// on the server's disk. Empty when log_bin is off.
	Basename string `json:"log_bin_basename,omitempty"`
}

// Check reads the server's global binlog settings and returns an error
// wrapping ErrServer that names every one that keeps it from being
// witnessed: log_bin must be ON, binlog_format ROW, binlog_row_image FULL
// and binlog_row_metadata FULL (MariaDB 10.5 or later). The settings are
// returned in both cases, for the evidence. Global values are what new
// sessions start with; a session that changes its own binlog_format is
// caught by the reader (no row events, a partial image).
func Check(ctx context.Context, db *sql.DB) (Settings, error) {
	var (
		s        Settings
		logBin   int
		basename sql.NullString
	)
	err := db.QueryRowContext(ctx, `SELECT @@version, @@GLOBAL.log_bin, @@GLOBAL.binlog_format,
		@@GLOBAL.binlog_row_image, @@GLOBAL.binlog_row_metadata, @@GLOBAL.binlog_checksum,
		@@GLOBAL.server_id, @@GLOBAL.gtid_domain_id, @@GLOBAL.log_bin_basename`).Scan(
		&s.Version, &logBin, &s.Format, &s.RowImage, &s.RowMetadata, &s.Checksum,
		&s.ServerID, &s.Domain, &basename)
	if err != nil {
		return s, fmt.Errorf("check binlog settings (a MariaDB 10.5 or later server is needed): %w", err)
	}
	s.LogBin, s.Basename = logBin == 1, basename.String
	var missing []string
	if !s.LogBin {
		missing = append(missing, "log_bin is OFF (start the server with --log-bin)")
	}
	for _, v := range []struct{ name, got, want string }{
		{"binlog_format", s.Format, "ROW"},
		{"binlog_row_image", s.RowImage, "FULL"},
		{"binlog_row_metadata", s.RowMetadata, "FULL"},
	} {
		if !strings.EqualFold(v.got, v.want) {
			missing = append(missing, fmt.Sprintf("%s is %s, not %s", v.name, v.got, v.want))
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("%w: %s", ErrServer, strings.Join(missing, "; "))
	}
	return s, nil
}

// Position is a point in a server's binary log: the file and byte offset
// of the next event, and the GTID state there (@@gtid_binlog_pos: the last
// GTID of each domain, comma-separated; empty before the first transaction).
type Position struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
	GTID string `json:"gtid"`
}

// IsZero reports whether p is unset.
func (p Position) IsZero() bool { return p == Position{} }

func (p Position) String() string {
	return fmt.Sprintf("%s:%d (gtid %s)", p.File, p.Pos, p.GTID)
}

// CurrentPosition returns the server's current binlog position. The file
// position and the GTID state come from two statements; it reads the GTID
// state before and after and retries while a commit slips in between, so
// that both describe the same point. Needs the BINLOG MONITOR privilege
// (REPLICATION CLIENT before MariaDB 10.5).
func CurrentPosition(ctx context.Context, db *sql.DB) (Position, error) {
	for range 10 {
		var before, after string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&before); err != nil {
			return Position{}, fmt.Errorf("read gtid_binlog_pos: %w", serverErr(err))
		}
		rows, err := showRows(ctx, db, "SHOW MASTER STATUS")
		if err != nil {
			return Position{}, fmt.Errorf("read binlog position: %w", err)
		}
		if len(rows) == 0 {
			return Position{}, fmt.Errorf("read binlog position: %w: log_bin is OFF", ErrServer)
		}
		pos, err := strconv.ParseUint(rows[0]["Position"], 10, 32)
		if err != nil {
			return Position{}, fmt.Errorf("read binlog position: %w", err)
		}
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&after); err != nil {
			return Position{}, fmt.Errorf("read gtid_binlog_pos: %w", serverErr(err))
		}
		if before == after {
			return Position{File: rows[0]["File"], Pos: uint32(pos), GTID: after}, nil
		}
	}
	return Position{}, errors.New("read binlog position: it kept moving under concurrent commits")
}

// Captured is one binlog file written into a witness directory.
type Captured struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// serverFile is one row of SHOW BINARY LOGS.
type serverFile struct {
	name string
	size int64
}

// flushAndList closes the current binlog file (FLUSH BINARY LOGS, which
// needs RELOAD) so that every event up to now is in a closed, immutable
// file, and returns the files from from.File to to.File (to zero: the last
// closed one). A file no longer on the server is an error.
func flushAndList(ctx context.Context, db *sql.DB, from, to Position) ([]serverFile, error) {
	if from.File == "" {
		return nil, errors.New("list binlog files: no start file")
	}
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return nil, fmt.Errorf("flush binary logs: %w", serverErr(err))
	}
	rows, err := showRows(ctx, db, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("list binlog files: %w", err)
	}
	if to.File == "" && len(rows) > 1 {
		to.File = rows[len(rows)-2]["Log_name"]
	}
	var out []serverFile
	for i, r := range rows {
		name := r["Log_name"]
		if name == from.File || len(out) > 0 {
			if i == len(rows)-1 {
				return nil, fmt.Errorf("list binlog files: %s is still the active file after FLUSH BINARY LOGS", name)
			}
			size, err := strconv.ParseInt(r["File_size"], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("list binlog files: size of %s: %w", name, err)
			}
			out = append(out, serverFile{name, size})
		}
		if name == to.File && len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list binlog files: %s..%s not on the server (purged, or not this server's)", from.File, to.File)
}

// CopyFiles copies, verbatim, the binlog files of a server whose files are
// on this machine's disk (a private server started for the run): it runs
// FLUSH BINARY LOGS so that the range is closed, then copies every file
// from from.File to to.File (a zero to: up to the flush) from logDir (empty:
// the directory of @@log_bin_basename) into dst, under the same names. The
// files start at the beginning of from.File; filter by GTID or position to
// drop what came before from. Needs RELOAD and BINLOG MONITOR.
func CopyFiles(ctx context.Context, db *sql.DB, logDir string, from, to Position, dst string) ([]Captured, error) {
	if logDir == "" {
		// Only the basename is wanted here: the files are copied whatever
		// the settings, and the reader judges what they hold.
		s, err := Check(ctx, db)
		if s.Basename == "" {
			return nil, fmt.Errorf("copy binlog files: no log_bin_basename: %w", err)
		}
		logDir = filepath.Dir(s.Basename)
	}
	files, err := flushAndList(ctx, db, from, to)
	if err != nil {
		return nil, fmt.Errorf("copy binlog files: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("copy binlog files: %w", err)
	}
	var out []Captured
	for _, f := range files {
		c, err := copyFile(filepath.Join(logDir, f.name), filepath.Join(dst, f.name), f.size)
		if err != nil {
			return out, fmt.Errorf("copy binlog files: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// copyFile copies src to dst through a temporary file that is synced and
// renamed, so that dst is either whole or absent, and checks that the copy
// has the size the server listed for the closed file.
func copyFile(src, dst string, want int64) (Captured, error) {
	in, err := os.Open(src)
	if err != nil {
		return Captured{}, fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return Captured{}, fmt.Errorf("create copy of %s: %w", src, err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), in)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Captured{}, fmt.Errorf("copy %s: %w", src, err)
	}
	if n != want {
		return Captured{}, fmt.Errorf("copy %s: %d bytes, the server lists %d", src, n, want)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return Captured{}, fmt.Errorf("copy %s: %w", src, err)
	}
	return Captured{Name: filepath.Base(dst), Path: dst, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// showRows runs a SHOW statement and returns its rows as column maps:
// the column sets of SHOW MASTER STATUS and SHOW BINARY LOGS differ across
// versions, so columns are taken by name.
func showRows(ctx context.Context, db *sql.DB, q string) ([]map[string]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, serverErr(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := make(map[string]string, len(cols))
		for i, c := range cols {
			m[c] = vals[i].String
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// serverErr marks an access-denied answer as ErrServer, keeping the
// server's message, which names the privilege it wants.
func serverErr(err error) error {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1045, 1142, 1227, 1381: // access denied (db, user, table, privilege), binary logging off
			return fmt.Errorf("%w: %v", ErrServer, err)
		}
	}
	return err
}
