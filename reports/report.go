// Package reports renders an evidence file and the verifier's verdict on it
// as GitHub-flavoured Markdown for review: summary, observation lines, the
// boundary table, invariants, the proof-boundary matrix, one Mermaid
// timeline per scenario and per-scenario details.
//
// Build collects everything a report shows into a Report; Render writes it.
// Both are deterministic: no clock is read, and everything without a given
// order is sorted, so the same evidence, verdict and logs always give the
// same bytes.
package reports

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/orderflow-audit/orderflow-audit/checks"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/spec"
)

// LogSource opens the event logs referenced by the evidence. The report
// reads a scenario's logs through the verifier's merge (evidence.Merge,
// each line decoded with evidence.DecodeEvent), as streams, and keeps only
// what its timeline draws, so the memory a report needs does not grow with
// its logs.
type LogSource interface {
	Open(ref evidence.LogRef) (io.ReadCloser, error)
}

// ErrRefused marks an event log the report does not read: its path leaves
// the evidence directory, as written or once symbolic links are resolved,
// or it is not a regular file.
var ErrRefused = errors.New("refused")

// DirLogs reads logs from files relative to dir, the directory of the
// evidence file. Only regular files inside dir are read: a path that is
// not local to dir (absolute, or climbing out with ".."), one that
// resolves outside dir through a symbolic link, and anything but a regular
// file (a FIFO, a device, a directory) are refused with ErrRefused before
// they are opened.
type DirLogs string

// Open implements LogSource.
func (d DirLogs) Open(ref evidence.LogRef) (io.ReadCloser, error) {
	rel := filepath.FromSlash(ref.Path)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%w: the path is not inside the evidence directory", ErrRefused)
	}
	dir, err := filepath.EvalSymlinks(cmp.Or(string(d), "."))
	if err != nil {
		return nil, fmt.Errorf("resolve evidence directory: %w", err)
	}
	target, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		return nil, fmt.Errorf("resolve event log: %w", err)
	}
	inside, err := filepath.Rel(dir, target)
	if err != nil || !filepath.IsLocal(inside) {
		return nil, fmt.Errorf("%w: it resolves through a symbolic link to a path outside the evidence directory", ErrRefused)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("stat event log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", ErrRefused, fi.Mode().Type())
	}
	// Open through a root at dir: a link swapped in after the checks
	// still cannot lead out of it, and O_NONBLOCK keeps a FIFO swapped in
	// from blocking the open.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open evidence directory: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(inside, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		f.Close()
		return nil, fmt.Errorf("%w: the file changed while it was being opened", ErrRefused)
	}
	return f, nil
}

// FromFile renders the evidence file at path under the verdict v, reading
// its event logs relative to the file through the bundle's gate. The verdict must come from the
// verifier run on the same file (the report shows it, and never shows
// unverified evidence as passing). Bad input wraps evidence.ErrBadInput.
func FromFile(path string, v *checks.Verdict) ([]byte, error) {
	b, err := bundle.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", evidence.ErrBadInput, err)
	}
	defer b.Close()
	ev, err := evidence.Parse(b.Evidence())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Markdown(ev, v, BundleLogs{B: b})
}

// Report is everything a rendered report shows, computed by Build.
type Report struct {
	// Verdict is the verifier's verdict on the evidence; Verified is true
	// only when its status is PASS.
	Verdict  checks.Verdict
	Verified bool

	Tool        evidence.Tool
	Run         evidence.Run
	Environment evidence.Environment
	// Audited says what was audited: the system under test, the suites and
	// the run (evidence.Evidence.Audited), for the title.
	Audited string
	// Counts are recomputed from the scenarios; Claimed is the summary
	// the evidence states (the verifier compares them).
	Counts  evidence.Summary
	Claimed evidence.Summary

	// Lines are the observation lines exactly as in the evidence, in
	// scenario order.
	Lines      []string
	Boundaries []evidence.Boundary
	Invariants []InvariantRow
	Proof      []evidence.ProofRow
	Timelines  []Timeline
	Scenarios  []evidence.Scenario
	// Witness is what the database and the broker recorded of the run, as
	// the evidence lists it (nil: none).
	Witness *evidence.Witness

	// Order lists the indexes of Scenarios in report order: the U80 suite
	// first (the scenarios the report is about), then EXT, then U79, then
	// any other suite; evidence order within a suite. Anchors[i] is the
	// anchor of the section of Scenarios[i].
	Order   []int
	Anchors []string

	// Findings are the rules of the verifier's reasons per scenario id.
	Findings map[string]Finding
	// Refuted are the scenarios claimed PASS for which the verifier has
	// FAIL reasons; Undecided those for which it has only INCONCLUSIVE
	// ones. Both in evidence order.
	Refuted   []string
	Undecided []string
}

// Finding lists the distinct rules of the verifier's reasons about one
// scenario, sorted, by status.
type Finding struct {
	Fail         []string
	Inconclusive []string
}

// InvariantRow is one invariant aggregated over the scenarios that ran it.
type InvariantRow struct {
	ID       string
	Meaning  string
	Live     string
	Replayed string
	// Holds is true when every scenario with invariant results has this
	// one live and replayed, with 0 rows both ways.
	Holds bool
}

// Timeline is the sequence diagram of one scenario.
type Timeline struct {
	Scenario string
	Status   string
	// Events is the number of events read from the scenario's logs. Each
	// is drawn one by one (Drawn), or is an invariant result in the table
	// under the diagram (Tabulated), or is counted in a note: one that
	// folds a run of similar events (Collapsed) or one that summarises the
	// middle of a long scenario (Summarised).
	Events                                  int
	Drawn, Tabulated, Collapsed, Summarised int
	// Unreadable is the number of lines of the scenario's logs that are
	// not valid events (a truncated final line included); they are not
	// drawn, and Problems names them.
	Unreadable int
	// Problems name the logs that could not be read completely and the
	// lines that are not valid events.
	Problems []string
	// Mermaid holds the lines of the sequenceDiagram, without the fence;
	// empty when there is nothing to draw.
	Mermaid []string
	// Invariants are the live invariant results the scenario logged, in
	// log order, shown as a table under the diagram.
	Invariants []TimelineInvariant
	// Nemesis lists the faults the chaos scenario's nemesis injected and
	// healed (fault and heal events of the actor nemesis), in time order,
	// all of them up to maxNemesisLines: a long timeline cannot draw them
	// all.
	Nemesis []string
	// Footnotes are the texts too long for the diagram, numbered from 1
	// in the order their markers appear in it.
	Footnotes []string
}

// TimelineInvariant is one invariant result logged by a scenario.
type TimelineInvariant struct {
	Actor, ID string
	Rows      *int64
}

// invariantMeanings are the meanings of docs/scenarios.md, used when the
// verdict does not carry one.
var invariantMeanings = map[string]string{
	"orphan-sent":          "a SENT intent whose order does not exist (decoys, aggregate_id -1, excluded)",
	"sent-without-effect":  "a SENT intent with no notification for its event by an inbox consumer (one row per event and consumer)",
	"effect-without-inbox": "a notification with no inbox row for its (consumer, event)",
	"duplicated-effects":   "an event id with more than one notification by one inbox consumer (one row per consumer and event id)",
	"orphan-effects":       "a notification whose order does not exist",
	"order-without-intent": "a committed order with no outbox intent e-<id>",
	"inbox-without-effect": "an inbox row with no notification (dedupe recorded, effect lost)",
}

// invariantOrder is the order of docs/scenarios.md; other ids follow,
// sorted.
var invariantOrder = []string{
	"orphan-sent", "sent-without-effect", "effect-without-inbox", "duplicated-effects",
	"orphan-effects", "order-without-intent", "inbox-without-effect",
}

// Build collects the report of ev under the verdict v, reading each
// scenario's events from logs (nil: no timelines). A log that cannot be read
// does not stop the report: the problem is shown in the scenario's
// timeline. Build returns an error only when ev or v is missing.
func Build(ev *evidence.Evidence, v *checks.Verdict, logs LogSource) (*Report, error) {
	if ev == nil {
		return nil, errors.New("build report: no evidence")
	}
	if v == nil {
		return nil, errors.New("build report: no verdict (the report shows the verifier's verdict; run it first)")
	}
	r := &Report{
		Verdict:     *v,
		Verified:    v.Status == checks.Pass,
		Tool:        ev.Tool,
		Run:         ev.Run,
		Environment: ev.Environment,
		Audited:     ev.Audited(),
		Counts:      evidence.Summarize(ev.Scenarios),
		Claimed:     ev.Summary,
		Boundaries:  ev.Boundaries,
		Proof:       ev.ProofBoundary,
		Scenarios:   ev.Scenarios,
		Witness:     ev.Witness,
	}
	r.Order, r.Anchors = sectionOrder(ev.Scenarios)
	for _, sc := range ev.Scenarios {
		r.Lines = append(r.Lines, sc.Line)
	}
	r.Invariants = invariantRows(ev, v)
	r.Findings = findings(v)
	for _, sc := range ev.Scenarios {
		if sc.Status != evidence.StatusPass {
			continue
		}
		switch f := r.Findings[sc.ID]; {
		case len(f.Fail) > 0:
			r.Refuted = append(r.Refuted, sc.ID)
		case len(f.Inconclusive) > 0:
			r.Undecided = append(r.Undecided, sc.ID)
		}
	}
	for _, sc := range ev.Scenarios {
		r.Timelines = append(r.Timelines, buildTimeline(sc, logs))
	}
	return r, nil
}

// suiteRank orders suites in the report: U80, EXT, U79, others.
var suiteRank = map[string]int{spec.SuiteU80: 0, spec.SuiteEXT: 1, spec.SuiteU79: 2}

// sectionOrder returns the report order of scs and the anchor of each
// scenario's section heading ("<suite> <id>"); a heading that repeats
// gets GitHub's suffix -1, -2...
func sectionOrder(scs []evidence.Scenario) ([]int, []string) {
	order := make([]int, len(scs))
	for i := range order {
		order[i] = i
	}
	rank := func(s string) int {
		if r, ok := suiteRank[s]; ok {
			return r
		}
		return len(suiteRank)
	}
	sort.SliceStable(order, func(a, b int) bool { return rank(scs[order[a]].Suite) < rank(scs[order[b]].Suite) })
	anchors := make([]string, len(scs))
	seen := map[string]int{}
	for _, i := range order {
		a := anchor(sectionHeading(scs[i]))
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors[i] = a
	}
	return order, anchors
}

// sectionHeading is the heading of a scenario's section, as read.
func sectionHeading(sc evidence.Scenario) string {
	return strings.TrimSpace(sc.Suite + " " + sc.ID)
}

// index returns the index in Scenarios of the first scenario with id.
func (r *Report) index(id string) (int, bool) {
	if id == "" {
		return 0, false
	}
	for i, sc := range r.Scenarios {
		if sc.ID == id {
			return i, true
		}
	}
	return 0, false
}

// findings collects the rules of v's reasons per scenario (reasons about
// the whole run name no scenario and are not included).
func findings(v *checks.Verdict) map[string]Finding {
	out := map[string]Finding{}
	for _, x := range v.Reasons {
		if x.Scenario == "" {
			continue
		}
		f := out[x.Scenario]
		switch x.Status {
		case checks.Fail:
			f.Fail = addRule(f.Fail, x.Rule)
		case checks.Inconclusive:
			f.Inconclusive = addRule(f.Inconclusive, x.Rule)
		}
		out[x.Scenario] = f
	}
	return out
}

// addRule inserts rule into the sorted set rules.
func addRule(rules []string, rule string) []string {
	i, found := slices.BinarySearch(rules, rule)
	if found {
		return rules
	}
	return slices.Insert(rules, i, rule)
}
