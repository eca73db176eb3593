package evidence_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// strictDecoder has no fast path: every line goes to DecodeEvent.
type strictDecoder struct{}

func (strictDecoder) Fast(string, *evidence.Decoded) bool { return false }

func (strictDecoder) Full(line string, d *evidence.Decoded) error {
	e, err := evidence.DecodeEvent([]byte(line))
	if err != nil {
		return err
	}
	d.Event = e
	return nil
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// line is an event of actor at t0+ms, as a log line.
func line(actor string, seq, ms int) string {
	return fmt.Sprintf(`{"seq":%d,"time":%q,"run_id":"r","scenario":"s","actor":%q,"kind":"fault","point":"p","detail":"d"}`+"\n",
		seq, t0.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano), actor)
}

func memLog(path, data string) evidence.MergeLog {
	return evidence.MergeLog{Ref: evidence.LogRef{Path: path}, Open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(data)), nil
	}}
}

// TestMerge: events in time order, a tie to the log listed first, each log
// in its file order (even when its times go back); bad lines go to the
// error callback with their log, in file order; each log's digest and line
// count are those of its bytes; an unopenable log is reported as such.
func TestMerge(t *testing.T) {
	a := line("a", 1, 10) + line("a", 2, 30) + "garbage\n" + line("a", 3, 20) // times go back: file order kept
	b := line("b", 1, 10) + "\n" + line("b", 2, 25)
	logs := []evidence.MergeLog{memLog("a", a), memLog("b", b),
		{Ref: evidence.LogRef{Path: "c"}, Open: func() (io.ReadCloser, error) { return nil, errors.New("no such log") }}}
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			pool := evidence.NewPool(workers, func() evidence.Decoder { return strictDecoder{} })
			defer pool.Close()
			var errs []string
			m := pool.Merge(t.Context(), logs, evidence.ReadOptions{BatchLines: 1}, func(i int, e evidence.LineError) {
				errs = append(errs, fmt.Sprintf("%d:%d", i, e.Line))
			})
			var got []string
			for {
				i, d, err := m.Next(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					break
				}
				got = append(got, fmt.Sprintf("%d:%s%d@%d", i, d.Event.Actor, d.Event.Seq, d.Line))
			}
			stats := m.Close()
			want := []string{"0:a1@1", "1:b1@1", "1:b2@3", "0:a2@2", "0:a3@4"}
			if !slices.Equal(got, want) {
				t.Errorf("merged %v; want %v", got, want)
			}
			if !slices.Equal(errs, []string{"1:2", "0:3"}) {
				t.Errorf("bad lines %v; want [1:2 0:3]", errs)
			}
			for i, data := range []string{a, b} {
				sum := sha256.Sum256([]byte(data))
				if st := stats[i]; st.SHA256 != hex.EncodeToString(sum[:]) || st.Lines != int64(strings.Count(data, "\n")) || st.Full != st.Lines {
					t.Errorf("log %d: stats %+v; want the digest and %d lines", i, st, strings.Count(data, "\n"))
				}
			}
			if stats[2].OpenErr == nil {
				t.Error("the unopenable log has no OpenErr")
			}
		})
	}
}

// TestMergeCancel: a merge stopped early by its context returns the
// context's error and Close still returns.
func TestMergeCancel(t *testing.T) {
	var big strings.Builder
	for i := 1; i <= 5000; i++ {
		big.WriteString(line("a", i, i))
	}
	pool := evidence.NewPool(2, func() evidence.Decoder { return strictDecoder{} })
	defer pool.Close()
	ctx, cancel := context.WithCancel(t.Context())
	m := pool.Merge(ctx, []evidence.MergeLog{memLog("a", big.String())}, evidence.ReadOptions{}, nil)
	if _, d, err := m.Next(ctx); err != nil || d == nil {
		t.Fatalf("first event: %v, %v", d, err)
	}
	cancel()
	var err error
	for err == nil {
		var d *evidence.Decoded
		if _, d, err = m.Next(ctx); d == nil && err == nil {
			break // the whole log was decoded ahead: nothing to wait for
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v; want context.Canceled", err)
	}
	m.Close()
}

// TestReadLog: the cut final line of a killed process, the line bound and
// a line over MaxLineBytes.
func TestReadLog(t *testing.T) {
	whole := line("a", 1, 1) + line("a", 2, 2)
	cutEvent := strings.TrimSuffix(line("a", 3, 3), "\n")
	tests := []struct {
		name        string
		data        string
		opt         evidence.ReadOptions
		events      []int64 // seqs
		errs        []string
		st          evidence.LogStats // Truncated, TooLong, Full, Read compared
		errContains string
	}{
		{name: "cut line not decoded", data: whole + cutEvent[:20], events: []int64{1, 2},
			st: evidence.LogStats{Read: 3, Truncated: 3, Full: 2}},
		{name: "cut line decoded: not an event", data: whole + cutEvent[:20], opt: evidence.ReadOptions{DecodeCut: true},
			events: []int64{1, 2}, errs: []string{"3 cut"}, st: evidence.LogStats{Read: 3, Truncated: 3, Full: 3}},
		{name: "cut line decoded: a whole event", data: whole + cutEvent, opt: evidence.ReadOptions{DecodeCut: true},
			events: []int64{1, 2, 3}, st: evidence.LogStats{Read: 3, Truncated: 3, Full: 3}},
		{name: "full lines bounded", data: "x\n" + whole + "y\nz\n", opt: evidence.ReadOptions{MaxFullLines: 2},
			events: []int64{1}, errs: []string{"1"}, st: evidence.LogStats{Read: 5, Full: 5}},
		{name: "line too long", data: line("a", 1, 1) + strings.Repeat("x", evidence.MaxLineBytes+1) + "\n" + line("a", 2, 2),
			events: []int64{1}, st: evidence.LogStats{Read: 1, TooLong: 2, Full: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				seqs []int64
				errs []string
			)
			st := evidence.ReadLog(t.Context(), strings.NewReader(tt.data), strictDecoder{}, tt.opt, func(d *evidence.Decoded, e *evidence.LineError) {
				if e != nil {
					s := fmt.Sprint(e.Line)
					if e.Cut {
						s += " cut"
					}
					errs = append(errs, s)
					return
				}
				seqs = append(seqs, d.Event.Seq)
			})
			if !slices.Equal(seqs, tt.events) || !slices.Equal(errs, tt.errs) {
				t.Errorf("events %v, bad lines %v; want %v and %v", seqs, errs, tt.events, tt.errs)
			}
			if st.Read != tt.st.Read || st.Truncated != tt.st.Truncated || st.TooLong != tt.st.TooLong || st.Full != tt.st.Full {
				t.Errorf("stats %+v; want %+v", st, tt.st)
			}
			if sum := sha256.Sum256([]byte(tt.data)); st.SHA256 != hex.EncodeToString(sum[:]) || st.Lines != int64(bytes.Count([]byte(tt.data), []byte{'\n'})) {
				t.Errorf("digest and lines %s %d do not cover the whole file", st.SHA256, st.Lines)
			}
		})
	}
}

// TestDecodedBox: the boxes of one event are distinct and survive Reset
// only as values the next event overwrites.
func TestDecodedBox(t *testing.T) {
	var d evidence.Decoded
	ps := make([]*int64, 9)
	for i := range ps {
		ps[i] = d.Box(int64(i))
	}
	for i, p := range ps {
		if *p != int64(i) {
			t.Fatalf("box %d holds %d", i, *p)
		}
	}
	a, b := d.Box32(1), d.Box32(2)
	ta, tb := d.BoxTime(t0), d.BoxTime(t0.Add(time.Second))
	if a == b || *a != 1 || *b != 2 || ta == tb || !ta.Equal(t0) {
		t.Fatalf("two boxes of one event share storage")
	}
	d.Reset()
	if d.Box(7) != ps[0] {
		t.Error("Reset did not reuse the storage")
	}
}
