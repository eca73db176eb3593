package fault

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The calls of the database (database/sql: *sql.DB, *sql.Conn, *sql.Tx)
// and of the broker (*kgo.Client) that the call sweep must reach: every
// one in the relay and the consumer goes through the hook (Call, through
// the actors' db and broker helpers), so that a new call is swept
// without a new scenario. Rollback and closing are cleanup after a
// failure, not calls the sweep fails.
var (
	dbCalls = []string{"Begin", "BeginTx", "Commit", "Conn", "Exec", "ExecContext", "Prepare", "PrepareContext",
		"Query", "QueryContext", "QueryRow", "QueryRowContext"}
	brokerCalls = []string{"CommitMarkedOffsets", "CommitOffsets", "CommitOffsetsSync", "CommitRecords",
		"CommitUncommittedOffsets", "LeaveGroup", "LeaveGroupContext", "Ping", "PollFetches", "PollRecords",
		"Produce", "ProduceSync", "TryProduce"}
	// hookCalls are the functions whose arguments are inside the hook.
	hookCalls = []string{"Call", "db", "broker"}
)

// unhooked are the calls outside the hook on purpose, by function: the
// actors' start and stop, and a scenario's tool that lives in the relay's
// package. docs/negative-controls.md says what the sweep does not reach.
var unhooked = map[string]string{
	"relay.ExpireLease":          "the scenarios' stand-in for the clock (ages a lease by SQL); not the relay's own call",
	"consumer.New":               "the consumer's start: a failed ping is a consumer that did not start",
	"consumer.(*Consumer).Close": "the consumer's stop: a failed leave is a member the group times out",
}

// TestEveryCallHooked parses the relay's and the consumer's source and
// fails on a database or broker call that does not go through the call
// hook.
func TestEveryCallHooked(t *testing.T) {
	for _, dir := range []string{"../internal/relay", "../internal/consumer"} {
		found, err := unhookedCalls(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s: a database or broker call outside the call hook (wrap it in the actor's db or broker helper, "+
				"fault.Call, with a site name): the call sweep cannot fail it", f)
		}
	}
}

// TestUnhookedCallsFound: the parser finds a call outside the hook and
// takes one inside it, a method value passed to it included.
func TestUnhookedCallsFound(t *testing.T) {
	dir := t.TempDir()
	src := `package relay

func (r *Relay) ok(ctx context.Context) error {
	var tx *sql.Tx
	if err := r.db("relay.x.begin", func() (err error) { tx, err = r.cfg.DB.BeginTx(ctx, nil); return err }); err != nil {
		return err
	}
	return r.db("relay.x.commit", tx.Commit)
}

func (r *Relay) bad(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, "UPDATE outbox SET state = 'SENT'")
	r.cfg.Client.Produce(ctx, nil, nil)
	_ = tx.Rollback()
	return err
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := unhookedCalls(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x.go:12 relay.(*Relay).bad: ExecContext", "x.go:13 relay.(*Relay).bad: Produce"}
	if !slices.Equal(found, want) {
		t.Fatalf("found %q; want %q", found, want)
	}
}

// unhookedCalls returns the database and broker calls of the package in
// dir (its non-test files) that are not inside an argument of a hook
// call, as "file:line function: method".
func unhookedCalls(dir string) ([]string, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn := funcName(f.Name.Name, fd)
			if _, ok := unhooked[fn]; ok {
				continue
			}
			for _, c := range callsOutsideHook(fd.Body) {
				p := fset.Position(c.Pos())
				out = append(out, fmt.Sprintf("%s:%d %s: %s", filepath.Base(p.Filename), p.Line, fn, c.Sel.Name))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// callsOutsideHook returns the selectors of database and broker methods
// in body (called, or passed as a value) that no hook call's argument
// holds.
func callsOutsideHook(body ast.Node) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && slices.Contains(hookCalls, sel.Sel.Name) {
				ast.Inspect(sel.X, walk) // the receiver is outside; the arguments are inside
				return false
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && (id.Name == "sql" || id.Name == "kgo") {
				return true // a type or function of the package (sql.Conn), not a call on a connection
			}
			if slices.Contains(dbCalls, x.Sel.Name) || slices.Contains(brokerCalls, x.Sel.Name) {
				out = append(out, x)
			}
		}
		return true
	}
	ast.Inspect(body, walk)
	return out
}

// funcName names a function as unhooked does: package.Func or
// package.(*Type).Method.
func funcName(pkg string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return pkg + "." + fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		if id, ok := s.X.(*ast.Ident); ok {
			return pkg + ".(*" + id.Name + ")." + fd.Name.Name
		}
	}
	if id, ok := t.(*ast.Ident); ok {
		return pkg + "." + id.Name + "." + fd.Name.Name
	}
	return pkg + "." + fd.Name.Name
}
