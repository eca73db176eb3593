package binlog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/internal/testserver"
)

// TestEveryColumnType: the checks made before decoding (vet.go) follow the
// decoder's layout of every column type MariaDB logs; a real server's rows
// of each type, NULL and not, short and long, inserted, updated and
// deleted, read back whole, by ReadAll and by ReadAllInputs.
func TestEveryColumnType(t *testing.T) {
	f := setup(t, testserver.Options{})
	from := f.position(t)
	f.exec(t, f.db, "CREATE DATABASE ofa_t_types")
	db := f.srv.DB(t, "ofa_t_types")
	members := make([]string, 300) // an ENUM of more than 255 members takes two bytes
	for i := range members {
		members[i] = "'m" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + "'"
	}
	f.exec(t, db, `CREATE TABLE every (
		id INT PRIMARY KEY, ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT UNSIGNED,
		fl FLOAT, db DOUBLE, d1 DECIMAL(10,2), d2 DECIMAL(65,30), b1 BIT(1), b2 BIT(13), b3 BIT(64),
		dt DATE, tm TIME, tm6 TIME(6), dtm DATETIME, dtm3 DATETIME(3), ts TIMESTAMP(6) NULL, yr YEAR,
		c1 CHAR(10), c2 CHAR(255) CHARACTER SET utf8mb4, vc1 VARCHAR(10), vc2 VARCHAR(300) CHARACTER SET utf8mb4,
		bn BINARY(4), vb VARBINARY(300), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
		tt TINYTEXT, tx TEXT, lt LONGTEXT, js JSON, e1 ENUM('a','b'), e2 ENUM(`+strings.Join(members, ",")+`),
		st SET('x','y','z'), g POINT, ip INET6, uu UUID)`)
	f.exec(t, db, `INSERT INTO every VALUES (1, -1, 65535, -8388608, 18446744073709551615,
		1.5, -2.25, 12345678.91, -12345678901234567890.123456789012345678901234567890, 1, 4097, 18446744073709551615,
		'2024-02-29', '-838:59:59', '12:34:56.123456', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999', '2038-01-19 03:14:07.5', 2155,
		'char', REPEAT('é', 255), 'vc', REPEAT('ü', 300),
		x'00ff0102', REPEAT(x'ab', 300), x'01', REPEAT('b', 60000), REPEAT('m', 70000), 'l',
		'tiny', 'text', REPEAT('t', 70000), '{"a":[1,2]}', 'b', 'mzxxxxxxxxxx',
		'x,z', POINT(1,2), '::1', '123e4567-e89b-12d3-a456-426655440000')`)
	f.exec(t, db, `INSERT INTO every (id) VALUES (2)`)
	f.exec(t, db, `UPDATE every SET ti = 7, c2 = 'short', vc2 = NULL, js = '[]', e2 = 'ma', st = '' WHERE id = 1`)
	f.exec(t, db, `UPDATE every SET ti = 8, bl = x'00' WHERE id = 2`)
	f.exec(t, db, `DELETE FROM every`)
	files := f.copyFrom(t, from)

	h, err := binlog.ReadAll(files)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	var changes []binlog.RowChange
	for _, tx := range h.Transactions {
		for _, c := range tx.Changes {
			if c.Table == "every" {
				changes = append(changes, c)
			}
		}
	}
	if len(changes) != 6 {
		t.Fatalf("%d changes of table every; want 2 inserts, 2 updates, 2 deletes", len(changes))
	}
	if got := changes[0].After["c2"]; got != strings.Repeat("é", 255) {
		t.Errorf("c2 = %q; want 255 é", got)
	}
	if got, _ := changes[0].After["bl"].([]byte); len(got) != 60000 {
		t.Errorf("bl of %d bytes; want 60000", len(got))
	}
	if got := changes[0].After["e2"]; got != "mzxxxxxxxxxx" {
		t.Errorf("e2 = %v; want mzxxxxxxxxxx", got)
	}

	in := make([]binlog.Input, len(files))
	for i, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in[i] = binlog.Input{Name: filepath.Base(p), R: bytes.NewReader(b)}
	}
	h2, err := binlog.ReadAllInputs(in)
	if err != nil || len(h2.Transactions) != len(h.Transactions) {
		t.Fatalf("ReadAllInputs = %d transactions, %v; want %d as ReadAll", len(h2.Transactions), err, len(h.Transactions))
	}
}

// TestCompressedBinlog: a server with log_bin_compress=ON logs compressed
// query and rows events; the reader inflates them itself (to check the
// rows before the decoder inflates them again) and reads them whole.
func TestCompressedBinlog(t *testing.T) {
	f := setup(t, testserver.Options{Args: []string{"--log-bin-compress=ON", "--log-bin-compress-min-len=10"}})
	from := f.position(t)
	f.exec(t, f.db, "CREATE DATABASE ofa_t_compressed")
	db := f.srv.DB(t, "ofa_t_compressed")
	f.exec(t, db, "CREATE TABLE c (id INT PRIMARY KEY, body TEXT, n INT)")
	long := strings.Repeat("compressible ", 200)
	f.exec(t, db, "INSERT INTO c VALUES (1, ?, 3)", long)
	f.exec(t, db, "UPDATE c SET n = 2 WHERE id = 1")
	h, err := binlog.ReadAll(f.copyFrom(t, from))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	var ops []binlog.Op
	for _, tx := range h.Transactions {
		for _, c := range tx.Changes {
			if c.Table == "c" {
				ops = append(ops, c.Op)
				if img := c.After; img["body"] != long || img["n"] == nil {
					t.Errorf("%s image %v; want the long body and n", c.Op, img)
				}
			}
		}
	}
	if !reflect.DeepEqual(ops, []binlog.Op{binlog.Insert, binlog.Update}) {
		t.Errorf("changes %v; want an insert and an update", ops)
	}
}
