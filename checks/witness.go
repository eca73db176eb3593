package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// The witness step (verifier step 5, design principle 6): the database's
// binary log and the broker's own log, listed in the evidence's witness
// object, are the history; the actors' logs are claims held against it.
//
//  1. witnessFiles: every listed file is inside the bundle, exists, and has
//     the size and sha256 the evidence recorded; no file of a witness
//     directory is left unlisted.
//  2. readWitnesses: the binlog files are read into transactions
//     (witness/binlog) and the broker's directory or dump into records and
//     group offsets (witness/broker); a reader's refusal is witness-damaged.
//  3. databaseBelongs, brokerBelongs: the witnesses are this run's: its
//     server, a GTID range without gap from gtid_start to gtid_end, its
//     databases ofa_<run id>_<scenario> and topics ofa.<run id>.<scenario>,
//     and nothing of another run or of a scenario the evidence leaves out.
//  4. per scenario (witness_scenario.go): the cross-checks of every actor
//     event against the history, and the end state rebuilt from the binlog.

// witnessSet is what the verifier derived from the witnesses. A nil db or
// broker means that witness is missing or unusable; the reason is already
// in the verdict.
type witnessSet struct {
	db     *dbHistory
	broker *broker.Log
	// private is set when the database ran for this run alone (its whole
	// binlog after the start position must belong to the run).
	private bool
}

// dbHistory is the binlog of the run, cut by database.
type dbHistory struct {
	// bySchema holds, for each database of the run, the transactions after
	// the start position that touch it, cut down to it (in log order).
	bySchema map[string][]binlog.Transaction
	first    binlog.GTID
	last     binlog.GTID
	// crashes are the server crashes the binlog shows (proof.go).
	crashes int
}

// Where a bundle keeps its witnesses, relative to the directory of the
// evidence file's logs ("u80/witness/db" beside u80.json).
const (
	witnessDBDir     = "witness/db"
	witnessKafkaDir  = "witness/kafka"
	witnessKafkaDump = "witness/kafka.jsonl"
)

// readWitnesses is readWitnessSet; a variable so that tests of the
// cross-checks, which edit logs only, can read a fixture's witnesses once.
var readWitnesses = readWitnessSet

// readWitnessSet runs steps 1 to 3 and returns what it derived, with the
// reasons it found (in a fixed order), and the witnesses that are missing.
// It runs beside the evidence-level checks (Verify starts it first): the
// broker's directory is served by a kfake cluster to be read, which takes
// a tenth of a second.
func readWitnessSet(ctx context.Context, ev *evidence.Evidence, path, realDir string) (*witnessSet, []Reason, []string) {
	wc := &witnessChecker{ev: ev, dir: filepath.Dir(path), realDir: realDir,
		base: strings.TrimSuffix(filepath.Base(path), ".json")}
	ws := &witnessSet{private: ev.Environment.Database.Mode == evidence.DatabasePrivate}
	missing := wc.missing()
	w := ev.Witness
	if w != nil && w.Database != nil {
		if paths, ok := wc.files("database", w.Database.Files, wc.dbDir()); ok {
			ws.db = wc.readDatabase(paths)
		}
	}
	if w != nil && w.Broker != nil {
		if paths, ok := wc.files("broker", w.Broker.Files, wc.brokerDir()); ok {
			ws.broker = wc.readBroker(ctx, paths)
		}
	}
	if ws.db != nil {
		wc.databaseBelongs(ws)
	}
	if ws.broker != nil {
		wc.brokerBelongs(ws.broker)
	}
	return ws, wc.reasons, missing
}

// witnessChecker collects the reasons of steps 1 to 3.
type witnessChecker struct {
	ev           *evidence.Evidence
	dir, realDir string
	// base is the bundle's log directory beside the evidence file: its
	// name without .json ("u80" for u80.json), as the runner names it.
	base    string
	reasons []Reason
}

func (wc *witnessChecker) failWitness(rule, where, format string, args ...any) {
	wc.reasons = append(wc.reasons, Reason{Rule: rule, Status: Fail, Witness: where, Message: fmt.Sprintf(format, args...)})
}

// missing returns what the evidence says could not be witnessed, one
// entry per witness ("database: why").
func (wc *witnessChecker) missing() []string {
	w := wc.ev.Witness
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

// files checks one witness's files (step 1) and returns their paths on
// disk when every one is whole: inside dir (a directory, or the one file
// of a dump), present, of the recorded size and sha256, and nothing in dir
// left unlisted.
func (wc *witnessChecker) files(name string, files []evidence.WitnessFile, dir string) ([]string, bool) {
	ok := len(files) > 0
	if !ok {
		wc.failWitness("witness-file-missing", dir, "the %s witness lists no file", name)
	}
	listed := map[string]bool{}
	var paths []string
	for _, f := range files {
		if f.Path != dir && !strings.HasPrefix(f.Path, dir+"/") {
			wc.failWitness("witness-path", f.Path, "the %s witness file %s is not under %s, where the bundle keeps it", name, f.Path, dir)
			ok = false
			continue
		}
		abs, real, err := resolveLog(wc.dir, wc.realDir, f.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			wc.failWitness("witness-file-missing", f.Path, "the %s witness file %s does not exist: the witness was deleted or moved", name, f.Path)
			ok = false
			continue
		case err != nil:
			wc.failWitness("witness-path", f.Path, "rejected %s witness path: %v", name, err)
			ok = false
			continue
		}
		listed[real] = true
		if !wc.digest(name, f, abs) {
			ok = false
		}
		paths = append(paths, abs)
	}
	if !wc.unlisted(name, dir, listed) {
		ok = false
	}
	return paths, ok
}

// digest compares one file's size and sha256 with the evidence.
func (wc *witnessChecker) digest(name string, f evidence.WitnessFile, abs string) bool {
	sum, size, err := fileSHA256(abs)
	if err != nil {
		wc.failWitness("witness-file-missing", f.Path, "the %s witness file %s cannot be read: %v", name, f.Path, err)
		return false
	}
	ok := true
	if size != f.Size {
		wc.reasons = append(wc.reasons, Reason{Rule: "witness-size", Status: Fail, Witness: f.Path, Field: "size",
			Claimed: fmt.Sprint(f.Size), Recomputed: fmt.Sprint(size),
			Message: fmt.Sprintf("the %s witness file has %d bytes; the evidence recorded %d: it was cut or changed after the run", name, size, f.Size)})
		ok = false
	}
	if sum != f.SHA256 {
		wc.reasons = append(wc.reasons, Reason{Rule: "witness-digest", Status: Fail, Witness: f.Path, Field: "sha256",
			Claimed: f.SHA256, Recomputed: sum,
			Message: fmt.Sprintf("the %s witness file's sha256 differs from the one the evidence recorded: it was changed after the run", name)})
		ok = false
	}
	return ok
}

// unlisted reports files under dir (relative to the evidence file) that
// the evidence does not list: a reader of the directory would read them.
func (wc *witnessChecker) unlisted(name, dir string, listed map[string]bool) bool {
	root := filepath.Join(wc.dir, filepath.FromSlash(dir))
	st, err := os.Lstat(root)
	if err != nil || !st.IsDir() {
		return true // a dump is one file; a missing directory's files are reported missing
	}
	ok := true
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		real, rerr := filepath.EvalSymlinks(p)
		if rerr == nil && listed[real] {
			return nil
		}
		rel, _ := filepath.Rel(wc.dir, p)
		wc.failWitness("witness-unlisted", filepath.ToSlash(rel), "the %s witness directory holds %s, which the evidence does not list: "+
			"the reader would take it for part of the witness", name, filepath.ToSlash(rel))
		ok = false
		return nil
	})
	return ok
}

// readDatabase reads the binlog files (step 2).
func (wc *witnessChecker) readDatabase(paths []string) *dbHistory {
	sorted, err := binlog.Files(filepath.Dir(paths[0]))
	if err == nil && len(sorted) != len(paths) {
		err = fmt.Errorf("%d binlog files listed, %d in the sequence of %s", len(paths), len(sorted), filepath.Dir(paths[0]))
	}
	var h binlog.History
	if err == nil {
		h, err = binlog.ReadAll(sorted)
	}
	if err != nil {
		wc.failWitness("witness-damaged", wc.dbDir(), "the database witness cannot be read as the run's binlog: %v "+
			"(nothing it would show after that point can be witnessed)", err)
		return nil
	}
	return wc.cut(h)
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

// readBroker reads the broker's data directory or dump (step 2).
func (wc *witnessChecker) readBroker(ctx context.Context, paths []string) *broker.Log {
	bw := wc.ev.Witness.Broker
	var (
		log *broker.Log
		err error
	)
	switch bw.Source {
	case evidence.WitnessKafkaDump:
		if len(paths) != 1 {
			err = fmt.Errorf("a dump is one file, %d are listed", len(paths))
		} else {
			log, err = broker.ReadDump(paths[0])
		}
	default:
		log, err = broker.ReadDataDir(ctx, filepath.Join(wc.dir, filepath.FromSlash(wc.brokerDir())), broker.Selection{})
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

// witnessed takes in what readWitnessSet found: its reasons, and what is
// missing. Evidence without witnesses is at best inconclusive, unless the
// caller allows it (verify --allow-unwitnessed): the verdict then lists
// what is unwitnessed. (Evidence written before witnesses existed, schema
// v1, is refused before this by evidence.Parse.)
func (c *checker) witnessed(ws *witnessSet, reasons []Reason, missing []string, allow bool) {
	c.wit = ws
	for _, r := range reasons {
		c.add(r)
	}
	if allow {
		c.v.Unwitnessed = missing
		return
	}
	for _, m := range missing {
		c.add(Reason{Rule: "witness-missing", Status: Inconclusive, Message: "not witnessed: " + m +
			"; what the actors say about it cannot be held against the systems' own record " +
			"(verify --allow-unwitnessed accepts that and says so)"})
	}
}
