package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	} {
		var out, errb bytes.Buffer
		if got := run(t.Context(), tc.args, &out, &errb); got != tc.want {
			t.Errorf("run(%q) = %d; want %d (stderr %q)", tc.args, got, tc.want, errb.String())
		}
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
