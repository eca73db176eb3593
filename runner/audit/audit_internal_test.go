package audit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/evidence/profile"
	"github.com/orderflow-audit/orderflow-audit/runner/nemesis"
)

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"a b\tc", []string{"a", "b", "c"}, ""},
		{`java -jar 'my app.jar' --name "x y" a\ b`, []string{"java", "-jar", "my app.jar", "--name", "x y", "a b"}, ""},
		{`sh -c 'echo $HOME | cat'`, []string{"sh", "-c", "echo $HOME | cat"}, ""},
		{`say "a \"q\" b"`, []string{"say", `a "q" b`}, ""},
		{`x ''`, []string{"x", ""}, ""},
		{"a | b", nil, "without a shell"},
		{"a > out", nil, "without a shell"},
		{"echo $HOME", nil, "without a shell"},
		{"'open", nil, "unterminated single quote"},
		{`"open`, nil, "unterminated double quote"},
		{"   ", nil, "empty command"},
	} {
		got, err := splitWords(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("splitWords(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("splitWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	v := vars{"db": "ofa_1", "role.service": "127.0.0.1:8080"}
	got, err := v.expand("x", "http://{{ role.service }}/o?db={{db}}")
	if err != nil || got != "http://127.0.0.1:8080/o?db=ofa_1" {
		t.Errorf("expand = %q, %v", got, err)
	}
	if _, err := v.expand("roles.a.start", "{{db}} {{dbb}} {{role.relay}}"); err == nil ||
		!strings.Contains(err.Error(), "roles.a.start: unknown template name {{dbb}}, {{role.relay}}") {
		t.Errorf("expand of unknown names: %v", err)
	}
	w := v.with("db", "other", "n", "3")
	if v["db"] != "ofa_1" || w["db"] != "other" || w["n"] != "3" {
		t.Errorf("with changed its receiver or lost a pair: %v %v", v, w)
	}
}

// TestSchedule: the same seed gives the same schedule, another seed
// another one; a shorter duration gives a prefix; faults are drawn only
// from the kinds asked for, aimed at the replicas (a link for latency and
// net-cut, the broker for its faults), within the duration.
func TestSchedule(t *testing.T) {
	targets := []string{"consumer-1", "relay-1", "relay-2", "service-1"}
	a := schedule(7, 20*time.Second, Kinds, targets)
	if len(a) < 10 {
		t.Fatalf("%d faults in 20 s; want a dozen or more", len(a))
	}
	if b := schedule(7, 20*time.Second, Kinds, targets); !reflect.DeepEqual(a, b) {
		t.Errorf("seed 7 gave two schedules")
	}
	if c := schedule(8, 20*time.Second, Kinds, targets); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 gave the same schedule")
	}
	short := schedule(7, 5*time.Second, Kinds, targets)
	if len(short) == 0 || !reflect.DeepEqual(short, a[:len(short)]) {
		t.Errorf("the 5 s schedule is not a prefix of the 20 s one")
	}
	for _, f := range a {
		name, link, _ := strings.Cut(f.Target, ">")
		switch {
		case f.At >= 20*time.Second:
			t.Errorf("%+v: after the duration", f)
		case f.Kind == nemesis.Latency || f.Kind == nemesis.NetCut || f.Kind == nemesis.CommitLost:
			if link != "database" || !slices.Contains(targets, name) || f.For <= 0 {
				t.Errorf("%+v: want a replica's database link, for a while", f)
			}
		case brokerWindows[f.Kind] != 0 || f.Kind == nemesis.BrokerRestart:
			if f.Target != nemesis.TargetBroker {
				t.Errorf("%+v: want the broker", f)
			}
		case f.Kind == nemesis.DBCrash:
			if f.Target != nemesis.TargetDatabase {
				t.Errorf("%+v: want the database", f)
			}
		case !slices.Contains(targets, f.Target):
			t.Errorf("%+v: not a replica", f)
		case f.Kind == nemesis.Pause && f.For < PauseFor:
			t.Errorf("%+v: a pause shorter than %v", f, PauseFor)
		}
	}
	for _, f := range schedule(7, 20*time.Second, []nemesis.Kind{nemesis.Kill}, targets) {
		if f.Kind != nemesis.Kill {
			t.Errorf("%+v: drawn from kill only", f)
		}
	}
	if s := schedule(7, 20*time.Second, nil, targets); s != nil {
		t.Errorf("no kinds gave %d faults", len(s))
	}
}

func TestParseKinds(t *testing.T) {
	if ks, err := ParseKinds("none"); err != nil || len(ks) != 0 {
		t.Errorf("none = %v, %v", ks, err)
	}
	if ks, err := ParseKinds("all"); err != nil || !reflect.DeepEqual(ks, Kinds) {
		t.Errorf("all = %v, %v", ks, err)
	}
	if ks, err := ParseKinds("kill,net-cut"); err != nil || !reflect.DeepEqual(ks, []nemesis.Kind{nemesis.Kill, nemesis.NetCut}) {
		t.Errorf("kill,net-cut = %v, %v", ks, err)
	}
	for _, bad := range []string{"gremlin", "kill,kill", "conn-kill,conn-kill"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		}
	}
}

// TestLoadOutcomes: the client renders each request from the profile's
// templates (its key and token from the run and its number) and records
// a 2xx as ok, a 4xx and a refused connection as failed, a 5xx as unknown.
func TestLoadOutcomes(t *testing.T) {
	var seen sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Store(r.Header.Get("Idempotency-Key"), string(b))
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	defer srv.Close()
	spec := &profile.LoadSpec{HTTP: &profile.HTTPRequest{Method: "POST", URL: "http://{{role.svc}}/{{code}}",
		Headers: map[string]string{"Idempotency-Key": `"{{key}}"`}, Body: `{"q":{{n}},"t":"{{token}}"}`},
		Token: "{{run}}/{{n}}", Requests: 1, Concurrency: 1}
	for _, tc := range []struct {
		code string
		addr string
		want evidence.ClientOutcome
	}{
		{"201", "", evidence.ClientOK},
		{"409", "", evidence.ClientFailed},
		{"500", "", evidence.ClientUnknown},
		{"200", "127.0.0.1:1", evidence.ClientFailed}, // refused
	} {
		addr := strings.TrimPrefix(srv.URL, "http://")
		if tc.addr != "" {
			addr = tc.addr
		}
		lp, err := newLoadPlan(spec, vars{"run": "r1", "role.svc": addr, "code": tc.code}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c := newClient()
		c.run(t.Context(), lp, 10*time.Millisecond)
		if len(c.history) != 1 || c.history[0].Outcome != tc.want || c.history[0].Token != "r1/1" || c.history[0].Key != "r1-1" {
			t.Errorf("status %s at %s: history %+v; want one request, %s, token r1/1, key r1-1", tc.code, addr, c.history, tc.want)
		}
	}
	if body, ok := seen.Load(`"r1-1"`); !ok || body != `{"q":1,"t":"r1/1"}` {
		t.Errorf("the server got body %v (%v); want the rendered template", body, ok)
	}
	if _, err := newLoadPlan(&profile.LoadSpec{HTTP: &profile.HTTPRequest{Method: "GET", URL: "http://{{nowhere}}/"}, Token: "{{n}}"},
		vars{"run": "r1"}, time.Second); err == nil || !strings.Contains(err.Error(), "{{nowhere}}") {
		t.Errorf("a load naming an unknown template: %v", err)
	}
}

// TestLoadSentThenRefusedIsUnknown: net/http retries a request with an
// Idempotency-Key on a new connection when its reused connection breaks;
// when the retry is refused (the service just died), the first attempt
// may have committed, so the outcome is unknown, not failed (an audit of
// a correct pipeline once failed its answer rule on this).
func TestLoadSentThenRefusedIsUnknown(t *testing.T) {
	var n atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusCreated)
			return
		}
		// The second request arrives on the kept-alive connection: the
		// service dies with it, after reading it (it may have committed).
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		srv.Listener.Close()
		conn.Close()
	}))
	defer srv.Close()
	spec := &profile.LoadSpec{HTTP: &profile.HTTPRequest{Method: "POST", URL: "http://{{role.svc}}/orders",
		Headers: map[string]string{"Idempotency-Key": "{{key}}"}, Body: `{"q":{{n}}}`},
		Token: "{{n}}", Requests: 2, Concurrency: 1}
	lp, err := newLoadPlan(spec, vars{"run": "r1", "role.svc": strings.TrimPrefix(srv.URL, "http://")}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient()
	c.run(t.Context(), lp, 10*time.Millisecond)
	if len(c.history) != 2 || c.history[0].Outcome != evidence.ClientOK || c.history[1].Outcome != evidence.ClientUnknown {
		t.Fatalf("history %+v; want ok, then unknown (sent, then the retry refused)", c.history)
	}
}

// TestScheduleOnly: Schedule draws over the profile's replicas as Run
// does, and Only keeps the faults it numbers, numbered as in the full
// schedule (what explore's shrinking prints and --only-faults replays);
// NoFaults keeps none.
func TestScheduleOnly(t *testing.T) {
	p := &profile.Profile{Roles: map[string]profile.RoleDef{"relay": {Replicas: 2}, "service": {Replicas: 1}}}
	o := Options{Profile: p, Seed: 7, Duration: 20 * time.Second, Faults: Kinds}
	full := Schedule(o)
	if want := schedule(7, 20*time.Second, Kinds, []string{"relay-1", "relay-2", "service-1"}); !reflect.DeepEqual(full, want) {
		t.Fatalf("Schedule is not the schedule over the replicas relay-1, relay-2, service-1")
	}
	if len(full) < 4 {
		t.Fatalf("%d faults in 20 s", len(full))
	}
	o.Only = []int{2, full[len(full)-1].N}
	if got := Schedule(o); !reflect.DeepEqual(got, []nemesis.Fault{full[1], full[len(full)-1]}) {
		t.Errorf("Only %v kept %v", o.Only, got)
	}
	o.Only = nemesis.NoFaults
	if got := Schedule(o); len(got) != 0 {
		t.Errorf("NoFaults kept %v", got)
	}
}
