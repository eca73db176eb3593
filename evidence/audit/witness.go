package audit

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Where a black-box bundle keeps its witnesses, beneath its directory: as
// the reference's bundle does (checks/witness.go).
const (
	witnessDBDir     = "witness/db"
	witnessKafkaDir  = "witness/kafka"
	witnessKafkaDump = "witness/kafka.jsonl"
)

// witnesses reads the binlog and the broker's log, each once every file
// of it passed the gate.
func (r *reader) witnesses(ctx context.Context) {
	w := r.out.Evidence.Witness
	if w == nil {
		r.out.Missing = []string{"database and broker: the evidence has no witness object"}
		return
	}
	r.out.Missing = slices.Clone(w.Missing)
	if w.Database == nil && !slices.ContainsFunc(r.out.Missing, func(s string) bool { return strings.HasPrefix(s, "database") }) {
		r.out.Missing = append(r.out.Missing, "database: no binlog witness listed")
	}
	if w.Broker == nil && !slices.ContainsFunc(r.out.Missing, func(s string) bool { return strings.HasPrefix(s, "broker") }) {
		r.out.Missing = append(r.out.Missing, "broker: no broker witness listed")
	}
	if w.Database != nil && r.files("database", w.Database.Files, r.dbDir()) {
		r.database(w.Database.Files)
	}
	if w.Broker != nil && r.files("broker", w.Broker.Files, r.brokerDir()) {
		r.broker(ctx)
	}
}

func (r *reader) dbDir() string { return path.Join(r.base, witnessDBDir) }

func (r *reader) brokerDir() string {
	if r.out.Evidence.Witness.Broker.Source == evidence.WitnessKafkaDump {
		return path.Join(r.base, witnessKafkaDump)
	}
	return path.Join(r.base, witnessKafkaDir)
}

// files verifies one witness's files: each beneath dir, of its recorded
// size and sha256 (before any parser sees a byte).
func (r *reader) files(name string, files []evidence.WitnessFile, dir string) bool {
	ok := len(files) > 0
	if !ok {
		r.problem(Problem{Rule: "witness-file-missing", Path: dir, Message: "the " + name + " witness lists no file"})
	}
	for _, f := range files {
		if !r.place("witness", f, dir) {
			ok = false
			continue
		}
		if r.verified("witness", name+" witness", f) == nil {
			ok = false
		}
	}
	return ok
}

// database verifies the binlog files and puts them in their sequence
// order; Binlog.Scan reads them, cut to the run window, when the verifier
// asks (a run's binlog is read once, as it streams, never held whole).
func (r *reader) database(files []evidence.WitnessFile) {
	verified, err := r.b.Inputs(files)
	if err == nil {
		var in []bundle.Input
		if in, err = inOrder(verified); err == nil {
			r.out.Binlog = &Binlog{in: in, window: r.out.Evidence.Window.Binlog, path: r.dbDir()}
			return
		}
	}
	r.problem(damaged(r.dbDir(), err))
}

// damaged is the problem of a binlog witness that cannot be read.
func damaged(path string, err error) Problem {
	return Problem{Rule: "witness-damaged", Path: path, Message: fmt.Sprintf("the database witness cannot be read as the run's binlog: %v "+
		"(nothing it would show after that point can be witnessed)", err)}
}

// Binlog is the database witness of a bundle: its files passed the gate
// and are in their one sequence; Scan reads them.
type Binlog struct {
	in     []bundle.Input
	window evidence.BinlogWindow
	path   string
}

// Size is the bytes of the binlog's files.
func (b *Binlog) Size() int64 {
	var n int64
	for _, f := range b.in {
		n += f.R.Size()
	}
	return n
}

// DamagedError is Scan's error when the binlog cannot be read to its
// end: Problem is the bundle's fault to report (a FAIL, as Read reports
// the others).
type DamagedError struct{ Problem Problem }

func (e *DamagedError) Error() string { return e.Problem.Message }

// Scan reads the binlog from its first file and calls fn with each
// transaction of the run window, in commit order (a GTID gap is read, not
// refused: the rule holes says INCONCLUSIVE on what it could hide). Once
// the binlog was read to its end it returns the holes between the window
// the evidence states and what the binlog holds, each in a sentence. A
// binlog that cannot be read to its end is a *DamagedError; an error of
// fn is returned as is. Each Scan reads the files anew. A transaction's
// Changes and row image maps are fn's only for the time of the call
// (binlog.ScanInputsAllowingGaps reuses them).
func (b *Binlog) Scan(fn func(binlog.Transaction) error) ([]string, error) {
	in := make([]binlog.Input, len(b.in))
	for i, f := range b.in {
		in[i] = binlog.Input{Name: f.Name, R: io.NewSectionReader(f.R, 0, f.R.Size())}
	}
	w := newWindowCut(b.window)
	var fnErr error
	_, err := binlog.ScanInputsAllowingGaps(in, func(t binlog.Transaction) error {
		if !w.keep(t) {
			return nil
		}
		fnErr = fn(t)
		return fnErr
	})
	switch {
	case err != nil && fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, &DamagedError{damaged(b.path, err)}
	}
	return w.holes(), nil
}

// inOrder names the verified files as the binlog reader wants them,
// sorted into their one sequence.
func inOrder(verified []bundle.Input) ([]bundle.Input, error) {
	in := make([]binlog.Input, len(verified))
	byName := make(map[string]bundle.Input, len(verified))
	for i, v := range verified {
		in[i] = binlog.Input{Name: v.Name, R: v.R}
		byName[v.Name] = v
	}
	sorted, err := binlog.InSequence(in)
	if err != nil {
		return nil, err
	}
	out := make([]bundle.Input, len(sorted))
	for i, s := range sorted {
		out[i] = byName[s.Name]
	}
	return out, nil
}

// broker reads the broker's data directory or dump from the verified
// files and from nothing else: the reader gets an fs.FS of exactly them,
// or the dump's bytes, never a path.
func (r *reader) broker(ctx context.Context) {
	bw := r.out.Evidence.Witness.Broker
	var (
		log *broker.Log
		err error
	)
	switch bw.Source {
	case evidence.WitnessKafkaDump:
		var in []bundle.Input
		if len(bw.Files) != 1 {
			err = fmt.Errorf("a dump is one file, %d are listed", len(bw.Files))
		} else if in, err = r.b.Inputs(bw.Files); err == nil {
			log, err = broker.ReadDumpFrom(in[0].R)
		}
	default:
		var fsys fs.FS
		if fsys, err = r.b.FS(r.brokerDir(), bw.Files); err == nil {
			log, err = broker.OpenDataFS(ctx, fsys, broker.Selection{})
		}
	}
	if err != nil {
		r.problem(Problem{Rule: "witness-damaged", Path: r.brokerDir(), Message: "the broker witness cannot be read: " + err.Error()})
		return
	}
	r.out.Broker = log
}
