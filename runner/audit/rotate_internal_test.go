package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// TestKeepBinlogFilesSmall: on the user's own server the audit closes the
// binlog file once it passes its limit, says so on the progress stream,
// and stops when asked (twice is once); on the private server it does
// nothing.
func TestKeepBinlogFilesSmall(t *testing.T) {
	m := infratest.StartMariaDB(t, infratest.MariaDBOptions{})
	cfg, err := mysql.ParseDSN(m.DSN())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := infra.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	db := srv.DB()
	for _, q := range []string{"CREATE DATABASE ofa_t_rot", "CREATE TABLE ofa_t_rot.t (v VARCHAR(200))"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	progress := &strings.Builder{}
	s := &scope{opts: &Options{Progress: progress}, server: srv, own: true, rotateAt: 16 << 10}

	first, err := binlog.CurrentPosition(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	private := &scope{opts: s.opts, server: srv, rotateAt: 1}
	stopPrivate := private.keepBinlogFilesSmall(t.Context())
	time.Sleep(3 * binlog.RotateEvery)
	stopPrivate()
	if pos, err := binlog.CurrentPosition(t.Context(), db); err != nil || pos.File != first.File || progress.Len() > 0 {
		t.Fatalf("on the private server: file %s (from %s), progress %q, %v; want nothing done", pos.File, first.File, progress, err)
	}
	stop := s.keepBinlogFilesSmall(t.Context())
	deadline := time.Now().Add(20 * time.Second)
	for {
		pos, err := binlog.CurrentPosition(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		if pos.File != first.File {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %d bytes, past 16 KiB, and was not closed", pos.File, pos.Pos)
		}
		if _, err := db.Exec("INSERT INTO ofa_t_rot.t VALUES (REPEAT('x', 200))"); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	stop()
	if out := progress.String(); !strings.Contains(out, "closed ") || !strings.Contains(out, "at 16 KiB") || strings.Contains(out, "warning") {
		t.Errorf("progress %q; want the closed files said, no warning", out)
	}
}
