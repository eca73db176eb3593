package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunExitCodes checks the exit codes of the dispatcher and of flag
// problems, none of which needs a database or a broker.
func TestRunExitCodes(t *testing.T) {
	t.Setenv("MYSQL_DSN", "")
	t.Setenv("KAFKA_BROKERS", "")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"help"}, 0},
		{[]string{"nope"}, 2},
		{[]string{"service", "-h"}, 0},
		{[]string{"service", "--bogus"}, 2},
		{[]string{"service", "stray"}, 2},
		{[]string{"service"}, 2},                              // no DSN
		{[]string{"forwarder"}, 2},                            // no brokers
		{[]string{"consumer", "--brokers", "127.0.0.1:1"}, 2}, // no group
		{[]string{"count", "--brokers", "127.0.0.1:1", "--mysql-dsn", "root@tcp(x:1)/"}, 2}, // no database
		{[]string{"load", "--requests", "0"}, 2},
		{[]string{"busy", "--threads", "0"}, 2},
		{[]string{"busy", "--duty", "1.5"}, 2},
		{[]string{"busy", "--duty", "0"}, 2},
	} {
		var out, errb bytes.Buffer
		if got := run(t.Context(), tc.args, &out, &errb); got != tc.want {
			t.Errorf("run(%q) = %d; want %d (stderr %q)", tc.args, got, tc.want, errb.String())
		}
	}
}

// TestBusyStops: the noisy neighbour spins until its context ends, then
// exits 0.
func TestBusyStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	start := time.Now()
	if got := run(ctx, []string{"busy", "--threads", "2", "--duty", "0.5"}, &out, &errb); got != 0 {
		t.Fatalf("busy: exit %d; want 0 (stderr %q)", got, errb.String())
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("busy ran %v; want until its context ended (200 ms)", d)
	}
	if !strings.Contains(out.String(), "2 goroutine(s)") {
		t.Errorf("busy said %q", out.String())
	}
}

// TestCreateOrderRefusesBadRequests checks that a request without an
// idempotency key or with a bad body is refused before the database is
// touched (the service has none here).
func TestCreateOrderRefusesBadRequests(t *testing.T) {
	s := &orderService{topic: "orders", log: newLogger(&bytes.Buffer{}, "test")}
	for _, tc := range []struct {
		name, key, body string
	}{
		{"no key", "", `{"sku":"a","qty":1}`},
		{"key too long", strings.Repeat("k", 129), `{"sku":"a","qty":1}`},
		{"not JSON", "k1", `{`},
		{"no sku", "k1", `{"qty":1}`},
		{"qty 0", "k1", `{"sku":"a","qty":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(tc.body))
			if tc.key != "" {
				r.Header.Set("Idempotency-Key", tc.key)
			}
			w := httptest.NewRecorder()
			s.createOrder(w, r)
			if w.Code != http.StatusBadRequest {
				t.Errorf("status %d; want 400 (body %q)", w.Code, w.Body.String())
			}
		})
	}
}

// TestProfilesNameGoModVersions: every profile's about.components names
// the versions go.mod requires, so that a report never names a version
// that did not run.
func TestProfilesNameGoModVersions(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.Contains(f[0], ".") && strings.HasPrefix(f[1], "v") {
			required[f[0]] = f[1]
		}
	}
	profiles, _ := filepath.Glob("profile*.yaml")
	if len(profiles) == 0 {
		t.Fatal("no profile")
	}
	for _, p := range profiles {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")))
			if len(f) < 2 || !strings.HasPrefix(f[0], "github.com/") || !strings.HasPrefix(f[1], "v") {
				continue
			}
			named++
			if want, ok := required[f[0]]; !ok || want != f[1] {
				t.Errorf("%s names %s %s; go.mod requires %q", p, f[0], f[1], want)
			}
		}
		if named < 4 {
			t.Errorf("%s names %d components; want watermill, watermill-sql, watermill-kafka and sarama at least", p, named)
		}
	}
}
