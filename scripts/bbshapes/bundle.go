package main

// The auditing side: the private server and broker, the capture of the
// witnesses of one history, the bundle and its verdict.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
)

type server struct {
	s        *mariadbd.Server
	root     *sql.DB
	settings binlog.Settings
}

// startServer starts the private server; args are extra server flags.
func startServer(ctx context.Context, args ...string) (*server, error) {
	s, err := mariadbd.Start(ctx, mariadbd.Config{Args: append([]string{"--innodb-flush-log-at-trx-commit=2"}, args...)})
	if err != nil {
		return nil, err
	}
	root, err := sql.Open("mysql", s.DSN())
	if err != nil {
		s.Remove()
		return nil, err
	}
	st, err := binlog.Check(ctx, root)
	if err != nil {
		root.Close()
		s.Remove()
		return nil, err
	}
	return &server{s: s, root: root, settings: st}, nil
}

func (s *server) close() {
	s.root.Close()
	s.s.Remove()
}

func (s *server) open(db string) (*sql.DB, error) {
	c := s.s.Config()
	c.DBName = db
	return sql.Open("mysql", c.FormatDSN())
}

// neverExpire: the broker keeps every record and offset (as the audit's).
var neverExpire = map[string]string{
	"offsets.retention.minutes":           "5256000",
	"offsets.retention.check.interval.ms": "315360000000",
	"log.retention.ms":                    "-1",
}

// capture is one history's witnesses, staged in dir.
type capture struct {
	dir, base string // the bundle's directory and its base name (audit)
	db        string
	start     binlog.Position
	started   time.Time
	cluster   *kfake.Cluster
	kc        *kgo.Client
}

// begin starts a history: a fresh binlog (RESET MASTER), the window's
// start, its database and tables, a fresh broker persisting into the
// bundle.
func (s *server) begin(ctx context.Context, dir, db string, sh *shape) (*capture, *pipe, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	c := &capture{dir: dir, base: "audit", db: db, started: time.Now().UTC()}
	if _, err := s.root.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
		return nil, nil, err
	}
	if _, err := s.root.ExecContext(ctx, "RESET MASTER"); err != nil {
		return nil, nil, err
	}
	var err error
	if c.start, err = binlog.CurrentPosition(ctx, s.root); err != nil {
		return nil, nil, err
	}
	if _, err := s.root.ExecContext(ctx, "CREATE DATABASE `"+db+"`"); err != nil {
		return nil, nil, err
	}
	conn, err := s.open(db)
	if err != nil {
		return nil, nil, err
	}
	for _, stmt := range sh.ddl {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	c.cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(filepath.Join(dir, c.base, "witness", "kafka")),
		kfake.BrokerConfigs(neverExpire), kfake.SeedTopics(2, topic))
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	c.kc, err = kgo.NewClient(kgo.SeedBrokers(c.cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		conn.Close()
		c.cluster.Close()
		return nil, nil, err
	}
	return c, newPipe(conn, c.kc, topic), nil
}

// record runs history h and writes its bundle; it returns "" when the
// verdict is the one h states, else what differs.
func (s *server) record(ctx context.Context, out string, h history) (string, error) {
	id := h.shape.name + "-" + h.name
	dir := filepath.Join(out, id)
	db := "bb_" + strings.ReplaceAll(id, "-", "_")
	c, p, err := s.begin(ctx, dir, db, h.shape)
	if err != nil {
		return "", err
	}
	defer p.db.Close()
	if err := h.run(ctx, p); err != nil {
		c.kc.Close()
		c.cluster.Close()
		return "", err
	}
	dup, live := h.duplicates, h.liveness
	if dup == "" {
		dup = "allowed"
	}
	if live == "" {
		live = "30s"
	}
	prof := fmt.Sprintf(h.shape.profile, dup, live)
	var client []request
	if h.client {
		client = p.client
	}
	v, err := s.finish(ctx, c, []byte(prof), client, []string{"bbshapes", "-run", id})
	if err != nil {
		return "", err
	}
	got := v.Unpassed()
	want := h.rules
	if want == nil {
		want = map[string]string{}
	}
	exp, err := json.MarshalIndent(map[string]any{"history": id, "what": h.what, "status": h.want, "rules": want}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "expect.json"), append(exp, '\n'), 0o644); err != nil {
		return "", err
	}
	if string(v.Status) != h.want || !maps.Equal(got, want) {
		return fmt.Sprintf("got %s %v", v.Status, got), nil
	}
	return "", nil
}

// finish captures the witnesses, writes the bundle with the claims the
// verifier recomputes, and verifies it.
func (s *server) finish(ctx context.Context, c *capture, prof []byte, client []request, args []string) (*bbverify.Verdict, error) {
	settled := time.Now().UTC()
	p, err := profile.Parse("profile.yaml", prof)
	if err != nil {
		return nil, err
	}
	end, err := binlog.CurrentPosition(ctx, s.root)
	if err != nil {
		return nil, err
	}
	files, err := binlog.CopyFiles(ctx, s.root, filepath.Dir(s.s.LogBase), c.start, binlog.Position{}, filepath.Join(c.dir, c.base, "witness", "db"))
	if err != nil {
		return nil, err
	}
	c.kc.Close()
	c.cluster.Close()
	dbw := &evidence.DatabaseWitness{Source: evidence.WitnessBinlogFiles, ServerVersion: s.settings.Version, ServerID: s.settings.ServerID,
		StartFile: c.start.File, StartPos: c.start.Pos, GTIDStart: c.start.GTID, GTIDEnd: end.GTID, Files: []evidence.WitnessFile{}}
	for _, f := range files {
		dbw.Files = append(dbw.Files, evidence.WitnessFile{Path: c.base + "/witness/db/" + f.Name, Size: f.Size, SHA256: f.SHA256})
	}
	brw := &evidence.BrokerWitness{Source: evidence.WitnessKfakeDataDir, Implementation: "kfake (franz-go in-process Kafka wire-protocol broker)"}
	if brw.Files, err = evidence.DigestWitnessFiles(filepath.Join(c.dir, c.base, "witness", "kafka"), c.base+"/witness/kafka"); err != nil {
		return nil, err
	}
	put := func(rel string, data []byte) (evidence.WitnessFile, error) {
		if err := os.WriteFile(filepath.Join(c.dir, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return evidence.WitnessFile{}, err
		}
		sum := sha256.Sum256(data)
		return evidence.WitnessFile{Path: rel, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	pf, err := put(path.Join(c.base, "profile.yaml"), prof)
	if err != nil {
		return nil, err
	}
	bb := &evidence.BlackBox{
		SchemaVersion: evidence.BlackBoxSchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: "bbshapes", Revision: "scripts/bbshapes"},
		Run:           evidence.BlackBoxRun{ID: c.db, Start: c.started, End: settled, Args: args},
		Profile:       evidence.ProfileFile{Name: p.Name, WitnessFile: pf},
		Target:        evidence.Target{Database: c.db, Topic: topic},
		Window: evidence.Window{Start: c.started, End: settled,
			Binlog: evidence.BinlogWindow{StartFile: c.start.File, StartPos: c.start.Pos, GTIDStart: c.start.GTID, GTIDEnd: end.GTID},
			Broker: evidence.BrokerWindow{StartOffsets: []evidence.PartitionOffset{{Partition: 0}, {Partition: 1}}}},
		Liveness: evidence.Liveness{Bound: evidence.FormatBound(time.Duration(p.Promises.Liveness)), SettledAt: settled},
		Witness:  &evidence.Witness{Database: dbw, Broker: brw, Missing: []string{}},
		Roles:    []evidence.RoleOutput{},
		Claims:   evidence.Claims{Status: "PASS", Rules: []evidence.ClaimedRule{}},
	}
	if client != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, r := range client {
			if err := enc.Encode(r); err != nil {
				return nil, err
			}
		}
		cf, err := put(path.Join(c.base, "client.jsonl"), buf.Bytes())
		if err != nil {
			return nil, err
		}
		n := int64(len(client))
		bb.Client = evidence.ClientHistory{File: &cf, Requests: &n}
	} else {
		bb.Client.Missing = "the history drove no load through our client"
	}
	evPath := filepath.Join(c.dir, c.base+".json")
	if err := evidence.WriteBlackBox(evPath, bb); err != nil {
		return nil, err
	}
	v, err := bbverify.Verify(ctx, evPath, bbverify.Options{})
	if err != nil {
		return nil, err
	}
	if v.Layer == nil {
		return nil, fmt.Errorf("the rules did not run on %s: %s", evPath, v.NotRun)
	}
	bb.Claims = bbverify.Claims(v.Layer)
	if err := evidence.WriteBlackBox(evPath, bb); err != nil {
		return nil, err
	}
	return bbverify.Verify(ctx, evPath, bbverify.Options{})
}
