package audit

import (
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

// TestSQLLoadOutcomes: a SQL load runs its statements in one transaction
// per request, the templates bound as parameters: a request whose
// statements all run and commit is ok and its row is there with its token;
// one whose second statement fails is failed, and its first statement's
// row was rolled back with it.
func TestSQLLoadOutcomes(t *testing.T) {
	sc := infratest.Scratch(t)
	dsn := infratest.Server(t).DSNFor(sc.Name)
	ins := "INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES ({{key}}, {{n}}, 1, JSON_OBJECT('note', {{token}}))"
	for _, tc := range []struct {
		stmts []string
		want  evidence.ClientOutcome
		rows  int
	}{
		{[]string{ins}, evidence.ClientOK, 1},
		{[]string{ins, "INSERT INTO outbox (event_id, aggregate_id, aggregate_version, payload) VALUES ({{key}}, 0, 1, '{}')"}, evidence.ClientFailed, 0},
	} {
		if _, err := sc.DB.Exec("DELETE FROM outbox"); err != nil {
			t.Fatal(err)
		}
		spec := &profile.LoadSpec{SQL: &profile.SQLLoad{Statements: tc.stmts}, Token: "tok-{{n}}", Requests: 1, Concurrency: 1}
		lp, err := newLoadPlan(spec, vars{"run": "r1", "dsn": dsn}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c := newClient()
		c.run(t.Context(), lp, 10*time.Millisecond)
		if len(c.history) != 1 || c.history[0].Outcome != tc.want || c.history[0].Token != "tok-1" || c.history[0].Key != "r1-1" {
			t.Errorf("%d statement(s): history %+v; want one request, %s, token tok-1, key r1-1", len(tc.stmts), c.history, tc.want)
		}
		var n int
		if err := sc.DB.QueryRow("SELECT COUNT(*) FROM outbox WHERE event_id = 'r1-1' AND JSON_VALUE(payload, '$.note') = 'tok-1'").Scan(&n); err != nil || n != tc.rows {
			t.Errorf("%d statement(s): %d row(s) of the request (%v); want %d", len(tc.stmts), n, err, tc.rows)
		}
	}
	if _, err := newLoadPlan(&profile.LoadSpec{SQL: &profile.SQLLoad{Statements: []string{"INSERT INTO t VALUES ('{{n}}')"}}, Token: "{{n}}"},
		vars{"run": "r1", "dsn": dsn}, time.Second); err == nil {
		t.Errorf("a statement with a template in quotes was accepted")
	}
}
