package binlog_test

import (
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

// exampleBinlog is the committed example run's binlog: a few hundred
// transactions of a real server.
const exampleBinlog = "../../evidence/example/u80/witness/db/binlog.000001"

func exampleInputs(t *testing.T) []binlog.Input {
	t.Helper()
	f, err := os.Open(exampleBinlog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []binlog.Input{{Name: "binlog.000001", R: f}}
}

// ownCopy copies a streamed transaction out of the Changes and row
// images the scan reuses once fn returns (an empty Changes as nil, as a
// whole read gives it).
func ownCopy(tx binlog.Transaction) binlog.Transaction {
	tx.Changes = slices.Clone(tx.Changes)
	if len(tx.Changes) == 0 {
		tx.Changes = nil
	}
	for i, c := range tx.Changes {
		tx.Changes[i].Before, tx.Changes[i].After = maps.Clone(c.Before), maps.Clone(c.After)
	}
	return tx
}

// TestStreamedPipe: the streamed read hands fn its transactions from a
// goroutine of its own, the Changes and images of three transactions
// turning: fn sees exactly the transactions of a whole read, in order,
// each intact for the time of its call; fn's error stops the read and is
// what the read returns, fn not called again.
func TestStreamedPipe(t *testing.T) {
	h, err := binlog.ReadAllInputsAllowingGaps(exampleInputs(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Transactions) < 50 {
		t.Fatalf("%d transactions in %s; want a longer binlog", len(h.Transactions), exampleBinlog)
	}
	var streamed []binlog.Transaction
	if _, err := binlog.ScanInputsAllowingGaps(exampleInputs(t), func(tx binlog.Transaction) error {
		streamed = append(streamed, ownCopy(tx))
		return nil
	}); err != nil {
		t.Fatalf("ScanInputsAllowingGaps: %v", err)
	}
	if len(streamed) != len(h.Transactions) {
		t.Fatalf("streamed %d transactions, read %d", len(streamed), len(h.Transactions))
	}
	for i := range streamed {
		if !reflect.DeepEqual(streamed[i], h.Transactions[i]) {
			t.Fatalf("transaction %d streamed\n%#v\nread\n%#v", i, streamed[i], h.Transactions[i])
		}
	}

	stop := errors.New("stop here")
	for _, at := range []int{0, 1, 2, 3, len(h.Transactions) / 2, len(h.Transactions) - 1} {
		calls := 0
		_, err := binlog.ScanInputsAllowingGaps(exampleInputs(t), func(tx binlog.Transaction) error {
			calls++
			if !reflect.DeepEqual(tx.GTID, h.Transactions[calls-1].GTID) {
				t.Errorf("call %d: %s; want %s", calls, tx.GTID, h.Transactions[calls-1].GTID)
			}
			if calls-1 == at {
				return stop
			}
			return nil
		})
		if err != stop || calls != at+1 {
			t.Errorf("fn failing at transaction %d: read returned %v after %d calls; want the error itself after %d", at, err, calls, at+1)
		}
	}
}
