// Package profile reads the profile of a pipeline audited as a black box
// (docs/blackbox.md, ../shared/BLACKBOX.md "The profile"): one YAML file
// that says where the pipeline writes its facts (the outbox, the relay's
// progress, the inbox and the effects), what it promises and how to start
// it, never how it works inside.
//
// Load parses the YAML into a yaml.Node tree (which keeps line numbers),
// validates it against schemas/profile.schema.json and a few rules a
// schema cannot say (a role a template names must exist; per-aggregate
// order needs an aggregate), and reports every problem, not only the
// first, as "profile.yaml:LINE: field.path: what is wrong". The password
// of a DSN never appears in a message: every message is redacted.
package profile

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalid is wrapped by the *Error of a profile that cannot be used (a
// YAML syntax error, a schema violation, a cross-field rule): the caller
// exits 2 on it (errors.Is).
var ErrInvalid = errors.New("invalid profile")

// Profile is a validated profile. Fields a profile may omit hold their
// defaults once Load returns (see setDefaults).
type Profile struct {
	Name string `json:"name"`
	// About says what the pipeline is, for the report's reader; shown as
	// the profile states it, never checked.
	About    *About             `json:"about,omitempty"`
	Database Database           `json:"database"`
	Broker   Broker             `json:"broker"`
	Topic    Topic              `json:"topic"`
	Outbox   Outbox             `json:"outbox"`
	Business *Business          `json:"business,omitempty"`
	Inbox    *Inbox             `json:"inbox,omitempty"`
	Effect   *Effect            `json:"effect,omitempty"`
	Promises Promises           `json:"promises"`
	Load     *LoadSpec          `json:"load,omitempty"`
	Roles    map[string]RoleDef `json:"roles,omitempty"`
	// Invariants are the user's anti-joins over the pipeline's tables,
	// run on the tables rebuilt from the binlog (antijoin.go).
	Invariants []Invariant `json:"invariants,omitempty"`
}

// About is the profile's description of the pipeline it maps: a sentence
// and its components with their versions (a go.mod's requirements, an
// image's tag).
type About struct {
	Text       string   `json:"text,omitempty"`
	Components []string `json:"components,omitempty"`
}

// Database says which server holds the pipeline's tables.
type Database struct {
	// DSN is the user's server (go-sql-driver form); empty: a private
	// server of the tool, with Migrations applied. It holds a secret:
	// show it only through Redacted.
	DSN string `json:"dsn,omitempty"`
	// Schema is the database whose tables the audit reads; empty: the
	// DSN's database, or the private server's.
	Schema     string   `json:"schema,omitempty"`
	Migrations []string `json:"migrations,omitempty"`
	// ServerOptions are settings of the private server, from an
	// allowlist (the schema's): how it locks and isolates, never a path.
	ServerOptions ServerOptions `json:"server_options,omitzero"`
}

// ServerOptions are the private server's settings a profile may choose.
type ServerOptions struct {
	InnodbAutoincLockMode *int   `json:"innodb_autoinc_lock_mode,omitempty"`
	TransactionIsolation  string `json:"transaction_isolation,omitempty"`
	InnodbLockWaitTimeout *int   `json:"innodb_lock_wait_timeout,omitempty"`
}

// Args are the server flags of o.
func (o ServerOptions) Args() []string {
	var args []string
	if o.InnodbAutoincLockMode != nil {
		args = append(args, fmt.Sprintf("--innodb-autoinc-lock-mode=%d", *o.InnodbAutoincLockMode))
	}
	if o.TransactionIsolation != "" {
		args = append(args, "--transaction-isolation="+o.TransactionIsolation)
	}
	if o.InnodbLockWaitTimeout != nil {
		args = append(args, fmt.Sprintf("--innodb-lock-wait-timeout=%d", *o.InnodbLockWaitTimeout))
	}
	return args
}

// Redacted returns the DSN with its password replaced.
func (d Database) Redacted() string { return Redact(d.DSN, d.DSN) }

// Broker modes.
const (
	BrokerEmbedded = "embedded"
	BrokerExternal = "external"
)

// Broker says which Kafka cluster the pipeline publishes to.
type Broker struct {
	Mode    string   `json:"mode"` // default embedded
	Brokers []string `json:"brokers,omitempty"`
}

// Record keys a topic may promise.
const (
	KeyAggregate = "aggregate" // the event's aggregate (the default)
	KeyEventID   = "event-id"
	KeyNone      = "none" // not checked
)

// Topic is the topic the relay publishes to and where a record carries
// the event id.
type Topic struct {
	Name    string  `json:"name"`
	EventID Locator `json:"event_id"`
	Key     string  `json:"key"` // default aggregate
	// Groups are the consumer groups whose committed offsets must reach
	// the end (lag) and that count as delivery (effects); a trailing "*"
	// matches any suffix. Empty: every group with offsets on the topic.
	Groups []string `json:"groups,omitempty"`
}

// Locator says where a record carries the event id: a header, or a JSON
// path into the record's value.
type Locator struct {
	Header string `json:"header,omitempty"`
	Value  *Field `json:"value,omitempty"`
}

// Decoders of an outbox payload column (the enum of the schema).
const (
	DecodeNone      = "none"
	DecodeWatermill = "watermill-envelope"
)

// Outbox maps the outbox table.
type Outbox struct {
	Table     string   `json:"table"`
	EventID   Field    `json:"event_id"`
	Aggregate *Field   `json:"aggregate,omitempty"`
	Sequence  *Field   `json:"sequence,omitempty"`
	Payload   Payload  `json:"payload"`
	Progress  Progress `json:"progress"`
}

// Payload is the column a record's value comes from, and its decoder.
type Payload struct {
	Column string `json:"column"`
	Decode string `json:"decode"` // default none
}

// Relay progress kinds: what the relay writes, that the binlog shows
// moving, when it is done with an event.
const (
	ProgressStatus    = "status"    // Column takes a value in Done
	ProgressCursor    = "cursor"    // Table.Column reaches the row's Against
	ProgressCompleted = "completed" // Column goes from NULL to a value
	ProgressDelete    = "delete"    // the row is deleted
	ProgressNone      = "none"      // nothing shows it
)

// Progress is the relay's progress as the binlog shows it.
type Progress struct {
	Kind   string `json:"kind"`
	Column string `json:"column,omitempty"`
	// Done are the values of Column (status) that mean published; YAML
	// integers are kept as their decimal text.
	Done []Scalar `json:"done,omitempty"`
	// Table (cursor) is the table of the cursor row, Column its value,
	// Against the outbox field the cursor is compared with (the cursor
	// has passed a row when it is at least the row's Against), Match the
	// columns that pick the cursor row (consumer_group: forwarder).
	Table   string            `json:"table,omitempty"`
	Against *Field            `json:"against,omitempty"`
	Match   map[string]Scalar `json:"match,omitempty"`
}

// IsDone says whether v, a value of a status relay's Column, is one of
// Done: the row is published.
func (pr Progress) IsDone(v any) bool {
	t, ok := Text(v)
	if !ok {
		return false
	}
	for _, d := range pr.Done {
		if string(d) == t {
			return true
		}
	}
	return false
}

// Business is the business table whose rows must commit with their
// outbox rows (the commit-atomic rule).
type Business struct {
	Table   string   `json:"table"`
	EventID *Field   `json:"event_id,omitempty"`
	Ops     []string `json:"ops,omitempty"` // default [insert]
}

// Inbox is the consumer's dedupe table.
type Inbox struct {
	Table    string `json:"table"`
	EventID  Field  `json:"event_id"`
	Consumer *Field `json:"consumer,omitempty"`
}

// Effect is the consumer's effect table.
type Effect struct {
	Table    string `json:"table"`
	EventID  Field  `json:"event_id"`
	Consumer *Field `json:"consumer,omitempty"`
	PerEvent int    `json:"per_event"` // default 1
}

// Promise values.
const (
	OrderNone          = "none"
	OrderPerAggregate  = "per-aggregate"
	DuplicatesAllowed  = "allowed"
	DuplicatesNone     = "none"
	DefaultLiveness    = 30 * time.Second
	defaultLivenessStr = "30s"
)

// Promises choose the rules that apply.
type Promises struct {
	Order      string `json:"order"`      // default none
	Duplicates string `json:"duplicates"` // default allowed
	// Liveness is the bound within which a committed event must have its
	// record once the run has settled (the pending rule).
	Liveness Duration `json:"liveness"`
}

// LoadSpec is what the load client sends and how its requests are found
// in the outbox.
type LoadSpec struct {
	// HTTP or SQL, exactly one: a request to the pipeline's service, or
	// statements the client runs in one transaction per request.
	HTTP      *HTTPRequest `json:"http,omitempty"`
	SQL       *SQLLoad     `json:"sql,omitempty"`
	Correlate Field        `json:"correlate"`
	// Token is the template of a request's correlation token, which the
	// pipeline must write where Correlate says (default DefaultToken).
	Token       string `json:"token,omitempty"`
	Requests    int    `json:"requests,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
}

// DefaultToken is a request's correlation token when the profile's
// load.token is not set: the run id and the request's number.
const DefaultToken = "{{run}}-{{n}}"

// HTTPRequest is one templated request.
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// RoleDef is one process of the pipeline (used by the audit command of
// the next issue; validated now).
type RoleDef struct {
	Start    string            `json:"start"`
	Env      map[string]string `json:"env,omitempty"`
	Ready    string            `json:"ready,omitempty"`
	Replicas int               `json:"replicas,omitempty"` // default 1
}

// setDefaults fills what the profile left out.
func (p *Profile) setDefaults() {
	if p.Broker.Mode == "" {
		p.Broker.Mode = BrokerEmbedded
	}
	if p.Topic.Key == "" {
		p.Topic.Key = KeyAggregate
	}
	if p.Outbox.Payload.Decode == "" {
		p.Outbox.Payload.Decode = DecodeNone
	}
	if p.Business != nil && len(p.Business.Ops) == 0 {
		p.Business.Ops = []string{"insert"}
	}
	if p.Effect != nil && p.Effect.PerEvent == 0 {
		p.Effect.PerEvent = 1
	}
	if p.Promises.Order == "" {
		p.Promises.Order = OrderNone
	}
	if p.Promises.Duplicates == "" {
		p.Promises.Duplicates = DuplicatesAllowed
	}
	if p.Promises.Liveness == 0 {
		p.Promises.Liveness = Duration(DefaultLiveness)
	}
	if p.Load != nil && p.Load.Token == "" {
		p.Load.Token = DefaultToken
	}
	for name, r := range p.Roles {
		if r.Replicas == 0 {
			r.Replicas = 1
			p.Roles[name] = r
		}
	}
}
