package checks

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// historyBase is the time of a history's first event; events without a
// "time" follow it a millisecond apart.
var historyBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// loadHistory reads a hand-written history: one event per line, seq and
// time filled in when absent.
func loadHistory(t *testing.T, path string) []evidence.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evidence.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e evidence.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		if e.Seq == 0 {
			e.Seq = int64(len(out) + 1)
		}
		if e.Time.IsZero() {
			e.Time = historyBase.Add(time.Duration(len(out)) * time.Millisecond)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readList(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestHistories replays every recorded history under testdata/histories
// (one directory each: events.jsonl, want, optional fault_points) and
// compares the rules the model reports with want.
func TestHistories(t *testing.T) {
	dirs, err := filepath.Glob("testdata/histories/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no histories: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			events := loadHistory(t, filepath.Join(dir, "events.jsonl"))
			want := readList(t, filepath.Join(dir, "want"))
			m := NewModel(readList(t, filepath.Join(dir, "fault_points")))
			for i := range events {
				m.Step(&events[i], Source{Log: "events.jsonl", Line: int64(i + 1), Seq: events[i].Seq})
			}
			m.Finish(false)
			vs, _ := m.Violations()
			var got []string
			for _, v := range vs {
				got = append(got, v.Rule)
				if v.Source.Seq == 0 || v.Message == "" {
					t.Errorf("violation %+v lacks its seq or message", v)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				for _, v := range vs {
					t.Logf("%s at %s: %s", v.Rule, v.Source, v.Message)
				}
				t.Fatalf("rules = %v; want %v", got, want)
			}
		})
	}
}

// TestFinishTruncated: a missing cause is inconclusive when a log was cut.
func TestFinishTruncated(t *testing.T) {
	events := loadHistory(t, "testdata/histories/receive-without-publish/events.jsonl")
	for _, truncated := range []bool{false, true} {
		m := NewModel(nil)
		for i := range events {
			m.Step(&events[i], Source{Seq: events[i].Seq})
		}
		m.Finish(truncated)
		vs, _ := m.Violations()
		want := Fail
		if truncated {
			want = Inconclusive
		}
		if len(vs) != 1 || vs[0].Status != want {
			t.Fatalf("truncated=%v: violations %+v; want one %s", truncated, vs, want)
		}
	}
}

func TestViolationCap(t *testing.T) {
	m := NewModel(nil)
	e := evidence.Event{Kind: evidence.KindClaim, EventID: "e-404", ClaimVersion: evidence.Ptr[int64](1)}
	for i := range 1000 {
		m.Step(&e, Source{Seq: int64(i + 1)})
	}
	vs, more := m.Violations()
	if len(vs) != maxViolationsPerRule || more["unknown-intent"] != 1000-maxViolationsPerRule {
		t.Fatalf("kept %d, suppressed %v; want %d kept and the rest counted", len(vs), more, maxViolationsPerRule)
	}
}

func TestModelTables(t *testing.T) {
	events := loadHistory(t, "testdata/histories/ok-send-before-mark-crash/events.jsonl")
	m := NewModel([]string{"after-publish-before-mark"})
	for i := range events {
		m.Step(&events[i], Source{Seq: events[i].Seq})
	}
	got := map[string][][]any{}
	for _, tr := range m.Tables() {
		got[tr.Table] = tr.Rows
	}
	want := map[string][][]any{
		"stock":               {{"SKU", int64(9)}},
		"orders":              {{int64(1), "SKU", int64(1)}},
		"order_lines":         {{int64(1), "SKU", int64(1)}},
		"idempotency_records": {{"k1", int64(1), int64(201)}},
		"outbox":              {{"e-1", int64(1), "SENT", int64(2), "relay-b"}},
		"inbox":               {{"notifier", "e-1"}},
		"notification":        {{int64(1), "notifier", "e-1", int64(1)}},
	}
	for table, rows := range want {
		if !slices.EqualFunc(got[table], rows, func(a, b []any) bool { return slices.Equal(a, b) }) {
			t.Errorf("%s = %v; want %v", table, got[table], rows)
		}
	}
	if es := m.stateOf("e-1"); es.deliveries != 2 || es.effects != 1 || m.replays != 0 || m.KeyIntent() != "e-1" {
		t.Errorf("deliveries %d effects %d replays %d key %q; want 2, 1, 0, e-1",
			es.deliveries, es.effects, m.replays, m.KeyIntent())
	}
}

// TestConcurrentStock: orders that log out of commit order leave the
// lowest stock any of them reported.
func TestConcurrentStock(t *testing.T) {
	events := loadHistory(t, "testdata/histories/ok-concurrent-stock/events.jsonl")
	m := NewModel(nil)
	for i := range events {
		m.Step(&events[i], Source{Seq: events[i].Seq})
	}
	if got := m.stock["SKU"]; got != 7 {
		t.Fatalf("stock = %d; want 7 (the lowest reported)", got)
	}
}
