//go:build unix

package crosscheck

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/checks/finding"
	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/evidencetest"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// Hostile witness files against the gate (evidence/bundle): files that
// are not plain regular files of the bundle, or that would cost unbounded
// time or memory to read. Each must end, fast, in a witness-path reason
// naming the file, and the witness is not read. Each case runs under a
// deadline, since the failure before the gate was a hang. (The evidence
// file's and the logs' cases are checks', hostile_gate_test.go.)

// zeroSHA256 is the sha256 of n zero bytes.
func zeroSHA256(t *testing.T, n int64) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.CopyN(h, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sha256Of2GiBZeros is the sha256 of 2 GiB of zero bytes (head -c
// $((2<<30)) /dev/zero | sha256sum): hashing them takes ~6 s here, which
// is what the gate must not spend.
const sha256Of2GiBZeros = "a7c744c13cc101ed66c29f672f92455547889cc586ce6d44fe76ae824958ea51"

// The witness cases edit the witnessed fixture's files: normalChain's
// partition, found by its name (the run id changes when the fixture is
// regenerated).
var fixtureSnapshot, fixtureSegment = func() (string, string) {
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(witnessedFixture), "u80", "witness", "kafka", "partitions", "ofa.*.normalChain-0"))
	if len(dirs) != 1 {
		return "u80/missing-normalChain-partition/snapshot.json", "u80/missing-normalChain-partition/0.dat"
	}
	rel := "u80/witness/kafka/partitions/" + filepath.Base(dirs[0])
	return rel + "/snapshot.json", rel + "/0.dat"
}()

// TestGateWitnessFiles: a witness file that is not a plain regular file of
// the bundle, or anything in a witness directory that is not a directory
// or a regular file, fails with witness-path naming it, at once, and the
// witness is not read.
func TestGateWitnessFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, dir string, ev *evidence.Evidence)
		where string
		want  string
	}{
		{"FIFO snapshot", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureSnapshot)
			os.Remove(p)
			evidencetest.Mkfifo(t, p)
		}, fixtureSnapshot, "FIFO"},
		{"relative symlink staying inside", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureBinlog)
			os.Rename(p, filepath.Join(dir, "u80", "binlog.kept"))
			os.Symlink("../../binlog.kept", p)
		}, fixtureBinlog, "symbolic link"},
		{"witness directory a symlink inside", func(t *testing.T, dir string, ev *evidence.Evidence) {
			db := filepath.Join(dir, "u80/witness/db")
			os.Rename(db, filepath.Join(dir, "u80/witness/db.kept"))
			os.Symlink("db.kept", db)
		}, fixtureBinlog, "symbolic link"},
		{"unlisted symlink to a listed file", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.Symlink("0.dat", filepath.Join(dir, filepath.Dir(fixtureSegment), "1.dat"))
		}, filepath.ToSlash(filepath.Dir(fixtureSegment)) + "/1.dat", "symbolic link"},
		{"unlisted FIFO", func(t *testing.T, dir string, ev *evidence.Evidence) {
			evidencetest.Mkfifo(t, filepath.Join(dir, "u80/witness/kafka/extra"))
		}, "u80/witness/kafka/extra", "FIFO"},
		{"symlink to /dev/zero", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureSnapshot)
			os.Remove(p)
			os.Symlink("/dev/zero", p)
		}, fixtureSnapshot, "symbolic link"},
		{"character device", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureSnapshot)
			os.Remove(p)
			evidencetest.MknodZero(t, p)
		}, fixtureSnapshot, "character device"},
		{"directory", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureSnapshot)
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, fixtureSnapshot, "directory"},
		{"hard link x2", func(t *testing.T, dir string, ev *evidence.Evidence) {
			os.Link(filepath.Join(dir, fixtureSegment), filepath.Join(dir, "u80", "segment.again"))
		}, fixtureSegment, "hard link"},
		{"sparse 2 GiB binlog with its real size and sha256", func(t *testing.T, dir string, ev *evidence.Evidence) {
			p := filepath.Join(dir, fixtureBinlog)
			os.Remove(p)
			evidencetest.SparseFile(t, p, 2<<30)
			ev.Witness.Database.Files[0].Size, ev.Witness.Database.Files[0].SHA256 = 2<<30, sha256Of2GiBZeros
		}, fixtureBinlog, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type read struct {
				ws *Witnesses
				rs []finding.Reason
			}
			got := evidencetest.Within(t, func() read {
				ws, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) { tc.edit(t, dir, ev) })
				return read{ws, rs}
			})
			var r finding.Reason
			for _, x := range got.rs {
				if x.Rule == "witness-path" && x.Witness == tc.where {
					r = x
				}
			}
			if r.Rule == "" || r.Status != finding.Fail || !strings.Contains(r.Message, tc.want) {
				t.Fatalf("reasons %+v; want FAIL witness-path at %s saying %q", got.rs, tc.where, tc.want)
			}
			if strings.Contains(tc.where, "/db/") && got.ws.db != nil || strings.Contains(tc.where, "/kafka/") && got.ws.broker != nil {
				t.Errorf("the refused witness was read")
			}
		})
	}
}

// TestGateWitnessManyHardLinks: 124 hard links to one 64 MiB sparse file
// in the broker's directory, each listed with its real size and sha256:
// before the gate each was hashed (8 GB); now each is refused from its
// link count.
func TestGateWitnessManyHardLinks(t *testing.T) {
	sum := zeroSHA256(t, 64<<20)
	got := evidencetest.Within(t, func() []finding.Reason {
		_, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) {
			big := filepath.Join(dir, "u80", "witness", "kafka", "big")
			evidencetest.SparseFile(t, big, 64<<20)
			for i := range 124 {
				rel := fmt.Sprintf("u80/witness/kafka/link-%03d", i)
				if err := os.Link(big, filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
					t.Fatal(err)
				}
				ev.Witness.Broker.Files = append(ev.Witness.Broker.Files, evidence.WitnessFile{Path: rel, Size: 64 << 20, SHA256: sum})
			}
			ev.Witness.Broker.Files = append(ev.Witness.Broker.Files, evidence.WitnessFile{Path: "u80/witness/kafka/big", Size: 64 << 20, SHA256: sum})
		})
		return rs
	})
	n := 0
	for _, r := range got {
		if r.Rule == "witness-path" && strings.Contains(r.Message, "hard link") {
			n++
		}
	}
	if n != 125 {
		t.Fatalf("%d witness-path hard-link reasons; want one for each of the 125 names: %v", n, ruleNames(got))
	}
}

// TestGateKafkaDump: a broker witness of an external broker (a dump, one
// file) is read from the bytes the gate verified; a dump that is a FIFO is
// refused at once, naming it.
func TestGateKafkaDump(t *testing.T) {
	const dump = "u80/witness/kafka.jsonl"
	toDump := func(t *testing.T, dir string, ev *evidence.Evidence) {
		log, err := broker.ReadDataDir(t.Context(), filepath.Join(dir, "u80/witness/kafka"), broker.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, dump))
		if err != nil {
			t.Fatal(err)
		}
		if err := broker.WriteDump(f, log); err != nil {
			t.Fatal(err)
		}
		f.Close()
		os.RemoveAll(filepath.Join(dir, "u80/witness/kafka"))
		sum, size, err := fileSHA256(filepath.Join(dir, dump))
		if err != nil {
			t.Fatal(err)
		}
		ev.Witness.Broker.Source = evidence.WitnessKafkaDump
		ev.Witness.Broker.Files = []evidence.WitnessFile{{Path: dump, Size: size, SHA256: sum}}
	}
	t.Run("read", func(t *testing.T) {
		ws, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) { toDump(t, dir, ev) })
		if len(rs) > 0 || ws.broker == nil || len(ws.broker.Topics) == 0 {
			t.Fatalf("reasons %+v, broker read %v; want the dump read cleanly", rs, ws.broker != nil)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		rs := evidencetest.Within(t, func() []finding.Reason {
			_, rs := readCopyWitnesses(t, func(dir string, ev *evidence.Evidence) {
				toDump(t, dir, ev)
				os.Remove(filepath.Join(dir, dump))
				evidencetest.Mkfifo(t, filepath.Join(dir, dump))
			})
			return rs
		})
		if len(rs) != 1 || rs[0].Rule != "witness-path" || rs[0].Witness != dump || !strings.Contains(rs[0].Message, "FIFO") {
			t.Fatalf("reasons %+v; want one witness-path at %s naming the FIFO", rs, dump)
		}
	})
}
