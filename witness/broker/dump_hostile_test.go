package broker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const dumpHeader = `{"kind":"header","format":"orderflow-audit/broker-dump","version":1}` + "\n"

// smallDump is a real dump of a small log, the seed of the dump cases.
func smallDump(t testing.TB) []byte {
	t.Helper()
	l := &Log{
		Topics: map[string][]Partition{"t": {{Topic: "t", Partition: 0, Start: 0, End: 3, ControlOffsets: []int64{2},
			Records: []Record{
				{Topic: "t", Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1).UTC(),
					Headers: []Header{{Key: "h", Value: []byte("x")}}},
				{Topic: "t", Partition: 0, Offset: 1, Value: []byte{}, Timestamp: time.UnixMilli(2).UTC()},
			}}}},
		Groups: map[string]map[string]map[int32]int64{"g": {"t": {0: 2}}},
	}
	var b bytes.Buffer
	if err := WriteDump(&b, l); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadDumpFromHostile(t *testing.T) {
	manyTopics := func() []byte {
		var b strings.Builder
		b.WriteString(dumpHeader)
		for i := range MaxTopics + 1 {
			fmt.Fprintf(&b, `{"kind":"partition","topic":"t%d","partition":0,"start":0,"end":0}`+"\n", i)
		}
		fmt.Fprintf(&b, `{"kind":"end","partitions":%d,"records":0,"group_offsets":0}`+"\n", MaxTopics+1)
		return []byte(b.String())
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"more topics than MaxTopics", manyTopics(), ErrLimit},
		{"topic ../evil", []byte(dumpHeader + `{"kind":"partition","topic":"../evil","partition":0,"start":0,"end":0}` + "\n"), ErrBadDump},
		{"control offset outside the partition", []byte(dumpHeader +
			`{"kind":"partition","topic":"t","partition":0,"start":0,"end":1,"control_offsets":[5]}` + "\n"), ErrBadDump},
		{"trailer declares 2^62 records", []byte(dumpHeader +
			`{"kind":"end","partitions":0,"records":4611686018427387904,"group_offsets":0}` + "\n"), ErrTruncatedDump},
		{"partition number 2^31-1", []byte(dumpHeader +
			`{"kind":"partition","topic":"t","partition":2147483647,"start":0,"end":0}` + "\n"), ErrBadDump},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ReadDumpFrom(bytes.NewReader(c.data)); !errors.Is(err, c.want) {
				t.Fatalf("ReadDumpFrom = %v; want %v", err, c.want)
			}
		})
	}
	t.Run("over the size limit", func(t *testing.T) {
		good := smallDump(t)
		if _, err := decodeDumpLimited(bytes.NewReader(good), int64(len(good))); err != nil {
			t.Fatalf("at the limit: %v", err)
		}
		if _, err := decodeDumpLimited(bytes.NewReader(good), int64(len(good)-1)); !errors.Is(err, ErrLimit) {
			t.Fatalf("one byte over: %v; want ErrLimit", err)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "kafka.jsonl")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		done := make(chan error, 1)
		go func() { _, err := ReadDump(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrBadDump) {
				t.Errorf("ReadDump(FIFO) = %v; want ErrBadDump", err)
			}
		case <-time.After(10 * time.Second):
			w, _ := os.OpenFile(p, os.O_WRONLY, 0) // let the reader go
			w.Close()
			t.Fatal("ReadDump(FIFO) blocked")
		}
	})
}

// FuzzReadDumpFrom: whatever the bytes, ReadDumpFrom returns a log or an
// error wrapping a sentinel, and a log it returns writes and reads back.
func FuzzReadDumpFrom(f *testing.F) {
	good := smallDump(f)
	f.Add(good)
	lines := bytes.SplitAfter(good, []byte("\n"))
	f.Add(bytes.Join(lines[:len(lines)-2], nil))
	f.Add([]byte(dumpHeader + `{"kind":"end","partitions":0,"records":0,"group_offsets":0}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := ReadDumpFrom(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadDump) && !errors.Is(err, ErrTruncatedDump) && !errors.Is(err, ErrLimit) {
				t.Fatalf("ReadDumpFrom = %v; want a sentinel", err)
			}
			return
		}
		var b bytes.Buffer
		if err := WriteDump(&b, log); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadDumpFrom(&b); err != nil {
			t.Fatalf("a dump read, written again, does not read back: %v", err)
		}
	})
}
