package profile_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
)

// minimal is the smallest valid profile; the malformed cases edit it.
const minimal = `name: shop
topic:
  name: orders.events
  event_id: {header: id}
outbox:
  table: outbox
  event_id: id
  aggregate: aggregateid
  payload: {column: payload}
  progress: {kind: none}
`

func TestParseMinimalDefaults(t *testing.T) {
	p, err := profile.Parse("profile.yaml", []byte(minimal))
	if err != nil {
		t.Fatalf("Parse(minimal) = %v", err)
	}
	if p.Broker.Mode != profile.BrokerEmbedded || p.Topic.Key != profile.KeyAggregate ||
		p.Outbox.Payload.Decode != profile.DecodeNone || p.Promises.Order != profile.OrderNone ||
		p.Promises.Duplicates != profile.DuplicatesAllowed || time.Duration(p.Promises.Liveness) != profile.DefaultLiveness {
		t.Errorf("defaults not set: %+v", p)
	}
	if p.Outbox.EventID.Column != "id" || p.Outbox.Aggregate.Column != "aggregateid" {
		t.Errorf("fields = %v, %v", p.Outbox.EventID, p.Outbox.Aggregate)
	}
}

func TestLoadReference(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "..", "profiles", "reference.yaml"))
	if err != nil {
		t.Fatalf("Load(reference.yaml) = %v", err)
	}
	if p.Name != "reference" || p.Outbox.Progress.Kind != profile.ProgressStatus ||
		len(p.Outbox.Progress.Done) != 1 || p.Outbox.Progress.Done[0] != "SENT" ||
		p.Effect == nil || p.Effect.PerEvent != 1 || p.Roles["relay"].Replicas != 2 || p.Roles["service"].Replicas != 1 ||
		p.Promises.Order != profile.OrderPerAggregate || p.Outbox.Sequence.String() != "aggregate_version" {
		t.Errorf("reference profile read as %+v", p)
	}
}

func TestParseWatermill(t *testing.T) {
	src := `name: wm
topic: {name: orders, event_id: {header: _watermill_message_uuid}}
outbox:
  table: watermill_outbox
  event_id: "payload$.uuid"
  aggregate: "payload$.metadata.aggregate_id"
  payload: {column: payload, decode: watermill-envelope}
  progress: {kind: cursor, table: watermill_offsets_outbox, column: offset_acked, against: offset, match: {consumer_group: forwarder}}
`
	p, err := profile.Parse("wm.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if got := p.Outbox.Aggregate.String(); got != "payload$.metadata.aggregate_id" {
		t.Errorf("aggregate = %q", got)
	}
	if p.Outbox.Progress.Match["consumer_group"] != "forwarder" || p.Outbox.Progress.Against.Column != "offset" {
		t.Errorf("progress = %+v", p.Outbox.Progress)
	}
}

// edit returns minimal with old replaced by new (which must be there).
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(minimal, old) {
		t.Fatalf("minimal has no %q", old)
	}
	return strings.Replace(minimal, old, new, 1)
}

// TestServerOptions: the private server's settings a profile may choose
// become its flags; nothing else does.
func TestServerOptions(t *testing.T) {
	p, err := profile.Parse("profile.yaml", []byte(minimal+"database:\n  server_options: {innodb_autoinc_lock_mode: 0, transaction_isolation: READ-COMMITTED, innodb_lock_wait_timeout: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.Database.ServerOptions.Args(), " ")
	if want := "--innodb-autoinc-lock-mode=0 --transaction-isolation=READ-COMMITTED --innodb-lock-wait-timeout=7"; got != want {
		t.Errorf("Args() = %q; want %q", got, want)
	}
	if m, _ := profile.Parse("profile.yaml", []byte(minimal)); len(m.Database.ServerOptions.Args()) != 0 {
		t.Errorf("a profile without server_options gives flags %v", m.Database.ServerOptions.Args())
	}
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func(t *testing.T) string
		want []string // every line of the error, in order
	}{
		{"unknown field", func(t *testing.T) string { return edit(t, "  table: outbox\n", "  table: outbox\n  tabel: x\n") },
			[]string{"profile.yaml:7: outbox.tabel: unknown field"}},
		{"a server option off the allowlist", func(t *testing.T) string {
			return minimal + "database: {server_options: {init_file: /etc/passwd}}\n"
		}, []string{"profile.yaml:11: database.server_options.init_file: unknown field"}},
		{"a server option out of range", func(t *testing.T) string {
			return minimal + "database: {server_options: {innodb_autoinc_lock_mode: 3}}\n"
		}, []string{"profile.yaml:11: database.server_options.innodb_autoinc_lock_mode: value must be one of \"0\", \"1\", \"2\""}},
		{"unknown top-level field", func(t *testing.T) string { return minimal + "promise: {order: none}\n" },
			[]string{"profile.yaml:11: promise: unknown field"}},
		{"wrong type", func(t *testing.T) string { return edit(t, "name: shop", "name: [shop]") },
			[]string{"profile.yaml:1: name: wrong type: want string, got array"}},
		{"wrong type integer", func(t *testing.T) string {
			return minimal + "effect: {table: n, event_id: e, per_event: two}\n"
		}, []string{"profile.yaml:11: effect.per_event: wrong type: want integer, got string"}},
		{"missing required", func(t *testing.T) string { return edit(t, "  table: outbox\n", "") },
			[]string{"profile.yaml:5: outbox.table: missing (required)"}},
		{"missing required by kind", func(t *testing.T) string {
			return edit(t, "progress: {kind: none}", "progress: {kind: status, column: state}")
		}, []string{"profile.yaml:10: outbox.progress.done: missing (required)"}},
		{"missing top level", func(t *testing.T) string { return strings.Replace(minimal, "name: shop\n", "", 1) },
			[]string{"profile.yaml:1: name: missing (required)"}},
		{"bad enum", func(t *testing.T) string {
			return edit(t, "progress: {kind: none}", "progress: {kind: sometimes}")
		}, []string{"profile.yaml:10: outbox.progress.kind: value must be one of \"status\", \"cursor\", \"completed\", \"delete\", \"none\""}},
		{"bad JSON path", func(t *testing.T) string { return edit(t, "aggregate: aggregateid", `aggregate: "payload$.meta..id"`) },
			[]string{"profile.yaml:8: outbox.aggregate: want a column, or a column and a JSON path into it (payload$.a.b[0])"}},
		{"bad JSON path in topic", func(t *testing.T) string { return edit(t, "event_id: {header: id}", "event_id: {value: id}") },
			[]string{"profile.yaml:4: topic.event_id.value: want a JSON path ($.a.b[0])"}},
		{"array index path", func(t *testing.T) string {
			return minimal + "database: {migrations: [a.sql, 7]}\n"
		}, []string{"profile.yaml:11: database.migrations[1]: wrong type: want string, got number"}},
		{"duplicate key", func(t *testing.T) string { return minimal + "name: again\n" },
			[]string{"profile.yaml:11: name: duplicate key (first at line 1)"}},
		// The line is the one yaml.v3 reports: where the unclosed flow
		// sequence's mapping began.
		{"yaml syntax", func(t *testing.T) string { return edit(t, "  table: outbox\n", "  table: [outbox\n") },
			[]string{"profile.yaml:5: (profile): not valid YAML: did not find expected ',' or ']'"}},
		{"empty", func(*testing.T) string { return "" }, []string{"profile.yaml:1: (profile): the profile is empty"}},
		{"per-aggregate without aggregate", func(t *testing.T) string {
			return strings.Replace(edit(t, "  aggregate: aggregateid\n", ""), "  name: orders.events\n", "  name: orders.events\n  key: none\n", 1) +
				"promises: {order: per-aggregate}\n"
		}, []string{"profile.yaml:11: promises.order: per-aggregate order needs outbox.aggregate"}},
		{"role not defined", func(t *testing.T) string {
			return minimal + "roles:\n  relay: {start: ./relay, env: {DB: \"{{proxy.relay.db}}\", UP: \"{{role.service}}\"}}\n"
		}, []string{"profile.yaml:12: roles.relay.env.UP: the template names role \"service\", which roles does not define"}},
		{"load with neither http nor sql", func(t *testing.T) string {
			return minimal + "load:\n  correlate: payload$.note\n"
		}, []string{"profile.yaml:11: load: give exactly one of http (requests to your service) and sql (statements the audit's client runs)"}},
		{"sql load: a template in quotes, a second statement, a commit, an unknown name", func(t *testing.T) string {
			return minimal + "load:\n  correlate: payload$.note\n  sql:\n    statements:\n" +
				"      - INSERT INTO t (a) VALUES ('{{token}}')\n" +
				"      - \"INSERT INTO t (a) VALUES ({{token}}); DELETE FROM t\"\n" +
				"      - COMMIT\n" +
				"      - INSERT INTO t (a) VALUES ({{nope}})\n"
		}, []string{
			"profile.yaml:15: load.sql.statements[0]: {{token}} inside a quoted string: a template is bound as a parameter, write it bare (CONCAT('x-', {{token}}) to build a string)",
			"profile.yaml:16: load.sql.statements[1]: one statement per item: text after the ; (give each statement an item of its own)",
			"profile.yaml:17: load.sql.statements[2]: a load statement is one of INSERT, UPDATE, DELETE, REPLACE, SELECT, WITH, DO, SET @: the audit runs them in a transaction of its own and ends it itself",
			"profile.yaml:18: load.sql.statements[3]: unknown template name {{nope}} (a load statement knows {{n}} {{key}} {{token}} {{run}} {{topic}} {{db}})",
		}},
		{"sql load without the token", func(t *testing.T) string {
			return minimal + "load:\n  correlate: payload$.note\n  sql:\n    statements: [\"INSERT INTO t (a) VALUES ({{key}})\"]\n"
		}, []string{"profile.yaml:14: load.sql.statements: no statement writes the correlation token: bind {{token}} where load.correlate reads it"}},
		{"every problem", func(t *testing.T) string {
			return edit(t, "name: shop", "name: 3") + "bogus: 1\n"
		}, []string{
			"profile.yaml:1: name: wrong type: want string, got number",
			"profile.yaml:11: bogus: unknown field",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse("profile.yaml", []byte(tc.src(t)))
			var pe *profile.Error
			if !errors.As(err, &pe) || !errors.Is(err, profile.ErrInvalid) {
				t.Fatalf("Parse = %v; want a *profile.Error wrapping ErrInvalid", err)
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Parse error =\n%s\nwant\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestSecretRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tc := range []struct{ name, src string }{
		{"schema problem", minimal + "database: {dsn: \"audit:" + secret + "@tcp(db:3306)/shop\", schema: \"bad name!\"}\n"},
		{"value in message", minimal + "database:\n  dsn: 7\n  migrations: \"audit:" + secret + "@tcp(db:3306)/shop\"\n"},
		{"yaml syntax", "name: x\ndatabase:\n  dsn: audit:" + secret + "@tcp(db:3306)/shop\n  migrations: [\"audit:" + secret + "@x\n"},
		{"unknown field named by secret", minimal + "database: {dsn: \"u:" + secret + "@tcp(h)/d\", \"u:" + secret + "@tcp(h)/d\": 1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse("profile.yaml", []byte(tc.src))
			if err == nil {
				t.Fatal("Parse accepted a bad profile")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the password shows in %q", err)
			}
		})
	}
	p, err := profile.Parse("p.yaml", []byte(minimal+"database: {dsn: \"audit:"+secret+"@tcp(db:3306)/shop\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Database.Redacted(); got != "audit:xxxxx@tcp(db:3306)/shop" {
		t.Errorf("Redacted() = %q", got)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := profile.Load(filepath.Join(dir, "none.yaml")); err == nil || errors.Is(err, profile.ErrInvalid) {
		t.Errorf("Load(missing) = %v; want a read error, not ErrInvalid", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", profile.MaxBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Load(big); !errors.Is(err, profile.ErrInvalid) || !strings.Contains(err.Error(), "big.yaml:1:") {
		t.Errorf("Load(big) = %v", err)
	}
}

func TestField(t *testing.T) {
	f, err := profile.ParseField("payload$.items[1].sku")
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{"payload": `{"items":[{"sku":"a"},{"sku":"b","n":2}]}`}
	if v, ok := f.Lookup(row); !ok || v != "b" {
		t.Errorf("Lookup = %v, %v; want b", v, ok)
	}
	for _, bad := range []string{"payload$", "payload$.", "payload$.a[", "payload$.a[x]", "1col", "payload$a"} {
		if _, err := profile.ParseField(bad); err == nil {
			t.Errorf("ParseField(%q) accepted", bad)
		}
	}
	miss, _ := profile.ParseField("payload$.items[5]")
	if _, ok := miss.Lookup(row); ok {
		t.Error("Lookup past the array's end found a value")
	}
	if s, _ := profile.Text(int64(42)); s != "42" {
		t.Errorf("Text(42) = %q", s)
	}
}

func TestProgressIsDone(t *testing.T) {
	pr := profile.Progress{Kind: profile.ProgressStatus, Column: "state", Done: []profile.Scalar{"SENT", "2"}}
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{"SENT", true}, {[]byte("SENT"), true}, {int64(2), true}, {"2", true},
		{"sent", false}, {"PENDING", false}, {int64(3), false}, {nil, false}, {"", false},
	} {
		if got := pr.IsDone(tc.v); got != tc.want {
			t.Errorf("IsDone(%#v) = %v; want %v", tc.v, got, tc.want)
		}
	}
	if (profile.Progress{Kind: profile.ProgressStatus}).IsDone("SENT") {
		t.Error("IsDone with no done values: true; want false")
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string // "" for nil
	}{
		{int64(42), "42/1"}, {"350", "350/1"}, {[]byte("-7"), "-7/1"}, {json.Number("2.5"), "5/2"},
		{uint64(18446744073709551615), "18446744073709551615/1"},
		{nil, ""}, {"abc", ""}, {"", ""},
	} {
		got := profile.Number(tc.v)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("Number(%#v) = %v; want nil", tc.v, got)
		case tc.want != "" && (got == nil || got.String() != tc.want):
			t.Errorf("Number(%#v) = %v; want %s", tc.v, got, tc.want)
		}
	}
}
