package evidence_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/schemas"
)

func sampleBlackBox() *evidence.BlackBox {
	t0 := time.Date(2026, 12, 4, 19, 48, 0, 0, time.UTC)
	n := int64(2)
	f := func(p string) evidence.WitnessFile {
		return evidence.WitnessFile{Path: p, Size: 10, SHA256: strings.Repeat("a", 64)}
	}
	return &evidence.BlackBox{
		SchemaVersion: evidence.BlackBoxSchemaVersion,
		Tool:          evidence.Tool{Name: "orderflow-audit", Version: "0.1.0-dev", Revision: ""},
		Run:           evidence.BlackBoxRun{ID: "r1", Start: t0, End: t0.Add(time.Minute), Args: []string{}},
		Profile:       evidence.ProfileFile{Name: "shop", WitnessFile: f("audit/profile.yaml")},
		Target:        evidence.Target{Database: "shop", Topic: "orders.events"},
		Window: evidence.Window{Start: t0, End: t0.Add(time.Minute),
			Binlog: evidence.BinlogWindow{StartFile: "binlog.000001", StartPos: 4, GTIDEnd: "0-1-9"},
			Broker: evidence.BrokerWindow{StartOffsets: []evidence.PartitionOffset{{Partition: 0, Offset: 0}}}},
		Liveness: evidence.Liveness{Bound: "30s", SettledAt: t0.Add(time.Minute)},
		Client:   evidence.ClientHistory{File: &evidence.WitnessFile{Path: "audit/client.jsonl", Size: 1, SHA256: strings.Repeat("b", 64)}, Requests: &n},
		Witness: &evidence.Witness{
			Database: &evidence.DatabaseWitness{Source: evidence.WitnessBinlogFiles, ServerVersion: "10.11", StartFile: "binlog.000001",
				StartPos: 4, GTIDEnd: "0-1-9", Files: []evidence.WitnessFile{f("audit/witness/db/binlog.000001")}},
			Missing: []string{"broker: lost"}},
		Roles:  []evidence.RoleOutput{{Role: "relay", Replica: 1, Stream: "stderr", File: f("audit/roles/relay-1.stderr")}},
		Claims: evidence.Claims{Status: "PASS", Rules: []evidence.ClaimedRule{{ID: "lost-skipped", Status: "PASS"}}},
	}
}

// TestBlackBoxRoundTrip: a black-box audit's evidence validates against
// its own schema, reads back equal, is told apart from the reference's,
// and lists every file it names.
func TestBlackBoxRoundTrip(t *testing.T) {
	bb := sampleBlackBox()
	raw, err := evidence.MarshalBlackBox(bb)
	if err != nil {
		t.Fatal(err)
	}
	if got := evidence.FormatOf(raw); got != evidence.FormatBlackBox {
		t.Errorf("FormatOf = %s; want black-box", got)
	}
	back, err := evidence.ParseBlackBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Liveness.Duration(); d != 30*time.Second || back.Profile.Path != "audit/profile.yaml" || *back.Client.Requests != 2 {
		t.Errorf("read back %+v", back)
	}
	if n := len(back.Files()); n != 4 {
		t.Errorf("Files() has %d; want profile, client, binlog and one role output", n)
	}
	// The reference's reader refuses it, saying what it is.
	if _, err := evidence.Parse(raw); !errors.Is(err, evidence.ErrBadInput) || !strings.Contains(err.Error(), "black-box audit") {
		t.Errorf("Parse(black-box) = %v", err)
	}
	if err := schemas.ValidateEvidenceJSON(raw); err == nil {
		t.Error("the reference schema accepts a black-box audit's evidence")
	}
}

// TestReferenceEvidenceUnchanged: the committed reference evidence is
// still FormatReference and valid against its schema, and the black-box
// schema refuses it.
func TestReferenceEvidenceUnchanged(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("example", "u80.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := evidence.FormatOf(raw); got != evidence.FormatReference {
		t.Errorf("FormatOf = %s", got)
	}
	if _, err := evidence.Parse(raw); err != nil {
		t.Error(err)
	}
	if err := schemas.ValidateBlackBoxJSON(raw); err == nil {
		t.Error("the black-box schema accepts the reference's evidence")
	}
}

func TestBlackBoxSchemaRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*evidence.BlackBox)
		want string
	}{
		{"client both file and missing", func(bb *evidence.BlackBox) { bb.Client.Missing = "no load" }, "/client"},
		{"client neither", func(bb *evidence.BlackBox) { bb.Client = evidence.ClientHistory{} }, "/client"},
		{"profile outside the bundle", func(bb *evidence.BlackBox) { bb.Profile.Path = "../profile.yaml" }, "/profile/path"},
		{"absolute role output", func(bb *evidence.BlackBox) { bb.Roles[0].File.Path = "/etc/passwd" }, "/roles/0/file/path"},
		{"bound", func(bb *evidence.BlackBox) { bb.Liveness.Bound = "30 seconds" }, "/liveness/bound"},
		{"gtid", func(bb *evidence.BlackBox) { bb.Window.Binlog.GTIDEnd = "0-1" }, "/window/binlog/gtid_end"},
		{"claim", func(bb *evidence.BlackBox) { bb.Claims.Status = "OK" }, "/claims/status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bb := sampleBlackBox()
			tc.edit(bb)
			_, err := evidence.MarshalBlackBox(bb)
			var se *schemas.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("MarshalBlackBox = %v; want a schema error at %s", err, tc.want)
			}
		})
	}
}

func TestParseBound(t *testing.T) {
	for in, want := range map[string]time.Duration{"500ms": 500 * time.Millisecond, "30s": 30 * time.Second, "5m": 5 * time.Minute, "1h": time.Hour} {
		got, err := evidence.ParseBound(in)
		if err != nil || got != want || evidence.FormatBound(got) != in {
			t.Errorf("ParseBound(%q) = %v, %v; FormatBound = %q", in, got, err, evidence.FormatBound(got))
		}
	}
	for _, bad := range []string{"", "s", "-1s", "1d", "99999999999999999999h", "1.5s"} {
		if _, err := evidence.ParseBound(bad); err == nil {
			t.Errorf("ParseBound(%q) succeeded", bad)
		}
	}
}
