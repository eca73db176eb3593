package reports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"unsafe"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// buildTimeline draws one scenario: its logs merged as the verifier merges
// them (evidence.Merge: the earliest head by time, a tie to the earlier
// log, each log in its file order), each read as a stream, keeping only
// what the diagram draws.
func buildTimeline(sc evidence.Scenario, logs LogSource) Timeline {
	tl := Timeline{Scenario: sc.ID, Status: sc.Status}
	if len(sc.Logs) == 0 {
		return tl
	}
	if logs == nil {
		tl.Problems = append(tl.Problems, "the event logs were not available to the report")
		return tl
	}
	readers := make([]*logReader, len(sc.Logs))
	mls := make([]evidence.MergeLog, len(sc.Logs))
	for i, ref := range sc.Logs {
		readers[i] = &logReader{ref: ref}
		mls[i] = evidence.MergeLog{Ref: ref, Open: func() (io.ReadCloser, error) { return logs.Open(ref) }}
	}
	pool := evidence.NewPool(runtime.GOMAXPROCS(0), func() evidence.Decoder { return lineDecoder{} })
	defer pool.Close()
	ctx := context.Background()
	merge := pool.Merge(ctx, mls, readOptions, func(i int, e evidence.LineError) { readers[i].lineError(e) })
	b := newTimelineBuilder()
	for {
		i, d, _ := merge.Next(ctx) // no error: ctx never ends
		if d == nil {
			break
		}
		b.add(logEvent{Event: d.Event, log: i})
		tl.addNemesis(d.Event)
	}
	for i, st := range merge.Close() {
		r := readers[i]
		r.finish(st)
		tl.Problems = append(tl.Problems, r.problems...)
		tl.Unreadable += r.unreadable
	}
	tl.Problems = append(tl.Problems, b.problems()...)
	tl.Events = b.total
	if b.total > 0 {
		d := b.diagram()
		tl.Mermaid, tl.Invariants, tl.Footnotes = d.lines, d.invariants, d.footnotes
		tl.Drawn, tl.Tabulated, tl.Collapsed, tl.Summarised = d.drawn, d.tabulated, d.collapsed, d.summarised
	}
	return tl
}

// readOptions are how the report reads a log: every line, however many
// are bad; a final line cut off without its newline is drawn when it is a
// whole event; small batches, so that the memory a report needs stays that
// of what it draws (the verifier's large ones are for throughput).
var readOptions = evidence.ReadOptions{DecodeCut: true, BatchLines: 128}

// lineDecoder decodes a line with evidence.DecodeEvent, strictly, and
// nothing more: the report draws what the actors logged, and leaves the
// schema to the verifier.
type lineDecoder struct{}

var errEmptyLine = errors.New("the line is empty")

// Fast implements evidence.Decoder: there is no fast path.
func (lineDecoder) Fast(string, *evidence.Decoded) bool { return false }

// Full implements evidence.Decoder.
func (lineDecoder) Full(line string, d *evidence.Decoded) error {
	// DecodeEvent neither keeps nor changes raw: it may share line.
	raw := unsafe.Slice(unsafe.StringData(line), len(line))
	if len(bytes.TrimSpace(raw)) == 0 {
		return errEmptyLine
	}
	e, err := evidence.DecodeEvent(raw)
	if err != nil {
		return err
	}
	d.Event = e
	return nil
}

// logReader names what could not be read of one event log.
type logReader struct {
	ref        evidence.LogRef
	unreadable int // lines that are not valid events
	problems   []string
	cutBad     bool // the cut final line is not a valid event
	// Unreadable lines beyond the first maxNamedLines are counted here and
	// named by their range.
	unnamed             int
	firstUnnamed, lastN int64
}

// maxNamedLines is how many unreadable lines of one log are named one by
// one; the others are counted, with their range.
const maxNamedLines = 10

// maxErrText bounds the decoder's message quoted for an unreadable line
// (it may quote a field name of any length).
const maxErrText = 200

// lineError counts and names a line that is not a valid event; reading
// goes on after it.
func (r *logReader) lineError(e evidence.LineError) {
	if e.Cut {
		r.cutBad = true
		r.bad(e.Line, fmt.Sprintf(", the final line, is truncated (no newline, as a process killed mid-write leaves it) and is not a valid event: %s; not drawn", decodeText(e.Err)))
		return
	}
	r.bad(e.Line, " is not a valid event: "+decodeText(e.Err))
}

// finish names what ended the log: a final line cut off without its
// newline, a line over evidence.MaxLineBytes or an error.
func (r *logReader) finish(st evidence.LogStats) {
	if st.OpenErr != nil {
		r.problems = append(r.problems, fmt.Sprintf("%s: not read: %v", r.ref.Path, st.OpenErr))
		return
	}
	r.flushUnnamed()
	switch {
	case st.Truncated > 0 && !r.cutBad:
		r.problems = append(r.problems, fmt.Sprintf("line %d of %s, the final line, lacks its newline but is a whole event: drawn", st.Truncated, r.ref.Path))
	case st.Truncated > 0:
	case st.TooLong > 0:
		r.unreadable++
		r.problems = append(r.problems, fmt.Sprintf("line %d of %s exceeds 1 MiB: not read, and neither is the rest of the log", st.TooLong, r.ref.Path))
	case st.ReadErr != nil:
		r.problems = append(r.problems, fmt.Sprintf("%s: reading stopped after line %d: %v; the rest of the log is not read", r.ref.Path, st.Read, st.ReadErr))
	}
}

// bad counts an unreadable line and names it ("line <no> of <path>"
// followed by what), or counts it in the range of unnamed ones once
// maxNamedLines are named.
func (r *logReader) bad(no int64, what string) {
	r.unreadable++
	if r.unreadable <= maxNamedLines {
		r.problems = append(r.problems, fmt.Sprintf("line %d of %s%s", no, r.ref.Path, what))
		return
	}
	if r.unnamed == 0 {
		r.firstUnnamed = no
	}
	r.unnamed++
	r.lastN = no
}

func (r *logReader) flushUnnamed() {
	switch {
	case r.unnamed == 1:
		r.problems = append(r.problems, fmt.Sprintf("1 more line of %s is not a valid event (line %d)", r.ref.Path, r.firstUnnamed))
	case r.unnamed > 1:
		r.problems = append(r.problems, fmt.Sprintf("%d more lines of %s are not valid events (lines %d to %d)", r.unnamed, r.ref.Path, r.firstUnnamed, r.lastN))
	}
	r.unnamed = 0
}

// decodeText is the decoder's message for a line, cut to maxErrText.
func decodeText(err error) string {
	s := err.Error()
	if r := []rune(s); len(r) > maxErrText {
		s = string(r[:maxErrText]) + "…"
	}
	return s
}
