package blackbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/checks/blackbox"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/witness/binlog"
	"github.com/orderflow-audit/orderflow-audit/witness/broker"
)

// bundle is a committed reference bundle read with the witness readers:
// the evidence file only names the run, its end and each scenario's
// database and topic; the verdict rests on the witnesses.
type bundle struct {
	runEnd    time.Time
	scenarios []scenarioRef
	history   binlog.History
	log       *broker.Log
}

type scenarioRef struct {
	ID       string   `json:"id"`
	Database string   `json:"database"`
	Topics   []string `json:"topics"`
}

var (
	bundleMu    sync.Mutex
	bundleCache = map[string]*bundle{}
)

// readBundle reads the evidence file at path and the witnesses beside it
// (<dir>/u80/witness/db, <dir>/u80/witness/kafka), once per test binary.
func readBundle(t *testing.T, path string) *bundle {
	t.Helper()
	bundleMu.Lock()
	defer bundleMu.Unlock()
	if b, ok := bundleCache[path]; ok {
		return b
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Run struct {
			End time.Time `json:"end"`
		} `json:"run"`
		Scenarios []scenarioRef `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	dir := strings.TrimSuffix(path, ".json")
	files, err := binlog.Files(filepath.Join(dir, "witness", "db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := binlog.ReadAll(files)
	if err != nil {
		t.Fatalf("read binlog of %s: %v", path, err)
	}
	log, err := broker.ReadDataDir(t.Context(), filepath.Join(dir, "witness", "kafka"), broker.Selection{})
	if err != nil {
		t.Fatalf("read broker of %s: %v", path, err)
	}
	b := &bundle{runEnd: ev.Run.End, scenarios: ev.Scenarios, history: h, log: log}
	bundleCache[path] = b
	return b
}

func referenceProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := profile.Load(filepath.Join("..", "..", "profiles", "reference.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkScenario runs the black-box layer over one scenario of a bundle:
// its database and its topic, as the reference profile describes them.
func checkScenario(t *testing.T, p *profile.Profile, b *bundle, s scenarioRef) *blackbox.Result {
	t.Helper()
	res, err := blackbox.Check(blackbox.Input{Profile: p, Binlog: b.history, Schema: s.Database,
		Broker: b.log, Topic: s.Topics[0], End: b.runEnd})
	if err != nil {
		t.Fatalf("Check(%s) = %v", s.ID, err)
	}
	return res
}

// TestReferenceBundlesPass is the differential check over the committed
// reference bundles: the white-box verifier passes every scenario of
// them, and the black-box layer, reading only the witnesses through
// profiles/reference.yaml, must pass every scenario that runs the
// pipeline (has a topic) too. A scenario without a topic runs no relay:
// there is nothing for the layer to audit.
func TestReferenceBundlesPass(t *testing.T) {
	p := referenceProfile(t)
	for _, path := range []string{
		filepath.Join("..", "..", "evidence", "example", "u80.json"),
		filepath.Join("..", "testdata", "witnessed", "u80.json"),
	} {
		b := readBundle(t, path)
		audited := 0
		for _, s := range b.scenarios {
			if len(s.Topics) == 0 {
				continue
			}
			audited++
			t.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+s.ID, func(t *testing.T) {
				res := checkScenario(t, p, b, s)
				if res.Status != blackbox.Pass {
					for _, r := range res.Reasons {
						t.Errorf("%s", r)
					}
					t.Fatalf("verdict %s; want PASS", res.Status)
				}
				if res.Stats.Events == 0 || res.Stats.Records == 0 {
					t.Errorf("stats %+v: the layer saw no event or no record", res.Stats)
				}
			})
		}
		if audited < 10 {
			t.Errorf("%s: %d scenarios with a topic; want the pipeline's 14", path, audited)
		}
	}
}

// TestParallelRebuildSame: the verdict does not depend on whether a
// transaction's tables are rebuilt beside its events (from
// ParallelRows rows on) or after them: every scenario of the committed
// reference bundles, with every transaction filed both ways, gives the
// same result.
func TestParallelRebuildSame(t *testing.T) {
	p := referenceProfile(t)
	if len(p.Invariants) == 0 {
		t.Fatal("the reference profile has no invariant: nothing is rebuilt")
	}
	defer func(n int) { *blackbox.ParallelRows = n }(*blackbox.ParallelRows)
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "planted", "*", "u80.json"))
	paths = append(paths, filepath.Join("..", "..", "evidence", "example", "u80.json"))
	checked, failed := 0, 0
	for _, path := range paths {
		b := readBundle(t, path)
		for _, s := range b.scenarios {
			if len(s.Topics) == 0 {
				continue
			}
			*blackbox.ParallelRows = 1 << 30
			alone := checkScenario(t, p, b, s)
			*blackbox.ParallelRows = 1
			beside := checkScenario(t, p, b, s)
			if !reflect.DeepEqual(alone, beside) {
				t.Errorf("%s %s: rebuilt after the events\n%+v\nbeside them\n%+v", path, s.ID, alone, beside)
			}
			checked++
			if alone.Status == blackbox.Fail {
				failed++
			}
		}
	}
	if checked == 0 || failed == 0 {
		t.Fatalf("%d scenarios checked, %d of them FAIL; want some of both", checked, failed)
	}
	t.Logf("%d scenarios of %d bundles, %d FAIL, the same both ways", checked, len(paths), failed)
}
