package evidence

import (
	"context"
	"database/sql"
	"fmt"
)

// Querier is what DigestTable needs of a database: *sql.DB, *sql.Conn and
// *sql.Tx all qualify.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// DigestTable reads spec's columns from db and digests them with
// DigestRows. The runner calls it on the live database and the verifier on
// the replayed state, so that both digests come from one procedure.
func DigestTable(ctx context.Context, db Querier, spec DigestSpec) (TableDigest, error) {
	rows, err := db.QueryContext(ctx, spec.DigestQuery())
	if err != nil {
		return TableDigest{}, fmt.Errorf("digest %s: %w", spec.Table, err)
	}
	defer rows.Close()
	var all [][]*string
	vals := make([]sql.NullString, len(spec.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return TableDigest{}, fmt.Errorf("digest %s: %w", spec.Table, err)
		}
		row := make([]*string, len(vals))
		for i, v := range vals {
			if v.Valid {
				s := v.String
				row[i] = &s
			}
		}
		all = append(all, row)
	}
	if err := rows.Err(); err != nil {
		return TableDigest{}, fmt.Errorf("digest %s: %w", spec.Table, err)
	}
	return TableDigest{Table: spec.Table, Rows: int64(len(all)), SHA256: DigestRows(all)}, nil
}
