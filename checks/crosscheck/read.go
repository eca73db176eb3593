package crosscheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Witnesses is what Read derived from a bundle's witnesses. A nil db or
// broker means that witness is missing or unusable; the reason is among
// those Read returned.
type Witnesses struct {
	db     *dbHistory
	broker *broker.Log
	// private is set when the database ran for this run alone (its whole
	// binlog after the start position must belong to the run).
	private bool
}

// HasDatabase reports whether the database's witness (the binlog) was
// read; false for nil.
func (w *Witnesses) HasDatabase() bool { return w != nil && w.db != nil }

// HasBroker reports whether the broker's witness was read; false for nil.
func (w *Witnesses) HasBroker() bool { return w != nil && w.broker != nil }

// Broker returns the broker's log as read; nil when that witness is
// missing or unusable (or w is nil).
func (w *Witnesses) Broker() *broker.Log {
	if w == nil {
		return nil
	}
	return w.broker
}

// Crashes returns the server crashes the binlog shows (the binlog files a
// crash ended), or -1 when the database is not witnessed.
func (w *Witnesses) Crashes() int {
	if !w.HasDatabase() {
		return -1
	}
	return w.db.crashes
}

// dbHistory is the binlog of the run, cut by database.
type dbHistory struct {
	// bySchema holds, for each database of the run, the transactions after
	// the start position that touch it, cut down to it (in log order).
	bySchema map[string][]binlog.Transaction
	first    binlog.GTID
	last     binlog.GTID
	// crashes are the server crashes the binlog shows (Crashes).
	crashes int
}

// Where a bundle keeps its witnesses, relative to the directory of the
// evidence file's logs ("u80/witness/db" beside u80.json).
const (
	witnessDBDir     = "witness/db"
	witnessKafkaDir  = "witness/kafka"
	witnessKafkaDump = "witness/kafka.jsonl"
)

// Read runs steps 1 to 3 on the bundle b (whose evidence is ev) and
// returns what it derived, with the reasons it found (in a fixed order).
// The verifier runs it beside its evidence-level checks: the broker's
// directory is served by a kfake cluster to be read, which takes a tenth
// of a second.
func Read(ctx context.Context, ev *evidence.Evidence, b *bundle.Bundle) (*Witnesses, []finding.Reason) {
	wc := &witnessChecker{ev: ev, b: b,
		base: strings.TrimSuffix(filepath.Base(b.Path()), ".json")}
	ws := &Witnesses{private: ev.Environment.Database.Mode == evidence.DatabasePrivate}
	w := ev.Witness
	if w != nil && w.Database != nil {
		if wc.files("database", w.Database.Files, wc.dbDir()) {
			ws.db = wc.readDatabase(w.Database.Files)
		}
	}
	if w != nil && w.Broker != nil {
		if wc.files("broker", w.Broker.Files, wc.brokerDir()) {
			ws.broker = wc.readBroker(ctx)
		}
	}
	if ws.db != nil {
		wc.databaseBelongs(ws)
	}
	if ws.broker != nil {
		wc.brokerBelongs(ws.broker)
	}
	return ws, wc.reasons
}

// Missing returns what the evidence ev says could not be witnessed, one
// entry per witness ("database: why"): the witnesses it says were lost, and
// those it does not list.
func Missing(ev *evidence.Evidence) []string {
	w := ev.Witness
	if w == nil {
		return []string{"database and broker: the evidence has no witness object"}
	}
	out := slices.Clone(w.Missing)
	if w.Database == nil && !slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "database") }) {
		out = append(out, "database: no binlog witness listed")
	}
	if w.Broker == nil && !slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "broker") }) {
		out = append(out, "broker: no broker witness listed")
	}
	return out
}

// witnessChecker collects the reasons of steps 1 to 3.
type witnessChecker struct {
	ev *evidence.Evidence
	// b is the bundle's gate, through which every witness file is read.
	b *bundle.Bundle
	// base is the bundle's log directory beside the evidence file: its
	// name without .json ("u80" for u80.json), as the runner names it.
	base    string
	reasons []finding.Reason
}

func (wc *witnessChecker) failWitness(rule, where, format string, args ...any) {
	wc.reasons = append(wc.reasons, finding.Reason{Rule: rule, Status: finding.Fail, Witness: where, Message: fmt.Sprintf(format, args...)})
}

// dbDir and brokerDir are the witness directories (or the one file of a
// dump) the files of each witness must be in, relative to the evidence
// file: <base>/witness/db, <base>/witness/kafka, <base>/witness/kafka.jsonl.
func (wc *witnessChecker) dbDir() string { return path.Join(wc.base, witnessDBDir) }

func (wc *witnessChecker) brokerDir() string {
	if wc.ev.Witness.Broker.Source == evidence.WitnessKafkaDump {
		return path.Join(wc.base, witnessKafkaDump)
	}
	return path.Join(wc.base, witnessKafkaDir)
}

// files checks one witness's files (step 1) through the bundle's gate and
// returns their paths on disk when every one is whole: beneath dir (a
// directory, or the one file of a dump), a regular file with one link
// reached through no symlink, of the recorded size and sha256 (the size
// from fstat before a byte is read, the sha256 before any parser sees
// one), and nothing in dir left unlisted or that is not a directory or a
// regular file.
func (wc *witnessChecker) files(name string, files []evidence.WitnessFile, dir string) bool {
	ok := len(files) > 0
	if !ok {
		wc.failWitness("witness-file-missing", dir, "the %s witness lists no file", name)
	}
	listed := map[string]bool{}
	for _, f := range files {
		if f.Path != dir && !strings.HasPrefix(f.Path, dir+"/") {
			wc.failWitness("witness-path", f.Path, "the %s witness file %s is not under %s, where the bundle keeps it", name, f.Path, dir)
			ok = false
			continue
		}
		listed[f.Path] = true
		if _, err := wc.b.Verified(f.Path, f.Size, f.SHA256); err != nil {
			wc.refused(name, f, err)
			ok = false
			continue
		}
	}
	if !wc.unlisted(name, dir, listed) {
		ok = false
	}
	return ok
}

// refused is the reason for a witness file the gate refused.
func (wc *witnessChecker) refused(name string, f evidence.WitnessFile, err error) {
	var be *bundle.Error
	errors.As(err, &be)
	switch {
	case errors.Is(err, bundle.ErrMissing):
		wc.failWitness("witness-file-missing", f.Path, "the %s witness file %s does not exist: the witness was deleted or moved (%v)", name, f.Path, err)
	case errors.Is(err, bundle.ErrSize) && be != nil:
		wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-size", Status: finding.Fail, Witness: f.Path, Field: "size",
			Claimed: fmt.Sprint(f.Size), Recomputed: be.Got,
			Message: fmt.Sprintf("the %s witness file has %s bytes; the evidence recorded %d: it was cut or changed after the run", name, be.Got, f.Size)})
	case errors.Is(err, bundle.ErrDigest) && be != nil:
		wc.reasons = append(wc.reasons, finding.Reason{Rule: "witness-digest", Status: finding.Fail, Witness: f.Path, Field: "sha256",
			Claimed: f.SHA256, Recomputed: be.Got,
			Message: fmt.Sprintf("the %s witness file's sha256 differs from the one the evidence recorded: it was changed after the run", name)})
	default:
		wc.failWitness("witness-path", f.Path, "rejected %s witness path: %v", name, err)
	}
}

// unlisted reports what lies under dir (relative to the evidence file)
// that the evidence does not list, or that is neither a directory nor a
// regular file: a reader of the directory would read it. The listing goes
// through the gate and follows no link.
func (wc *witnessChecker) unlisted(name, dir string, listed map[string]bool) bool {
	l, err := wc.b.List(dir)
	switch {
	case errors.Is(err, bundle.ErrMissing) || errors.Is(err, bundle.ErrNotDirectory):
		return true // a dump is one file; a missing directory's files are reported missing
	case err != nil:
		wc.failWitness("witness-path", dir, "the %s witness directory cannot be listed: %v", name, err)
		return false
	}
	ok := true
	for _, err := range l.Refused {
		var be *bundle.Error
		if errors.As(err, &be) && listed[be.Path] {
			continue // refused above, when it was verified
		}
		where := dir
		if be != nil {
			where = be.Path
		}
		wc.failWitness("witness-path", where, "the %s witness directory holds what the verifier does not read: %v", name, err)
		ok = false
	}
	for _, rel := range l.Files {
		if listed[rel] {
			continue
		}
		wc.failWitness("witness-unlisted", rel, "the %s witness directory holds %s, which the evidence does not list: "+
			"the reader would take it for part of the witness", name, rel)
		ok = false
	}
	return ok
}

// readDatabase reads the binlog files (step 2), once files has verified
// each of them and found nothing else in their directory: the binlog
// reader gets the gate's verified bytes, never a path.
func (wc *witnessChecker) readDatabase(files []evidence.WitnessFile) *dbHistory {
	h, err := readBinlog(wc.b, files)
	if err != nil {
		wc.failWitness("witness-damaged", wc.dbDir(), "the database witness cannot be read as the run's binlog: %v "+
			"(nothing it would show after that point can be witnessed)", err)
		return nil
	}
	return wc.cut(h)
}

// ReadBinlog reads the verified binlog files in their sequence order, as
// one history (not cut by database): what the witness-only layer reads.
func ReadBinlog(b *bundle.Bundle, files []evidence.WitnessFile) (binlog.History, error) {
	return readBinlog(b, files)
}

// readBinlog reads the verified binlog files in their sequence order.
func readBinlog(b *bundle.Bundle, files []evidence.WitnessFile) (binlog.History, error) {
	in, err := binlogInputs(b, files)
	if err != nil {
		return binlog.History{}, err
	}
	return binlog.ReadAllInputs(in)
}

// binlogInputs verifies files through the gate and returns them as the
// binlog reader's inputs, sorted into their one sequence by name.
func binlogInputs(b *bundle.Bundle, files []evidence.WitnessFile) ([]binlog.Input, error) {
	verified, err := b.Inputs(files)
	if err != nil {
		return nil, err
	}
	in := make([]binlog.Input, len(verified))
	for i, v := range verified {
		in[i] = binlog.Input{Name: v.Name, R: v.R}
	}
	return binlog.InSequence(in)
}

// cut keeps the transactions after the start position, by database.
func (wc *witnessChecker) cut(h binlog.History) *dbHistory {
	dw := wc.ev.Witness.Database
	start := binlog.Position{File: dw.StartFile, Pos: dw.StartPos}
	out := &dbHistory{bySchema: map[string][]binlog.Transaction{}, crashes: crashedFiles(h.Files)}
	var after []binlog.Transaction
	for _, t := range h.Transactions {
		if t.After(start) {
			after = append(after, t)
		}
	}
	wc.gtidRange(after, h)
	if len(after) > 0 {
		out.first, out.last = after[0].GTID, after[len(after)-1].GTID
	}
	for _, t := range after {
		for _, s := range txSchemas(t) {
			if cut, ok := t.ForSchema(s); ok {
				out.bySchema[s] = append(out.bySchema[s], cut)
			}
		}
	}
	return out
}

// crashedFiles counts the binlog files a server crash ended.
func crashedFiles(files []binlog.FileInfo) int {
	n := 0
	for _, f := range files {
		if f.Closed == "crash" {
			n++
		}
	}
	return n
}

// txSchemas returns the databases a transaction touches: its row changes'
// and its statements' default databases, and the database a CREATE or
// DROP DATABASE names.
func txSchemas(t binlog.Transaction) []string {
	out := t.Schemas()
	for _, s := range t.Statements {
		if !slices.Contains(out, s.Schema) {
			out = append(out, s.Schema)
		}
	}
	return out
}

// readBroker reads the broker's data directory or dump (step 2) from the
// files the gate verified in step 1, and from nothing else: the reader is
// given the verified bytes (an fs.FS of exactly the listed files, or the
// dump's reader), never a path it could follow, copy or repair.
func (wc *witnessChecker) readBroker(ctx context.Context) *broker.Log {
	bw := wc.ev.Witness.Broker
	var (
		log *broker.Log
		err error
	)
	switch bw.Source {
	case evidence.WitnessKafkaDump:
		var in []bundle.Input
		if len(bw.Files) != 1 {
			err = fmt.Errorf("a dump is one file, %d are listed", len(bw.Files))
		} else if in, err = wc.b.Inputs(bw.Files); err == nil {
			log, err = broker.ReadDumpFrom(in[0].R)
		}
	default:
		var fsys fs.FS
		if fsys, err = wc.b.FS(wc.brokerDir(), bw.Files); err == nil {
			log, err = broker.ReadDataFS(ctx, fsys, broker.Selection{})
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		wc.failWitness("witness-damaged", wc.brokerDir(), "the broker witness cannot be read: %v", err)
		return nil
	}
	return log
}
