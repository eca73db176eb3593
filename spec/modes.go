package spec

import (
	"fmt"
	"slices"
	"strings"
)

// ConsumerMode is how the consumer of a scenario settles the records of a
// poll: one effect transaction and one offset commit per record, or the
// batched path (the records of a poll in one effect transaction and their
// offsets in one commit per poll; the reference's BatchEffects, what
// `bench` runs). A scenario that runs a consumer (Scenario.Consumes) runs
// in the modes the run selects (`run --consumer-mode`); its run in the
// batched mode is the scenario's batch variant, ID BatchID(id), a
// scenario of its own in the evidence, with its own line, logs and
// database, judged by the same metrics and derivation.
type ConsumerMode string

// The consumer modes.
const (
	ModeRecord ConsumerMode = "record"
	ModeBatch  ConsumerMode = "batch"
)

// ConsumerModes are the values of `run --consumer-mode`: a mode, or both
// (each consumer scenario runs per record, then batched).
const (
	SelectRecord = "record"
	SelectBatch  = "batch"
	SelectBoth   = "both"
)

// batchSuffix ends the id of a scenario's batch variant.
const batchSuffix = "-batch"

// BatchID is the id of the batch variant of the scenario id.
func BatchID(id string) string { return id + batchSuffix }

// BaseID returns the id of the scenario a (possibly variant) id runs, and
// its consumer mode ("" for a scenario without a consumer).
func BaseID(id string) (string, ConsumerMode) {
	if base, ok := strings.CutSuffix(id, batchSuffix); ok {
		return base, ModeBatch
	}
	return id, ""
}

// Mode is the consumer mode s runs in: ModeBatch for a batch variant,
// ModeRecord for another scenario that runs a consumer, "" for one that
// runs none.
func (s Scenario) Mode() ConsumerMode {
	if !s.Consumes {
		return ""
	}
	if _, m := BaseID(s.ID); m != "" {
		return m
	}
	return ModeRecord
}

// Base is the id of the spec entry s runs (s.ID without a variant's
// suffix): the runner's function and the verifier's derivation are its.
func (s Scenario) Base() string {
	base, _ := BaseID(s.ID)
	return base
}

// batchVariant returns the batch variant of s (a scenario that runs a
// consumer).
func (s Scenario) batchVariant() Scenario {
	s.ID = BatchID(s.ID)
	s.Design = nil // the boundary table's row is the per-record run's
	s.Metrics = slices.Clone(s.Metrics)
	for i, m := range s.Metrics {
		if m.Batch != "" {
			s.Metrics[i].Accept = m.Batch
		}
	}
	return s
}

// CheckConsumerMode checks a value of `run --consumer-mode` ("" is
// record).
func CheckConsumerMode(mode string) error {
	switch mode {
	case "", SelectRecord, SelectBatch, SelectBoth:
		return nil
	}
	return fmt.Errorf("unknown consumer mode %q (valid: %s, %s, %s)", mode, SelectRecord, SelectBatch, SelectBoth)
}

// WithModes returns scs with the consumer scenarios in the modes of mode
// (a value of `run --consumer-mode`, "" for record): record keeps scs,
// batch replaces each consumer scenario by its batch variant, both puts
// the variant right after it.
func WithModes(scs []Scenario, mode string) []Scenario {
	if mode == "" || mode == SelectRecord {
		return scs
	}
	var out []Scenario
	has := func(id string) bool { return slices.ContainsFunc(out, func(o Scenario) bool { return o.ID == id }) }
	for _, s := range scs {
		if !s.Consumes || s.Mode() == ModeBatch {
			if !has(s.ID) {
				out = append(out, s)
			}
			continue
		}
		if mode == SelectBoth {
			out = append(out, s)
		}
		if v := s.batchVariant(); !has(v.ID) {
			out = append(out, v)
		}
	}
	return out
}

// ModeIDs returns the ids that a run of the scenarios ids (the default
// selection when empty) in mode selects, in run order: what the verifier
// expects in the evidence.
func ModeIDs(ids []string, mode string) ([]string, error) {
	sel, err := Select(ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range WithModes(sel, mode) {
		out = append(out, s.ID)
	}
	return out, nil
}
