package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/schemas"
)

// The evidence of a black-box audit (docs/blackbox.md, ../shared/BLACKBOX.md):
// the audit of a pipeline the tool did not write, from one profile, the
// witnesses of the run window and the load client's own history. It is a
// second kind of evidence file beside the reference pipeline's (Evidence),
// told apart by its schema_version and validated by
// schemas/blackbox.schema.json. Every file it names is a file of the bundle
// with its size and sha256, beneath the directory named after the evidence
// file (audit/ beside audit.json); the verifier reads each one through the
// bundle gate (evidence/bundle), never from a path outside it, the profile
// included.

// BlackBoxSchemaVersion is the schema_version of a black-box audit's
// evidence.
const BlackBoxSchemaVersion = "orderflow-audit/evidence/blackbox/v1"

// Format is the kind of an evidence file.
type Format string

// Formats of evidence files.
const (
	// FormatReference is the evidence of a run of the reference pipeline
	// (Evidence, schemas/evidence.schema.json).
	FormatReference Format = "reference"
	// FormatBlackBox is the evidence of a black-box audit (BlackBox,
	// schemas/blackbox.schema.json).
	FormatBlackBox Format = "black-box"
)

// FormatOf tells the kind of the evidence file raw by its schema_version.
// Anything that is not a black-box audit's is FormatReference, whose
// reader (Parse) says what is wrong with it.
func FormatOf(raw []byte) Format {
	var probe struct {
		SchemaVersion any `json:"schema_version"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.SchemaVersion == BlackBoxSchemaVersion {
		return FormatBlackBox
	}
	return FormatReference
}

// BlackBox is the content of a black-box audit's evidence file.
type BlackBox struct {
	SchemaVersion string      `json:"schema_version"`
	Tool          Tool        `json:"tool"`
	Run           BlackBoxRun `json:"run"`
	// Profile is the profile the audit ran under, as a file of the bundle.
	Profile ProfileFile `json:"profile"`
	// Target is the database and topic of the run: the profile's, or
	// the ones the tool named for the run.
	Target   Target   `json:"target"`
	Window   Window   `json:"window"`
	Liveness Liveness `json:"liveness"`
	// Client is the load client's history, or why there is none.
	Client ClientHistory `json:"client"`
	// Witness is the binlog and the broker's log of the run, as in the
	// reference pipeline's evidence.
	Witness *Witness `json:"witness"`
	// Roles are the pipeline's processes' captured output: claims shown
	// beside the verdict, never its basis.
	Roles []RoleOutput `json:"roles"`
	// Nemesis is the faults the audit injected; nil for a bundle made
	// without a nemesis (a wrapped reference run).
	Nemesis *NemesisLog `json:"nemesis,omitempty"`
	Claims  Claims      `json:"claims"`
}

// NemesisLog is the audit's record of the faults it injected: a JSONL
// file of the bundle (one fault a line, as runner/audit.NemesisEvent) and
// how many of each kind were applied. Like the roles' output it is shown
// beside the verdict, never its basis: what the faults did is read from
// the witnesses.
type NemesisLog struct {
	File   WitnessFile    `json:"file"`
	Faults map[string]int `json:"faults"`
}

// BlackBoxRun is one audit run.
type BlackBoxRun struct {
	ID          string    `json:"id"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Seed        int64     `json:"seed"`
	Args        []string  `json:"args"`
	Interrupted bool      `json:"interrupted"`
}

// ProfileFile is the profile's file in the bundle and the name it gives
// itself (its name: field, which the report's title shows).
type ProfileFile struct {
	Name string `json:"name"`
	WitnessFile
}

// Target is what the run audited: a database of the server and a topic.
type Target struct {
	Database string `json:"database"`
	Topic    string `json:"topic"`
}

// Window is the run window: where the witnesses begin and end.
type Window struct {
	Start  time.Time    `json:"start"`
	End    time.Time    `json:"end"`
	Binlog BinlogWindow `json:"binlog"`
	Broker BrokerWindow `json:"broker"`
}

// BinlogWindow locates the window in the binlog: the transactions after
// StartFile:StartPos, GTIDStart and GTIDEnd being @@gtid_binlog_pos before
// and after (comma-separated domain-server-sequence lists; GTIDStart is
// empty for a server with no transaction before the window).
type BinlogWindow struct {
	StartFile string `json:"start_file"`
	StartPos  uint32 `json:"start_pos"`
	GTIDStart string `json:"gtid_start"`
	GTIDEnd   string `json:"gtid_end"`
}

// BrokerWindow locates the window in the topic: its end offset per
// partition when the window began.
type BrokerWindow struct {
	StartOffsets []PartitionOffset `json:"start_offsets"`
}

// PartitionOffset is one partition's offset.
type PartitionOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// Liveness is the bound the audit applied and when the run had settled.
type Liveness struct {
	// Bound is a duration as a profile writes one (500ms, 30s, 5m, 1h).
	Bound     string    `json:"bound"`
	SettledAt time.Time `json:"settled_at"`
}

// Duration returns Bound as a time.Duration.
func (l Liveness) Duration() (time.Duration, error) {
	return ParseBound(l.Bound)
}

// ParseBound reads a bound of the form the schema allows (digits and one
// of ms, s, m, h) as a duration.
func ParseBound(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}} {
		digits, ok := strings.CutSuffix(s, u.suffix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || n > int64(1<<62)/int64(u.unit) {
			return 0, fmt.Errorf("liveness bound %q is out of range", s)
		}
		return time.Duration(n) * u.unit, nil
	}
	return 0, fmt.Errorf("liveness bound %q: want digits and ms, s, m or h", s)
}

// FormatBound writes d in the form ParseBound reads, in the largest unit
// that divides it.
func FormatBound(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// ClientHistory is the load client's history file (one ClientRequest per
// line) and its number of requests, or, when the audit drove no load of
// its own, Missing saying why.
type ClientHistory struct {
	File     *WitnessFile `json:"file,omitempty"`
	Requests *int64       `json:"requests,omitempty"`
	Missing  string       `json:"missing,omitempty"`
}

// ClientOutcome is what the load client learned of one request, as
// Jepsen's :ok, :fail and :info.
type ClientOutcome string

// Client outcomes.
const (
	ClientOK      ClientOutcome = "ok"
	ClientFailed  ClientOutcome = "fail"
	ClientUnknown ClientOutcome = "unknown" // a timeout: settled by the binlog
)

// ClientRequest is one line of the load client's history: the only input
// of a black-box verdict that is not a witness, and the tool's own.
type ClientRequest struct {
	N int `json:"n"`
	// Token is the correlation token the request carried, found in the
	// outbox row at the profile's load.correlate.
	Token   string        `json:"token"`
	Key     string        `json:"key,omitempty"` // idempotency key
	Outcome ClientOutcome `json:"outcome"`
	Status  int           `json:"status,omitempty"` // HTTP status, when answered
	Start   time.Time     `json:"start"`
	End     time.Time     `json:"end"`
}

// RoleOutput is one captured output stream of one replica of a role.
type RoleOutput struct {
	Role    string      `json:"role"`
	Replica int         `json:"replica"`
	Stream  string      `json:"stream"` // stdout or stderr
	File    WitnessFile `json:"file"`
}

// Claims are the verdict the audit printed when it wrote the bundle.
type Claims struct {
	Status string        `json:"status"`
	Rules  []ClaimedRule `json:"rules"`
}

// ClaimedRule is one rule's claimed verdict and number of reasons.
type ClaimedRule struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Count  int    `json:"count"`
}

// Files lists every file the bundle names: the profile, the client's
// history, the witnesses' files and the roles' output.
func (bb *BlackBox) Files() []WitnessFile {
	out := []WitnessFile{bb.Profile.WitnessFile}
	if bb.Client.File != nil {
		out = append(out, *bb.Client.File)
	}
	if w := bb.Witness; w != nil {
		if w.Database != nil {
			out = append(out, w.Database.Files...)
		}
		if w.Broker != nil {
			out = append(out, w.Broker.Files...)
		}
	}
	for _, r := range bb.Roles {
		out = append(out, r.File)
	}
	if bb.Nemesis != nil {
		out = append(out, bb.Nemesis.File)
	}
	return out
}

// BlackBoxDir is the directory, relative to the evidence file, beneath
// which a black-box bundle keeps every file it names: the evidence file's
// base name without .json ("audit" for audit.json).
func BlackBoxDir(evidencePath string) string {
	return strings.TrimSuffix(path.Base(strings.ReplaceAll(evidencePath, `\`, "/")), ".json")
}

// ParseBlackBox validates raw against schemas/blackbox.schema.json and
// decodes it strictly. Every failure wraps ErrBadInput; a schema failure
// also wraps *schemas.Error with every problem.
func ParseBlackBox(raw []byte) (*BlackBox, error) {
	if FormatOf(raw) != FormatBlackBox {
		return nil, fmt.Errorf("%w: not the evidence of a black-box audit (want schema_version %q)", ErrBadInput, BlackBoxSchemaVersion)
	}
	if err := schemas.ValidateBlackBoxJSON(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	var bb BlackBox
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bb); err != nil {
		return nil, fmt.Errorf("%w: decode: %v", ErrBadInput, err)
	}
	if _, err := bb.Liveness.Duration(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return &bb, nil
}

// MarshalBlackBox encodes bb as indented JSON with a trailing newline and
// validates the result against its schema.
func MarshalBlackBox(bb *BlackBox) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(bb); err != nil {
		return nil, fmt.Errorf("encode black-box evidence: %w", err)
	}
	if err := schemas.ValidateBlackBoxJSON(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("black-box evidence %w", err)
	}
	return buf.Bytes(), nil
}

// WriteBlackBox validates bb and writes it atomically (WriteAtomic).
func WriteBlackBox(path string, bb *BlackBox) error {
	data, err := MarshalBlackBox(bb)
	if err != nil {
		return err
	}
	return WriteAtomic(path, data)
}
