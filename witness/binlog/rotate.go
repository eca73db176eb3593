package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RotateFileBytes is where KeepFilesUnder closes a binlog file: the size
// of the private server's files (mariadbd.MaxBinlogSizeArg), half the
// bundle gate's bound on one witness file (evidence/bundle
// MaxWitnessFileBytes, 128 MiB), so that a file overshooting it by what
// is written between two looks is still read.
const RotateFileBytes = 64 << 20

// RotateEvery is how often KeepFilesUnder looks at the position.
const RotateEvery = 250 * time.Millisecond

// KeepFilesUnder keeps the binary log files db's server writes under
// about limit bytes while ctx lasts, for a server whose max_binlog_size
// is larger (MariaDB's default is 1 GiB): every interval it reads the
// position (SHOW MASTER STATUS) and, once the current file is past
// limit, closes it (FLUSH BINARY LOGS, which needs RELOAD, as the
// capture's own flush does). A file is never cut inside a transaction:
// the server rotates only between them. It returns how many files it
// closed, and the first error that stopped it (not ctx's end).
func KeepFilesUnder(ctx context.Context, db *sql.DB, limit int64, interval time.Duration) (int, error) {
	var size int64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.max_binlog_size").Scan(&size); err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, fmt.Errorf("keep binlog files under %d bytes: read max_binlog_size: %w", limit, serverErr(err))
	}
	if size <= limit {
		return 0, nil // the server rotates in time itself
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	rotated := 0
	for {
		select {
		case <-ctx.Done():
			return rotated, nil
		case <-t.C:
		}
		pos, err := CurrentPosition(ctx, db)
		if err == nil && int64(pos.Pos) >= limit {
			err = flush(ctx, db)
			if err == nil {
				rotated++
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return rotated, nil
			}
			return rotated, fmt.Errorf("keep binlog files under %d bytes: %w", limit, serverErr(err))
		}
	}
}

// flush closes the current binlog file. The statement is not cut short
// by ctx's end (a flush the server ran would go uncounted): it has
// flushTimeout of its own.
func flush(ctx context.Context, db *sql.DB) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	_, err := db.ExecContext(fctx, "FLUSH BINARY LOGS")
	return err
}

const flushTimeout = 10 * time.Second
