// Package bbtest builds black-box audit bundles from reference runs, for
// tests and for scripts/bbwrap: one scenario of a reference bundle (its
// database and topic), its witnesses copied verbatim, audited under a
// profile (profiles/reference.yaml by default), with the claims the
// verifier recomputes. Until the audit command exists, this is how a
// black-box bundle comes to be from a real run.
package bbtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/bbverify"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/profiles"
)

// Wrap says what to wrap and where.
type Wrap struct {
	// Reference is the reference run's evidence file (u80.json).
	Reference string
	// Scenario is the scenario whose database and topic are audited;
	// empty: the first scenario with a topic.
	Scenario string
	// Out is the black-box evidence file to write (DIR/audit.json); its
	// bundle's files go beneath DIR/audit/. Nothing is there before.
	Out string
	// Profile is the profile's text; nil: profiles/reference.yaml.
	Profile []byte
	// Client, when not nil, is written as the load client's history; nil:
	// the bundle says the run drove no load of a black-box client.
	Client []evidence.ClientRequest
	// Output, when not nil, is written as the relay's captured stderr.
	Output []byte
}

// Write writes the bundle and returns the verdict it verifies to (the
// claims recorded are that verdict's rules).
func (w Wrap) Write(ctx context.Context) (*bbverify.Verdict, error) {
	ref, _, err := evidence.ReadFile(w.Reference)
	if err != nil {
		return nil, err
	}
	sc, err := w.scenario(ref)
	if err != nil {
		return nil, err
	}
	if ref.Witness == nil || ref.Witness.Database == nil || ref.Witness.Broker == nil {
		return nil, errors.New("wrap: the reference bundle lacks a witness")
	}
	prof := w.Profile
	if prof == nil {
		prof = profiles.Reference()
	}
	p, err := profile.Parse("profile.yaml", prof)
	if err != nil {
		return nil, fmt.Errorf("wrap: %w", err)
	}
	base := evidence.BlackBoxDir(w.Out)
	outDir := filepath.Dir(w.Out)
	put := func(rel string, data []byte) (evidence.WitnessFile, error) {
		dst := filepath.Join(outDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return evidence.WitnessFile{}, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return evidence.WitnessFile{}, err
		}
		sum := sha256.Sum256(data)
		return evidence.WitnessFile{Path: rel, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	// copyWitness copies the reference's witness files, moved from its
	// log directory (u80/) to the bundle's (audit/).
	refDir := filepath.Dir(w.Reference)
	refBase := evidence.BlackBoxDir(w.Reference)
	copyWitness := func(files []evidence.WitnessFile) ([]evidence.WitnessFile, error) {
		var out []evidence.WitnessFile
		for _, f := range files {
			inside, ok := strings.CutPrefix(f.Path, refBase+"/")
			if !ok {
				return nil, fmt.Errorf("wrap: witness file %s is not under %s", f.Path, refBase)
			}
			data, err := os.ReadFile(filepath.Join(refDir, filepath.FromSlash(f.Path)))
			if err != nil {
				return nil, err
			}
			nf, err := put(path.Join(base, inside), data)
			if err != nil {
				return nil, err
			}
			out = append(out, nf)
		}
		return out, nil
	}
	db := *ref.Witness.Database
	if db.Files, err = copyWitness(db.Files); err != nil {
		return nil, err
	}
	br := *ref.Witness.Broker
	if br.Files, err = copyWitness(br.Files); err != nil {
		return nil, err
	}
	pf, err := put(path.Join(base, "profile.yaml"), prof)
	if err != nil {
		return nil, err
	}
	bb := &evidence.BlackBox{
		SchemaVersion: evidence.BlackBoxSchemaVersion,
		Tool:          ref.Tool,
		Run: evidence.BlackBoxRun{ID: ref.Run.ID, Start: ref.Run.Start, End: ref.Run.End, Seed: ref.Run.Seed,
			Args: []string{"bbwrap", "--scenario", sc.ID, filepath.Base(w.Reference)}},
		Profile: evidence.ProfileFile{Name: p.Name, WitnessFile: pf},
		Target:  evidence.Target{Database: sc.Database, Topic: sc.Topics[0]},
		Window: evidence.Window{Start: ref.Run.Start, End: ref.Run.End,
			Binlog: evidence.BinlogWindow{StartFile: db.StartFile, StartPos: db.StartPos, GTIDStart: db.GTIDStart, GTIDEnd: db.GTIDEnd},
			Broker: evidence.BrokerWindow{StartOffsets: []evidence.PartitionOffset{}}},
		Liveness: evidence.Liveness{Bound: evidence.FormatBound(time.Duration(p.Promises.Liveness)), SettledAt: ref.Run.End},
		Witness:  &evidence.Witness{Database: &db, Broker: &br, Missing: []string{}},
		Roles:    []evidence.RoleOutput{},
		Claims:   evidence.Claims{Status: "PASS", Rules: []evidence.ClaimedRule{}},
	}
	if w.Client != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, r := range w.Client {
			if err := enc.Encode(r); err != nil {
				return nil, err
			}
		}
		cf, err := put(path.Join(base, "client.jsonl"), buf.Bytes())
		if err != nil {
			return nil, err
		}
		n := int64(len(w.Client))
		bb.Client = evidence.ClientHistory{File: &cf, Requests: &n}
	} else {
		bb.Client.Missing = "wrapped from a reference run, whose load came from its scenario's actors, not from a black-box client"
	}
	if w.Output != nil {
		of, err := put(path.Join(base, "roles", "relay-1.stderr"), w.Output)
		if err != nil {
			return nil, err
		}
		bb.Roles = append(bb.Roles, evidence.RoleOutput{Role: "relay", Replica: 1, Stream: "stderr", File: of})
	}
	// The claims are the verdict of the rules on this very bundle.
	if err := evidence.WriteBlackBox(w.Out, bb); err != nil {
		return nil, err
	}
	v, err := bbverify.Verify(ctx, w.Out, bbverify.Options{})
	if err != nil {
		return nil, err
	}
	if v.Layer == nil {
		return nil, fmt.Errorf("wrap: the rules did not run on %s: %s", w.Out, v.NotRun)
	}
	bb.Claims = bbverify.Claims(v.Layer)
	if err := evidence.WriteBlackBox(w.Out, bb); err != nil {
		return nil, err
	}
	return bbverify.Verify(ctx, w.Out, bbverify.Options{})
}

func (w Wrap) scenario(ref *evidence.Evidence) (evidence.Scenario, error) {
	for _, sc := range ref.Scenarios {
		if (w.Scenario == "" || sc.ID == w.Scenario) && len(sc.Topics) > 0 && sc.Database != "" {
			return sc, nil
		}
	}
	if w.Scenario == "" {
		return evidence.Scenario{}, fmt.Errorf("wrap: %s has no scenario with a topic", w.Reference)
	}
	return evidence.Scenario{}, fmt.Errorf("wrap: %s has no scenario %s with a database and a topic", w.Reference, w.Scenario)
}
