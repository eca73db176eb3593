package bench

import (
	"fmt"
	"io"
	"time"
)

// Result is what a run measured; `orderflow-audit bench --json` prints it
// as one object (README.md documents every field).
type Result struct {
	RunID      string `json:"run_id"`
	Events     int    `json:"events"`
	Relays     int    `json:"relays"`
	Consumers  int    `json:"consumers"`
	Batch      int    `json:"batch"`
	Partitions int    `json:"partitions"`
	History    int    `json:"history"`
	Clients    int    `json:"clients"`
	RelayOnly  bool   `json:"relay_only"`
	// ConsumerBatch: the consumers settle a polled batch in one
	// transaction (else one per record).
	ConsumerBatch bool    `json:"consumer_batch"`
	LingerMS      float64 `json:"linger_ms"`
	Database      string  `json:"database"`
	Broker        string  `json:"broker"`

	PlacementEventsPerS float64 `json:"placement_events_per_s"`
	RelayEventsPerS     float64 `json:"relay_events_per_s"`
	ConsumerEventsPerS  float64 `json:"consumer_events_per_s"`
	EndToEndEventsPerS  float64 `json:"end_to_end_events_per_s"`
	// PlacementUnderLoadEventsPerS is the placement rate of the end-to-end
	// phase, with the relays and consumers running.
	PlacementUnderLoadEventsPerS float64 `json:"placement_under_load_events_per_s"`
	P50CommitToEffectMS          float64 `json:"p50_commit_to_effect_ms"`
	P99CommitToEffectMS          float64 `json:"p99_commit_to_effect_ms"`
	MaxCommitToEffectMS          float64 `json:"max_commit_to_effect_ms"`

	// Seconds of each phase, and of seeding the history.
	Phases Phases `json:"phases_s"`
	// Check is the run's own check of its effects.
	Check Check `json:"check"`
	// LogDir is where the event logs are, when kept.
	LogDir string `json:"log_dir,omitempty"`
}

// Phases are the durations of a run's phases, in seconds.
type Phases struct {
	History   float64 `json:"history"`
	Placement float64 `json:"placement"`
	Relay     float64 `json:"relay"`
	Consumers float64 `json:"consumers"`
	EndToEnd  float64 `json:"end_to_end"`
}

// Check is the run's check of its own outcome, on the scratch database
// and the topic.
type Check struct {
	// Events are the intents the run placed (2 × Options.Events expected).
	Events int64 `json:"events"`
	// Sent are those SENT; Effects the notifications; Inbox the inbox rows.
	Sent    int64 `json:"sent"`
	Effects int64 `json:"effects"`
	Inbox   int64 `json:"inbox"`
	// Missing: events without an effect; Duplicates: events with more than
	// one; Orphans: effects of no event of the run.
	Missing    int64 `json:"missing"`
	Duplicates int64 `json:"duplicates"`
	Orphans    int64 `json:"orphans"`
	// Records on the topic (a record published twice, after a lost
	// acknowledgement, counts twice; the inbox absorbs it).
	Records int64 `json:"records"`
	// OK: every event placed is SENT and has exactly one effect and one
	// inbox row, and no effect is without its event.
	OK bool `json:"ok"`
	// Problems says what is wrong when not OK.
	Problems []string `json:"problems,omitempty"`
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// WriteText prints r for a reader, one figure a line.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench %s: %d events per phase, %d relays (batch %d), %d consumers, %d partitions, %d SENT rows of history, %d placement clients\n",
		r.RunID, r.Events, r.Relays, r.Batch, r.Consumers, r.Partitions, r.History, r.Clients)
	fmt.Fprintf(w, "database: %s; broker: %s\n", r.Database, r.Broker)
	if r.RelayOnly {
		fmt.Fprintf(w, "relay only:             %9.0f events/s (%.2f s)\n", r.RelayEventsPerS, r.Phases.Relay)
		r.writeCheck(w)
		return
	}
	fmt.Fprintf(w, "placement only:         %9.0f events/s (%.2f s)\n", r.PlacementEventsPerS, r.Phases.Placement)
	fmt.Fprintf(w, "relay only:             %9.0f events/s (%.2f s)\n", r.RelayEventsPerS, r.Phases.Relay)
	// The rate counts from the first effect; the phase includes the
	// group's join, which a small run spends most of its time in.
	apply := 0.0
	if r.ConsumerEventsPerS > 0 {
		apply = float64(r.Events) / r.ConsumerEventsPerS
	}
	fmt.Fprintf(w, "consumers only:         %9.0f events/s (%d events in %.2f s from the first effect; the phase, with the group's join, %.2f s)\n",
		r.ConsumerEventsPerS, r.Events, apply, r.Phases.Consumers)
	fmt.Fprintf(w, "end to end:             %9.0f events/s (%.2f s; placement meanwhile %.0f/s)\n",
		r.EndToEndEventsPerS, r.Phases.EndToEnd, r.PlacementUnderLoadEventsPerS)
	fmt.Fprintf(w, "commit to effect:       p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.P50CommitToEffectMS, r.P99CommitToEffectMS, r.MaxCommitToEffectMS)
	r.writeCheck(w)
}

func (r *Result) writeCheck(w io.Writer) {
	c := r.Check
	verdict := "OK: every event has exactly one effect"
	if r.RelayOnly {
		verdict = "OK: every intent SENT and on the topic (relay only: no effects)"
	}
	if !c.OK {
		verdict = "FAILED"
	}
	if r.RelayOnly {
		fmt.Fprintf(w, "check: %s (%d intents, %d SENT, %d records)\n", verdict, c.Events, c.Sent, c.Records)
	} else {
		fmt.Fprintf(w, "check: %s (%d events, %d SENT, %d effects, %d inbox rows, %d records; missing %d, duplicated %d, orphan %d)\n",
			verdict, c.Events, c.Sent, c.Effects, c.Inbox, c.Records, c.Missing, c.Duplicates, c.Orphans)
	}
	for _, p := range c.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	if r.LogDir != "" {
		fmt.Fprintf(w, "event logs kept in %s\n", r.LogDir)
	}
}
