package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

func TestMermaidText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text: ok", "plain text: ok"},
		{"a; b", "a#59; b"},
		{"#1", "#35;1"},
		{"a<b>c", "a#60;b#62;c"},
		{`say "hi"`, "say #34;hi#34;"},
		{"100%", "100#37;"},
		{"two\nlines\r\nhere", "two lines here"},
		{"#59;", "#35;59#59;"},
	}
	for _, tt := range tests {
		if got := mtext(tt.in); got != tt.want {
			t.Errorf("mtext(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// memLogs serves events from memory, one log per path, encoded as JSON
// Lines as evidence.Log writes them.
type memLogs map[string][]evidence.Event

func (m memLogs) Open(ref evidence.LogRef) (io.ReadCloser, error) {
	es, ok := m[ref.Path]
	if !ok {
		return nil, errors.New("no such log")
	}
	return io.NopCloser(bytes.NewReader(encodeLines(es...))), nil
}

// encodeLines encodes events as the lines of a log.
func encodeLines(es ...evidence.Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range es {
		if err := enc.Encode(&e); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// TestTimeline draws small logs and checks the diagram's lines, what is
// drawn and what is counted; one table of cases, hence its length.
func TestTimeline(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p32 := evidence.Ptr[int32]
	p64 := evidence.Ptr[int64]

	// Many ordinary events with a stale mark and a replay in the middle.
	var long []evidence.Event
	for i := range 60 {
		long = append(long, evidence.Event{Seq: int64(i + 1), Time: at(i), Actor: "relay-A", Kind: evidence.KindClaim,
			EventID: fmt.Sprintf("e-%d", i), ClaimVersion: p64(1), ClaimID: "c1", StateBefore: evidence.StatePending})
	}
	long[30] = evidence.Event{Seq: 31, Time: at(30), Actor: "relay-A", Kind: evidence.KindMark, EventID: "e-1", ClaimVersion: p64(1), ClaimID: "c1", Rows: p64(0)}

	tests := []struct {
		name      string
		logs      map[string][]evidence.Event
		wantDrawn int
		want      []string
		notWant   []string
		footnotes []string
	}{
		{
			name: "two logs merged by time",
			logs: map[string][]evidence.Event{
				"a.jsonl": {
					{Seq: 1, Time: at(1), Actor: "relay-A", Kind: evidence.KindPublish, EventID: "e-1", ClaimVersion: p64(1), ClaimID: "0123456789abcdef", Topic: "t", Partition: p32(0), Offset: p64(5)},
					{Seq: 2, Time: at(3), RunID: "r1", Actor: "relay-A", Kind: evidence.KindPublish, EventID: "e-1", ClaimVersion: p64(2), ClaimID: "relay-b-r1", Topic: "t", Err: "timeout; broker said #no"},
				},
				"b.jsonl": {
					{Seq: 1, Time: at(2), Actor: "consumer-1", Kind: evidence.KindReceive, EventID: "e-1", OrderID: p64(1), Topic: "t", Partition: p32(0), Offset: p64(5), Consumer: "g"},
					{Seq: 2, Time: at(4), RunID: "r1", Actor: "consumer-1", Kind: evidence.KindReceive, EventID: "e-1", OrderID: p64(1), Topic: "t", Partition: p32(0), Offset: p64(5), Consumer: "notify-r1"},
					{Seq: 3, Time: at(5), RunID: "r1", Actor: "consumer-1", Kind: evidence.KindOffsetCommit, Topic: "t", Partition: p32(0), Offset: p64(6), Consumer: "a-very-long-consumer-group-name-r1"},
				},
			},
			wantDrawn: 5,
			want: []string{
				"participant a1 as relay-A\n    participant a2 as consumer-1\n    participant kafka as kafka\n",
				"a1->>kafka: publish e-1 v1: p0@5\n    kafka->>a2: receive e-1 p0@5\n    a1-xkafka: publish e-1 v2 failed [1]\n    kafka->>a2: REPLAY receive e-1 p0@5\n    a2->>kafka: commit p0 next 6",
			},
			notWant:   []string{"participant db"},
			footnotes: []string{"timeout; broker said #no"},
		},
		{
			name: "long scenario summarised, notable kept",
			logs: map[string][]evidence.Event{"a.jsonl": long},
			// The head and the tail are runs of similar claims: each
			// drawn by its first and last event around a fold note.
			wantDrawn: 2 + 1 + 2,
			want: []string{
				"a1->>db: claim e-0 v1/c1\n    Note over a1: … 13 more claims\n    a1->>db: claim e-14 v1/c1\n",
				"Note over a1,db: … 15 more events [1]\n    rect rgb(255, 225, 225)\n    a1-xdb: mark e-1 v1/c1: 0 rows, stale\n    end\n    Note over a1,db: … 14 more events [2]",
			},
			footnotes: []string{"15 events not drawn one by one: claim=15", "14 events not drawn one by one: claim=14"},
		},
		{
			name: "a publish of unknown outcome is drawn, never folded",
			logs: map[string][]evidence.Event{"a.jsonl": {
				{Seq: 1, Time: at(1), Actor: "relay-A", Kind: evidence.KindPublishUnknown, EventID: "e-1", ClaimVersion: p64(1), ClaimID: "c1", Topic: "t", Err: "context deadline exceeded"},
				{Seq: 2, Time: at(2), Actor: "relay-A", Kind: evidence.KindPublishUnknown, EventID: "e-2", ClaimVersion: p64(1), ClaimID: "c1", Topic: "t", Err: "context deadline exceeded"},
			}},
			wantDrawn: 2,
			want:      []string{"participant kafka as kafka", "a1-xkafka: publish e-1 v1: outcome unknown [1]\n    a1-xkafka: publish e-2 v1: outcome unknown [2]"},
			footnotes: []string{"context deadline exceeded", "context deadline exceeded"},
		},
		{
			name: "invariants grouped, violation flagged",
			logs: map[string][]evidence.Event{"a.jsonl": {
				{Seq: 1, Time: at(1), Actor: "scenario", Kind: evidence.KindInvariant, Invariant: "orphan-sent", Rows: p64(0)},
				{Seq: 2, Time: at(2), Actor: "scenario", Kind: evidence.KindInvariant, Invariant: "duplicated-effects", Rows: p64(2)},
				{Seq: 3, Time: at(3), Actor: "scenario", Kind: evidence.KindFault, Point: "p", Detail: "d"},
			}},
			wantDrawn: 1,
			want:      []string{"Note over a1: FAULT p [1]"},
			notWant:   []string{"orphan-sent"},
			footnotes: []string{"d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := evidence.Scenario{ID: "s", Status: evidence.StatusPass}
			total := 0
			for _, p := range []string{"a.jsonl", "b.jsonl"} {
				if es, ok := tt.logs[p]; ok {
					sc.Logs = append(sc.Logs, evidence.LogRef{Path: p})
					total += len(es)
				}
			}
			tl := buildTimeline(sc, memLogs(tt.logs))
			if tl.Events != total || tl.Drawn != tt.wantDrawn {
				t.Errorf("events %d drawn %d; want %d and %d", tl.Events, tl.Drawn, total, tt.wantDrawn)
			}
			if !slices.Equal(tl.Footnotes, tt.footnotes) {
				t.Errorf("footnotes %q; want %q", tl.Footnotes, tt.footnotes)
			}
			body := strings.Join(tl.Mermaid, "\n")
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("diagram lacks\n%s\ngot:\n%s", w, body)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("diagram contains %q:\n%s", w, body)
				}
			}
			// Every event is drawn, tabulated or counted in a note.
			counted := 0
			for _, l := range tl.Mermaid {
				var n int
				if i := strings.Index(l, ": … "); i >= 0 && strings.Contains(l, " more ") {
					fmt.Sscanf(l[i+len(": … "):], "%d", &n)
				}
				counted += n
			}
			if counted != tl.Collapsed+tl.Summarised || tl.Drawn+tl.Tabulated+counted != tl.Events {
				t.Errorf("drawn %d + tabulated %d + counted in notes %d (collapsed %d, summarised %d) != events %d",
					tl.Drawn, tl.Tabulated, counted, tl.Collapsed, tl.Summarised, tl.Events)
			}
		})
	}
}

func TestOffsetSet(t *testing.T) {
	var s offsetSet
	steps := []struct {
		add   int64
		delta int
		spans [][2]int64
	}{
		{5, 1, [][2]int64{{5, 5}}},
		{6, 0, [][2]int64{{5, 6}}},
		{9, 1, [][2]int64{{5, 6}, {9, 9}}},
		{4, 0, [][2]int64{{4, 6}, {9, 9}}},
		{8, 0, [][2]int64{{4, 6}, {8, 9}}},
		{7, -1, [][2]int64{{4, 9}}},
		{math.MinInt64, 1, [][2]int64{{math.MinInt64, math.MinInt64}, {4, 9}}},
		{math.MaxInt64, 1, [][2]int64{{math.MinInt64, math.MinInt64}, {4, 9}, {math.MaxInt64, math.MaxInt64}}},
	}
	for _, st := range steps {
		if s.contains(st.add) {
			t.Fatalf("contains(%d) before add", st.add)
		}
		if d := s.add(st.add); d != st.delta || !slices.Equal(s.spans, st.spans) {
			t.Fatalf("add(%d) = %d, spans %v; want %d, %v", st.add, d, s.spans, st.delta, st.spans)
		}
		if !s.contains(st.add) {
			t.Fatalf("contains(%d) after add = false", st.add)
		}
	}
	for _, x := range []int64{3, 10, 0, math.MaxInt64 - 1} {
		if s.contains(x) {
			t.Errorf("contains(%d) = true", x)
		}
	}
	if !s.adjacent(10) || !s.adjacent(3) || s.adjacent(11) {
		t.Errorf("adjacent(10, 3, 11) = %v %v %v; want true true false", s.adjacent(10), s.adjacent(3), s.adjacent(11))
	}
}

// TestUnreadableLines: every line that is not a valid event is counted
// and named, reading goes on after it, and the count shows in the
// timeline's summary; a cut-off final line is named as truncated. One
// table of cases, hence its length.
func TestUnreadableLines(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := func(seq int) evidence.Event {
		return evidence.Event{Seq: int64(seq), Time: t0.Add(time.Duration(seq) * time.Millisecond), Actor: "relay-a",
			Kind: evidence.KindFault, Point: "p", Detail: fmt.Sprint(seq)}
	}
	good := func(seqs ...int) []byte {
		var b []byte
		for _, s := range seqs {
			b = append(b, encodeLines(ev(s))...)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	last := good(4)
	var many []byte
	for range 15 {
		many = append(many, "garbage\n"...)
	}
	const path = "u80/normalChain/relay-a.jsonl"
	tests := []struct {
		name             string
		data             []byte
		events, unread   int
		problems         []string
		header, noHeader string
	}{
		{
			name: "garbage in the middle", data: cat(good(1, 2), []byte("{\"seq\": 3, garbage\n"), good(4, 5)),
			events: 4, unread: 1,
			problems: []string{"line 3 of " + path + " is not a valid event: invalid character 'g'"},
			header:   "4 events, all drawn; 1 line of the logs is not a valid event (named below) and is not drawn",
		},
		{
			name: "unknown field and an empty line", data: cat(good(1), []byte(`{"seq":2,"bogus":1}`+"\n\n"), good(3)),
			events: 2, unread: 2,
			problems: []string{"line 2 of " + path + ` is not a valid event: json: unknown field "bogus"`,
				"line 3 of " + path + " is not a valid event: the line is empty"},
			header: "2 events, all drawn; 2 lines of the logs are not valid events (named below) and are not drawn",
		},
		{
			name: "truncated final line", data: cat(good(1, 2, 3), last[:len(last)/2]),
			events: 3, unread: 1,
			problems: []string{"line 4 of " + path + ", the final line, is truncated (no newline, as a process killed mid-write leaves it)"},
			header:   "3 events, all drawn; 1 line of the logs is not a valid event",
		},
		{
			name: "complete final event without newline", data: cat(good(1, 2), last[:len(last)-1]),
			events: 3, unread: 0,
			problems: []string{"line 3 of " + path + ", the final line, lacks its newline but is a whole event: drawn"},
			header:   "3 events, all drawn</summary>", noHeader: "is not a valid event:",
		},
		{
			name: "only garbage", data: []byte("x\ny\n"),
			events: 0, unread: 2,
			problems: []string{"line 1 of " + path, "line 2 of " + path},
			header:   "no events; 2 lines of the logs are not valid events (named below) and are not drawn",
		},
		{
			name: "many bad lines: the first named, the rest counted", data: cat(good(1), many, good(2)),
			events: 2, unread: 15,
			problems: []string{"line 11 of " + path + " is not a valid event", "5 more lines of " + path + " are not valid events (lines 12 to 16)"},
			header:   "15 lines of the logs are not valid events",
		},
		{
			name: "line over 1 MiB", data: cat(good(1), bytes.Repeat([]byte("x"), evidence.MaxLineBytes+10), []byte("\n"), good(3)),
			events: 1, unread: 1,
			problems: []string{"line 2 of " + path + " exceeds 1 MiB: not read, and neither is the rest of the log"},
			header:   "1 event, all drawn; 1 line of the logs is not a valid event",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := evidence.Scenario{ID: "normalChain", Status: evidence.StatusPass, Logs: []evidence.LogRef{{Path: path, Actor: "relay-a"}}}
			tl := buildTimeline(sc, fakeLogs{path: {data: tt.data}})
			if tl.Events != tt.events || tl.Unreadable != tt.unread {
				t.Errorf("events %d unreadable %d; want %d and %d (problems %q)", tl.Events, tl.Unreadable, tt.events, tt.unread, tl.Problems)
			}
			all := strings.Join(tl.Problems, "\n")
			for _, p := range tt.problems {
				if !strings.Contains(all, p) {
					t.Errorf("problems lack %q:\n%s", p, all)
				}
			}
			var buf bytes.Buffer
			p := &printer{w: bufio.NewWriter(&buf), r: &Report{Verified: true, Timelines: []Timeline{tl}}}
			p.timeline(sc, tl)
			p.w.Flush()
			if !strings.Contains(buf.String(), tt.header) {
				t.Errorf("timeline lacks %q:\n%s", tt.header, buf.String())
			}
			if tt.noHeader != "" && strings.Contains(buf.String(), tt.noHeader) {
				t.Errorf("timeline has %q:\n%s", tt.noHeader, buf.String())
			}
		})
	}
}
