package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/bundle"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// The bundle: DIR/audit.json and, beneath DIR/audit/, every file it names
// (evidence.BlackBox): the profile, the client's history, the binlog files
// of the run, the broker's data directory, the roles' output. It is staged
// whole beside its place, verified there, and put in place by renames, so
// that a reader never sees half of one.

// captureTimeout bounds each capture step; Ctrl-C does not cut them short.
const captureTimeout = 15 * time.Second

func bundleBase(out string) string { return evidence.BlackBoxDir(out) }

// bundleParts is what Run hands to writeBundle.
type bundleParts struct {
	runID                           string
	started, windowStart, settledAt time.Time
	interrupted, haveLoad           bool
	client                          *client
	roles                           *roles
	nemesis                         *nemesisRun // nil: no faults were asked for
}

// writeBundle captures the witnesses, writes the staged bundle, has it
// verified (Options.Verify) for the claims, and puts it in place.
func (s *scope) writeBundle(ctx context.Context, p bundleParts) (*evidence.BlackBox, error) {
	opts := s.opts
	bb := &evidence.BlackBox{
		SchemaVersion: evidence.BlackBoxSchemaVersion,
		Tool:          opts.Tool,
		Run: evidence.BlackBoxRun{ID: p.runID, Start: p.started.UTC(), Seed: opts.Seed,
			Args: append([]string{}, opts.Args...), Interrupted: p.interrupted},
		Target: evidence.Target{Database: s.dbName, Topic: opts.Profile.Topic.Name},
		Liveness: evidence.Liveness{Bound: evidence.FormatBound(time.Duration(opts.Profile.Promises.Liveness)),
			SettledAt: p.settledAt},
		Roles:  []evidence.RoleOutput{},
		Claims: evidence.Claims{Status: "INCONCLUSIVE", Rules: []evidence.ClaimedRule{}},
	}
	bb.Window = evidence.Window{Start: p.windowStart,
		Binlog: evidence.BinlogWindow{StartFile: s.start.File, StartPos: s.start.Pos, GTIDStart: s.start.GTID},
		Broker: evidence.BrokerWindow{StartOffsets: append([]evidence.PartitionOffset{}, s.startOffsets...)}}
	bb.Witness = &evidence.Witness{Missing: []string{}}
	var missing string
	if bb.Witness.Database, missing = s.captureDatabase(ctx); missing != "" {
		bb.Witness.Missing = append(bb.Witness.Missing, missing)
	} else {
		bb.Window.Binlog.GTIDEnd = bb.Witness.Database.GTIDEnd
	}
	if bb.Witness.Broker, missing = s.captureBroker(ctx); missing != "" {
		bb.Witness.Missing = append(bb.Witness.Missing, missing)
	}
	bb.Window.End = opts.Now().UTC()
	bb.Run.End = bb.Window.End

	// The profile as it was read, but for its DSN's password.
	text := opts.ProfileText
	if dsn := opts.Profile.Database.DSN; dsn != "" {
		text = []byte(profile.Redact(string(text), dsn))
	}
	pf, err := s.put(profileFile, text)
	if err != nil {
		return nil, err
	}
	bb.Profile = evidence.ProfileFile{Name: opts.Profile.Name, WitnessFile: pf}
	if p.haveLoad {
		if err := p.client.write(filepath.Join(s.stage, clientFile)); err != nil {
			return nil, fmt.Errorf("write the client's history: %w", err)
		}
		cf, err := digestFile(filepath.Join(s.stage, clientFile), s.base+"/"+clientFile)
		if err != nil {
			return nil, err
		}
		n := int64(len(p.client.history))
		bb.Client = evidence.ClientHistory{File: &cf, Requests: &n}
	} else {
		bb.Client.Missing = "the profile has no load: the audit drove no requests of its own"
	}
	if err := s.redactOutputs(); err != nil {
		return nil, fmt.Errorf("redact the roles' output: %w", err)
	}
	if bb.Roles, err = p.roles.outputs(s); err != nil {
		return nil, err
	}
	if p.nemesis != nil {
		if bb.Nemesis, err = s.writeNemesis(p.nemesis); err != nil {
			return nil, err
		}
	}

	staged := filepath.Join(s.stageRoot, filepath.Base(opts.Out))
	if err := evidence.WriteBlackBox(staged, bb); err != nil {
		return nil, err
	}
	claims, err := opts.Verify(ctx, staged)
	if err != nil {
		return nil, fmt.Errorf("verify the staged bundle %s: %w", staged, err)
	}
	bb.Claims = claims
	if err := evidence.WriteBlackBox(staged, bb); err != nil {
		return nil, err
	}
	if err := s.commit(staged); err != nil {
		return nil, err
	}
	return bb, nil
}

// writeNemesis writes the faults as applied, by number, one a line.
func (s *scope) writeNemesis(nr *nemesisRun) (*evidence.NemesisLog, error) {
	nr.mu.Lock()
	evs := slices.Clone(nr.events)
	nr.mu.Unlock()
	sort.Slice(evs, func(i, j int) bool { return evs[i].N < evs[j].N })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range evs {
		if err := enc.Encode(e); err != nil {
			return nil, err
		}
	}
	f, err := s.put(nemesisFile, buf.Bytes())
	if err != nil {
		return nil, err
	}
	return &evidence.NemesisLog{File: f, Faults: nr.counts()}, nil
}

// captureDatabase copies (the private server) or streams over the
// replication protocol (the user's server) the binlog files from the
// window's start to now (after FLUSH BINARY LOGS) into witness/db.
func (s *scope) captureDatabase(ctx context.Context) (*evidence.DatabaseWitness, string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
	defer cancel()
	db := s.server.DB()
	dst := filepath.Join(s.stage, witnessDBDir)
	end, err := binlog.CurrentPosition(dctx, db)
	var files []binlog.Captured
	source := evidence.WitnessBinlogFiles
	if err == nil && s.private != nil {
		files, err = binlog.CopyFiles(dctx, db, filepath.Dir(s.private.LogBase), s.start, binlog.Position{}, dst)
	} else if err == nil {
		source = evidence.WitnessBinlogStream
		files, err = binlog.Stream(dctx, binlog.StreamConfig{DSN: s.cfg.FormatDSN(), Logger: s.opts.Logger}, s.start, binlog.Position{}, dst)
	}
	if err != nil {
		os.RemoveAll(dst) // never a partial witness that looks whole
		return nil, "database: the binary log of the audit could not be captured: " + s.server.RedactErr(err)
	}
	for _, f := range files {
		if f.Size > bundle.MaxWitnessFileBytes {
			os.RemoveAll(dst)
			return nil, fmt.Sprintf("database: binlog file %s is %d bytes, more than the %d MiB the verifier reads of one witness file; "+
				"set max_binlog_size to 64M or less on the server (the audit closes its files at %d MiB while it runs, but this one grew past that)",
				f.Name, f.Size, bundle.MaxWitnessFileBytes>>20, binlog.RotateFileBytes>>20)
		}
	}
	w := &evidence.DatabaseWitness{Source: source, ServerVersion: s.settings.Version,
		ServerID: s.settings.ServerID, StartFile: s.start.File, StartPos: s.start.Pos,
		GTIDStart: s.start.GTID, GTIDEnd: end.GTID, Files: []evidence.WitnessFile{}}
	for _, f := range files {
		w.Files = append(w.Files, evidence.WitnessFile{Path: s.base + "/" + witnessDBDir + "/" + f.Name, Size: f.Size, SHA256: f.SHA256})
	}
	return w, ""
}

// captureBroker shuts the embedded broker down, so that its data
// directory is complete, and lists its files; or dumps the topic and the
// groups' offsets on it from the user's broker (witness/kafka.jsonl).
func (s *scope) captureBroker(ctx context.Context) (*evidence.BrokerWitness, string) {
	if s.kafka.Mode != infra.ModeEmbedded {
		return s.dumpBroker(ctx)
	}
	w := &evidence.BrokerWitness{Source: evidence.WitnessKfakeDataDir, Implementation: s.kafka.Implementation}
	if err := s.closeBroker(); err != nil {
		return nil, "broker: the embedded broker's data directory is incomplete: " + err.Error()
	}
	files, err := evidence.DigestWitnessFiles(filepath.Join(s.stage, witnessKafkaDir), s.base+"/"+witnessKafkaDir)
	if err != nil {
		return nil, "broker: " + err.Error()
	}
	w.Files = files
	return w, ""
}

// dumpBroker dumps the audited topic and every group's offsets on it
// from the user's broker.
func (s *scope) dumpBroker(ctx context.Context) (*evidence.BrokerWitness, string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
	defer cancel()
	w := &evidence.BrokerWitness{Source: evidence.WitnessKafkaDump, Implementation: s.kafka.Implementation}
	path := filepath.Join(s.stage, witnessKafkaDump)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "broker: " + err.Error()
	}
	if _, err := broker.Dump(dctx, s.kafka.Brokers, broker.Selection{Topics: []string{s.opts.Profile.Topic.Name}}, path,
		s.kafka.ClientOpts()...); err != nil {
		os.Remove(path)
		return nil, "broker: the topic could not be dumped: " + err.Error()
	}
	files, err := evidence.DigestWitnessFiles(path, s.base+"/"+witnessKafkaDump)
	if err != nil {
		return nil, "broker: " + err.Error()
	}
	w.Files = files
	return w, ""
}

// put writes data at rel beneath the bundle's directory.
func (s *scope) put(rel string, data []byte) (evidence.WitnessFile, error) {
	dst := filepath.Join(s.stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return evidence.WitnessFile{}, err
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return evidence.WitnessFile{}, fmt.Errorf("write %s: %w", dst, err)
	}
	return digestFile(dst, s.base+"/"+rel)
}

// digestFile returns the size and sha256 of the file at path, named rel.
func digestFile(path, rel string) (evidence.WitnessFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return evidence.WitnessFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return evidence.WitnessFile{}, fmt.Errorf("digest %s: %w", path, err)
	}
	return evidence.WitnessFile{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// commit puts the staged bundle in place: the bundle's directory first
// (an earlier one is moved aside into the staging directory and removed
// with it), then the evidence file, by renames within one directory.
func (s *scope) commit(staged string) error {
	out := s.opts.Out
	dst := filepath.Join(filepath.Dir(out), s.base)
	if _, err := os.Lstat(dst); err == nil {
		if err := os.Rename(dst, filepath.Join(s.stageRoot, "previous")); err != nil {
			return fmt.Errorf("%w: move the earlier bundle %s aside: %v", evidence.ErrBadOutput, dst, err)
		}
	}
	if err := os.Rename(s.stage, dst); err != nil {
		return fmt.Errorf("%w: put the bundle in place at %s: %v", evidence.ErrBadOutput, dst, err)
	}
	if err := os.Rename(staged, out); err != nil {
		return fmt.Errorf("%w: put the evidence in place at %s: %v", evidence.ErrBadOutput, out, err)
	}
	return nil
}
