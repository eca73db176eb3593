package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// The witnesses (witness/doc.go) go into the log directory beside the
// evidence file (evidence/u80/witness/...), staged with the logs and
// promoted with them.
const (
	// witnessDBDir holds the run's binlog files, under the server's names,
	// and nothing else.
	witnessDBDir = "witness/db"
	// witnessKafkaDir is the embedded broker's data directory.
	witnessKafkaDir = "witness/kafka"
	// witnessKafkaDump is an external broker's record of the run's topics
	// and group offsets (witness/broker's dump format).
	witnessKafkaDump = "witness/kafka.jsonl"
)

// witnessTimeout bounds each capture step (the check at the start, the
// binlog copy or stream, the broker dump). Ctrl-C does not cut them short:
// the evidence of an interrupted run is witnessed too.
const witnessTimeout = 15 * time.Second

// witnessStart is where the database's binary log stood before the first
// scenario, or why the database cannot be witnessed.
type witnessStart struct {
	settings binlog.Settings
	pos      binlog.Position
	missing  string
}

// startWitness checks that the server writes a binary log the witness can
// use and records its position (binlog.Check, binlog.CurrentPosition).
// When it cannot, the run goes on and the evidence says why.
func (rs *runScope) startWitness(ctx context.Context) witnessStart {
	wctx, cancel := context.WithTimeout(ctx, witnessTimeout)
	defer cancel()
	var w witnessStart
	if rs.server.Info.Flavour == evidence.FlavourMySQL {
		w.missing = "database: the binary log of a MySQL server cannot witness the run: witness/binlog reads " +
			"MariaDB's binary log only (MySQL's GTID events are not modelled); MySQL " + rs.server.Info.Version
		return w
	}
	var err error
	if w.settings, err = binlog.Check(wctx, rs.server.DB()); err == nil {
		w.pos, err = binlog.CurrentPosition(wctx, rs.server.DB())
	}
	if err != nil {
		w.missing = "database: the server's binary log cannot witness the run: " + rs.server.RedactErr(err)
	}
	return w
}

// captureWitness captures both witnesses into the staging directory and
// returns what the evidence records of them. The embedded broker is shut
// down first, so that its data directory is complete (partition
// snapshots, group offsets) before it is hashed.
func (rs *runScope) captureWitness(ctx context.Context) *evidence.Witness {
	w := &evidence.Witness{Missing: []string{}}
	var missing string
	if w.Database, missing = rs.captureDatabase(ctx); missing != "" {
		w.Missing = append(w.Missing, missing)
	}
	if w.Broker, missing = rs.captureBroker(ctx); missing != "" {
		w.Missing = append(w.Missing, missing)
	}
	return w
}

// captureDatabase copies (private server) or streams over the replication
// protocol (an external server, a container) the binlog files from the start position's
// file to the end of the run into witness/db.
func (rs *runScope) captureDatabase(ctx context.Context) (*evidence.DatabaseWitness, string) {
	if rs.witness.missing != "" {
		return nil, rs.witness.missing
	}
	if l := rs.watch.Lost(); l != nil && l.database {
		return nil, "database: the server was lost during the run: " + l.Error()
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), witnessTimeout)
	defer cancel()
	db := rs.server.DB()
	dst := filepath.Join(rs.stage, witnessDBDir)
	source := evidence.WitnessBinlogFiles
	end, err := binlog.CurrentPosition(dctx, db)
	var files []binlog.Captured
	if err == nil && rs.private != nil {
		files, err = binlog.CopyFiles(dctx, db, filepath.Dir(rs.private.LogBase), rs.witness.pos, binlog.Position{}, dst)
	} else if err == nil {
		source = evidence.WitnessBinlogStream
		files, err = binlog.Stream(dctx, binlog.StreamConfig{DSN: rs.dbConfig.FormatDSN(), Logger: rs.opts.Logger},
			rs.witness.pos, binlog.Position{}, dst)
	}
	if err != nil {
		os.RemoveAll(dst) // never a partial witness that looks whole
		// A disk that refused the copy is the run's failure to write its
		// bundle (finish), not a witness the server cannot give.
		rs.noteWrite("capture the binary log into "+dst, err)
		return nil, "database: the binary log of the run could not be captured: " + rs.server.RedactErr(err)
	}
	w := &evidence.DatabaseWitness{
		Source: source, ServerVersion: rs.witness.settings.Version, ServerID: rs.witness.settings.ServerID,
		StartFile: rs.witness.pos.File, StartPos: rs.witness.pos.Pos,
		GTIDStart: rs.witness.pos.GTID, GTIDEnd: end.GTID, Files: []evidence.WitnessFile{},
	}
	for _, f := range files {
		w.Files = append(w.Files, evidence.WitnessFile{Path: rs.base + "/" + witnessDBDir + "/" + f.Name, Size: f.Size, SHA256: f.SHA256})
	}
	return w, ""
}

// captureBroker shuts the embedded broker down and hashes its data
// directory, or dumps the run's topics and the groups' committed offsets
// from an external broker or a broker container through the Kafka
// protocol (and then deletes the run's topics on an external broker).
func (rs *runScope) captureBroker(ctx context.Context) (*evidence.BrokerWitness, string) {
	w := &evidence.BrokerWitness{Implementation: rs.kafka.Implementation}
	var dir string
	if rs.kafka.Mode == infra.ModeEmbedded {
		w.Source, dir = evidence.WitnessKfakeDataDir, witnessKafkaDir
		if err := rs.kafka.Shutdown(); err != nil {
			rs.noteBrokerWrite("write the embedded broker's data directory "+filepath.Join(rs.stage, dir), err)
			return nil, "broker: the embedded broker's data directory is incomplete: " + err.Error()
		}
	} else {
		w.Source, dir = evidence.WitnessKafkaDump, witnessKafkaDump
		if l := rs.watch.Lost(); l != nil && !l.database {
			return nil, "broker: the broker was lost during the run: " + l.Error()
		}
		defer rs.deleteDoomedTopics()
		if err := rs.dumpBroker(ctx); err != nil {
			rs.noteWrite("dump the broker into "+filepath.Join(rs.stage, dir), err)
			return nil, "broker: the run's topics could not be dumped: " + err.Error()
		}
	}
	files, err := evidence.DigestWitnessFiles(filepath.Join(rs.stage, dir), rs.base+"/"+dir)
	if err != nil {
		return nil, "broker: " + err.Error()
	}
	w.Files = files
	return w, ""
}

// dumpBroker writes the external broker's record of the run's topics
// (ofa.<run id>.*) and of every group's offsets on them to witness/kafka.jsonl.
func (rs *runScope) dumpBroker(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), witnessTimeout)
	defer cancel()
	path := filepath.Join(rs.stage, witnessKafkaDump)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_, err := broker.Dump(dctx, rs.kafka.Brokers, broker.Selection{Prefix: "ofa." + rs.runID + "."}, path,
		rs.kafka.ClientOpts()...)
	return err
}

// deleteDoomedTopics deletes the run's topics on an external broker (not
// with --keep), each bounded by infra.CleanupTimeout.
func (rs *runScope) deleteDoomedTopics() {
	for _, t := range rs.doomed {
		ctx, cancel := infra.CleanupContext(context.Background())
		err := rs.kafka.DeleteTopic(ctx, t)
		cancel()
		if err != nil {
			fmt.Fprintf(rs.opts.Progress, "topic %s is left on the broker: %s\n", t, oneLine(err.Error()))
		}
	}
	rs.doomed = nil
}
