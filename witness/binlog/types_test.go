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

// TestFastRowsTypes: a table of only the column types the fast rows path
// reads (fastrows.go: integers signed and UNSIGNED at each width, CHAR
// short and folded, VARCHAR of one- and two-byte lengths, binary strings,
// TEXT and BLOB of each length prefix, NULLs), inserted, updated and
// deleted: every event is read by both paths (FastRowsCheck, TestMain)
// and must agree, and the values are the ones written, of their types.
func TestFastRowsTypes(t *testing.T) {
	f := setup(t, testserver.Options{})
	from := f.position(t)
	f.exec(t, f.db, "CREATE DATABASE ofa_t_fast")
	db := f.srv.DB(t, "ofa_t_fast")
	f.exec(t, db, `CREATE TABLE fast (
		id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED,
		mi MEDIUMINT, mu MEDIUMINT UNSIGNED, ii INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,
		c1 CHAR(10), c2 CHAR(255) CHARACTER SET utf8mb4, vc1 VARCHAR(10), vc2 VARCHAR(300) CHARACTER SET utf8mb4,
		bn BINARY(4), vb VARBINARY(300), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
		tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT)`)
	f.exec(t, db, `INSERT INTO fast VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
		-9223372036854775808, 18446744073709551615, 'char', REPEAT('é', 255), 'vc', REPEAT('ü', 300),
		x'00ff0102', REPEAT(x'ab', 300), x'01', REPEAT('b', 300), REPEAT('m', 70000), 'l',
		'tiny', REPEAT('t', 300), 'medium', 'long')`)
	f.exec(t, db, `INSERT INTO fast (id, ti, mi) VALUES (2, 127, 8388607), (3, -1, -1)`)
	f.exec(t, db, `UPDATE fast SET ti = 7, c2 = 'short', vc2 = NULL, bl = x'' WHERE id = 1`)
	f.exec(t, db, `DELETE FROM fast`)
	h, err := binlog.ReadAll(f.copyFrom(t, from))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	var changes []binlog.RowChange
	for _, tx := range h.Transactions {
		for _, c := range tx.Changes {
			if c.Table == "fast" {
				changes = append(changes, c)
			}
		}
	}
	if len(changes) != 7 {
		t.Fatalf("%d changes of table fast; want 3 inserts, 1 update, 3 deletes", len(changes))
	}
	want := map[string]any{"ti": int64(-128), "tu": uint64(255), "si": int64(-32768), "su": uint64(65535),
		"mi": int64(-8388608), "mu": uint64(16777215), "ii": int64(-2147483648), "iu": uint64(4294967295),
		"bi": int64(-9223372036854775808), "bu": uint64(18446744073709551615), "c1": "char", "c2": strings.Repeat("é", 255),
		"vc2": strings.Repeat("ü", 300), "bn": []byte{0, 0xff, 1, 2}, "lb": []byte("l"), "tx": strings.Repeat("t", 300), "lt": "long"}
	for col, v := range want {
		if got := changes[0].After[col]; !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v; want %#v", col, got, v)
		}
	}
	if got := changes[2].After; got["ti"] != int64(-1) || got["mi"] != int64(-1) || got["c1"] != nil {
		t.Errorf("row 3 = %v; want ti -1, mi -1, c1 NULL", got)
	}
	if got := changes[3].After; got["c2"] != "short" || got["vc2"] != nil || !reflect.DeepEqual(got["bl"], []byte{}) {
		t.Errorf("the update's after image %v; want c2 short, vc2 NULL, bl empty", got)
	}
}
