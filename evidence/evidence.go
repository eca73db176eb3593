package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orderflow-audit/orderflow-audit/spec"
)

// SchemaVersion is the value of schema_version this code reads and writes;
// schemas/evidence.schema.json pins it with "const". v2 made the witness
// object required (the database's binlog and the broker's log in the
// bundle); v1 evidence has none and is refused by name (Parse).
const SchemaVersion = "orderflow-audit/evidence/v2"

// schemaVersionsBefore are the versions this code no longer reads, with
// why, so that a reader of an old file is told what to do.
var schemaVersionsBefore = map[string]string{
	"orderflow-audit/evidence/v1": "written before runs carried witnesses (the database's binlog and the broker's own log, " +
		"which verify holds every actor event against)",
}

// Scenario statuses.
const (
	StatusPass   = "PASS"
	StatusFail   = "FAIL"
	StatusNotRun = "NOT_RUN"
)

// Boundaries a scenario can inject a fault at (declared in spec).
const (
	BoundaryNone   = spec.BoundaryNone
	BoundaryCommit = spec.BoundaryCommit
	BoundarySend   = spec.BoundarySend
	BoundaryAck    = spec.BoundaryAck
)

// Evidence is the content of evidence/u80.json.
type Evidence struct {
	SchemaVersion string      `json:"schema_version"`
	Tool          Tool        `json:"tool"`
	Run           Run         `json:"run"`
	Environment   Environment `json:"environment"`
	Scenarios     []Scenario  `json:"scenarios"`
	Boundaries    []Boundary  `json:"boundaries"`
	ProofBoundary []ProofRow  `json:"proof_boundary"`
	// ProofClaims are what the runner says the run did, from which it
	// rendered the matrix's faults (RenderProofBoundary); absent in
	// evidence of versions before they were recorded.
	ProofClaims *ProofClaims `json:"proof_claims,omitempty"`
	Summary     Summary      `json:"summary"`
	// Witness is what the database and the broker recorded themselves
	// (required since schema v2; a witness that could not be had is
	// listed in Witness.Missing).
	Witness *Witness `json:"witness"`
}

// Tool identifies the binary that produced the evidence.
type Tool struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Revision string `json:"revision"`
	// Build is the binary's build information; absent in evidence of
	// versions before it was recorded.
	Build *BuildInfo `json:"build,omitempty"`
}

// Run describes one invocation of `orderflow-audit run`.
type Run struct {
	ID    string    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Seed  int64     `json:"seed"`
	Args  []string  `json:"args"`
	// Planted names the bug planted into the system under test for this
	// run (a negative control); empty for a clean run.
	Planted string `json:"planted,omitempty"`
	// Interrupted is true when the run was stopped by a signal or a
	// deadline before every selected scenario finished.
	Interrupted bool `json:"interrupted"`
	// Selection is what the run was asked to do (scenarios, plant, chaos
	// settings), written from its options; absent in evidence of
	// versions before it was recorded (the verifier then cannot tell
	// which scenarios were selected).
	Selection *Selection `json:"selection,omitempty"`
}

// Environment records what actually ran.
type Environment struct {
	Database DatabaseEnv `json:"database"`
	Kafka    KafkaEnv    `json:"kafka"`
	Go       string      `json:"go"`
	OS       string      `json:"os"`
	Arch     string      `json:"arch"`
	// ActorProcesses is true when actors ran as separate OS processes in
	// at least one scenario.
	ActorProcesses bool `json:"actor_processes"`
	// SUT is the system under test and what it claims. Absent in evidence
	// written before the seam existed: the reference implementation.
	SUT *SUTEnv `json:"system_under_test,omitempty"`
}

// SUTEnv names the system under test, the features it claims and the
// layers of verifier rules that follow from them (spec.Features.Layers).
type SUTEnv struct {
	Name     string   `json:"name"`
	Features []string `json:"features"`
	Layers   []string `json:"layers"`
	// Source digests the system under test's code that ran, when the
	// implementation can say (the reference embeds its own source);
	// absent in evidence of versions before it was recorded.
	Source *SourceDigest `json:"source,omitempty"`
}

// DatabaseEnv is the database server. DSN is always redacted.
type DatabaseEnv struct {
	Flavour   string `json:"flavour"`
	Version   string `json:"version"`
	Isolation string `json:"isolation"`
	DSN       string `json:"dsn"`
	// Mode says who started the server: DatabasePrivate (the run, for
	// itself), DatabaseContainer (the run, in a container) or
	// DatabaseExternal (the user's). Absent in evidence written before runs
	// had a private server: an external one.
	Mode string `json:"mode,omitempty"`
	// Container is the container the server ran in (mode container).
	Container *ContainerEnv `json:"container,omitempty"`
}

// ContainerEnv is the container a run started a server or broker in,
// through testcontainers-go, and removed at its end.
type ContainerEnv struct {
	// Image is the image reference as given (mysql:8.4).
	Image string `json:"image"`
	// ImageID is the image's content digest (sha256 of its
	// configuration): the exact image, on any engine.
	ImageID string `json:"image_id"`
	// RepoDigests are the image's registry digests (name@sha256:...);
	// empty for an image built locally.
	RepoDigests []string `json:"repo_digests"`
	// Engine is the container engine and its version.
	Engine string `json:"engine"`
}

// Database modes as recorded in DatabaseEnv.Mode.
const (
	// DatabasePrivate: a mariadbd started by the run for the run alone,
	// with a fresh data directory, removed at its end.
	DatabasePrivate = "private"
	// DatabaseExternal: a server the user named (--mysql-dsn or
	// ORDERFLOW_MYSQL_DSN).
	DatabaseExternal = "external"
	// DatabaseContainer: a server in a container the run started for
	// itself (--db container:IMAGE) and removed at its end.
	DatabaseContainer = "container"
)

// KafkaEnv is the broker: mode "embedded" (kfake), "container" (a broker
// in a container the run started, --kafka container:IMAGE) or "external".
type KafkaEnv struct {
	Mode           string   `json:"mode"`
	Implementation string   `json:"implementation"`
	Brokers        []string `json:"brokers"`
	// Container is the container the broker ran in (mode container).
	Container *ContainerEnv `json:"container,omitempty"`
}

// Scenario is the outcome of one scenario.
type Scenario struct {
	ID          string   `json:"id"`
	Suite       string   `json:"suite"`
	Boundary    string   `json:"boundary"`
	Description string   `json:"description"`
	FaultPoints []string `json:"fault_points"`
	Status      string   `json:"status"`
	Reason      string   `json:"reason,omitempty"`
	Metrics     []Metric `json:"metrics"`
	Line        string   `json:"line"`
	// ConsumerMode is how the scenario's consumer settled records
	// (spec.ConsumerMode: record, or batch for a batch variant); absent
	// for a scenario without a consumer, and in evidence of versions
	// before it was recorded (which ran the per-record consumer).
	ConsumerMode string   `json:"consumer_mode,omitempty"`
	Database     string   `json:"database,omitempty"`
	Kept         bool     `json:"kept"`
	Topics       []string `json:"topics"`
	Logs         []LogRef `json:"logs"`
	// Invariants are the live results of the invariant queries, run
	// against the scenario's database at its end.
	Invariants []InvariantResult `json:"invariants"`
	// Tables are digests of each table's final rows (see DigestSpecs).
	Tables    []TableDigest `json:"tables"`
	ElapsedMS int64         `json:"elapsed_ms"`
}

// Metric is one name=value pair of an observation line, in line order.
type Metric struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LogRef points at an event log, relative to the evidence file.
type LogRef struct {
	Path   string `json:"path"`
	Actor  string `json:"actor"`
	SHA256 string `json:"sha256"`
	Lines  int64  `json:"lines"`
}

// InvariantResult is how many rows an invariant query returned (0 = holds).
type InvariantResult struct {
	ID   string `json:"id"`
	Rows int64  `json:"rows"`
}

// TableDigest is the digest of one table's identity columns.
type TableDigest struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}

// Boundary is one row of the boundary table.
type Boundary struct {
	Boundary     string `json:"boundary"`
	Injection    string `json:"injection"`
	Recovery     string `json:"recovery"`
	AcceptedWhen string `json:"accepted_when"`
	Scenario     string `json:"scenario"`
	Status       string `json:"status"`
	Figures      string `json:"figures"`
}

// ProofRow is one category of the proof-boundary matrix.
type ProofRow struct {
	Category    string   `json:"category"`
	Had         []string `json:"had"`
	CannotInfer []string `json:"cannot_infer"`
}

// Summary counts scenarios by status.
type Summary struct {
	Total  int `json:"total"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	NotRun int `json:"not_run"`
}

// FormatLine renders an observation line:
// "<suite> <id>=<status> name=value ...".
func FormatLine(suite, id, status string, metrics []Metric) string {
	var b strings.Builder
	b.WriteString(suite)
	b.WriteByte(' ')
	b.WriteString(id)
	b.WriteByte('=')
	b.WriteString(status)
	for _, m := range metrics {
		b.WriteByte(' ')
		b.WriteString(m.Name)
		b.WriteByte('=')
		b.WriteString(m.Value)
	}
	return b.String()
}

// Summarize counts the scenarios by status.
func Summarize(scs []Scenario) Summary {
	s := Summary{Total: len(scs)}
	for _, sc := range scs {
		switch sc.Status {
		case StatusPass:
			s.Passed++
		case StatusFail:
			s.Failed++
		default:
			s.NotRun++
		}
	}
	return s
}

// DigestSpec names the identity columns of a table that its digest covers:
// ids, states, versions, tokens, and the order's business values (its
// user, amount, prices); never clock values.
type DigestSpec struct {
	Table   string
	Columns []string
	// Legacy are the columns that evidence of versions before the
	// business columns digested (a prefix of Columns); nil when they were
	// the same. The verifier accepts such a digest and says so.
	Legacy []string
}

// DigestSpecs are the tables digested at the end of every scenario, in
// order. The runner reads them from the live database, the verifier from
// the replayed state; both go through DigestRows.
var DigestSpecs = []DigestSpec{
	{Table: "stock", Columns: []string{"sku", "quantity"}},
	{Table: "orders", Columns: []string{"id", "sku", "quantity", "principal", "amount_cents"},
		Legacy: []string{"id", "sku", "quantity"}},
	{Table: "order_lines", Columns: []string{"order_id", "sku", "quantity", "price_cents"},
		Legacy: []string{"order_id", "sku", "quantity"}},
	{Table: "idempotency_records", Columns: []string{"idem_key", "order_id", "status_code", "principal"},
		Legacy: []string{"idem_key", "order_id", "status_code"}},
	{Table: "outbox", Columns: []string{"event_id", "aggregate_id", "state", "claim_version", "claim_id"}},
	{Table: "inbox", Columns: []string{"consumer", "event_id"}},
	{Table: "notification", Columns: []string{"id", "consumer", "event_id", "order_id"}},
}

// DigestQuery is the SELECT that reads a spec's columns, portable across
// MySQL, MariaDB and SQLite.
func (d DigestSpec) DigestQuery() string {
	return "SELECT " + strings.Join(d.Columns, ", ") + " FROM " + d.Table
}

// DigestRows returns the sha256 of rows in a canonical form: each value
// quoted (nil as NULL), fields joined by ",", rows sorted and joined by
// "\n". Order of the input rows does not matter.
func DigestRows(rows [][]*string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		fs := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				fs[j] = "NULL"
			} else {
				fs[j] = strconv.Quote(*v)
			}
		}
		lines[i] = strings.Join(fs, ",")
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// SourceDigest names the source code of a system under test: the sha256
// over its files (one line per file, "<sha256 of the file>  <path>", sorted
// by path), how many files that is, and the directories they are in.
type SourceDigest struct {
	SHA256   string   `json:"sha256"`
	Files    int      `json:"files"`
	Packages []string `json:"packages"`
}

// DigestSource digests files (path relative to the module root ->
// content) of the directories dirs.
func DigestSource(dirs []string, files map[string][]byte) SourceDigest {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		sum := sha256.Sum256(files[p])
		h.Write([]byte(hex.EncodeToString(sum[:]) + "  " + p + "\n"))
	}
	ds := append([]string(nil), dirs...)
	sort.Strings(ds)
	return SourceDigest{SHA256: hex.EncodeToString(h.Sum(nil)), Files: len(paths), Packages: ds}
}

// BuildInfo is what the Go toolchain stamped into the binary that ran
// (runtime/debug.ReadBuildInfo), with the revision passed by -ldflags when
// the toolchain could not stamp one (a build in a git worktree).
type BuildInfo struct {
	GoVersion     string `json:"go_version"`
	Module        string `json:"module"`
	ModuleVersion string `json:"module_version"`
	// VCSRevision and VCSModified say which commit was built and whether
	// the tree had local changes; VCSTime is the commit's time. Stamp
	// says where they come from: "vcs" (the toolchain), "ldflags"
	// (-X main.revision) or "none" (not stamped: VCSRevision is "").
	VCSRevision string `json:"vcs_revision"`
	VCSTime     string `json:"vcs_time,omitempty"`
	VCSModified bool   `json:"vcs_modified"`
	Stamp       string `json:"stamp"`
}

// Build stamps.
const (
	StampVCS     = "vcs"
	StampLDFlags = "ldflags"
	StampNone    = "none"
)
