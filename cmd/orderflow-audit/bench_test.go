package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad bench options exit 2 before anything starts; an unreachable
// server exits 3; neither prints a DSN password.
func TestBenchErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "--events", "0"}, exitUsage, "--events 0: want at least 1"},
		{[]string{"bench", "--batch", "-5"}, exitUsage, "--batch -5"},
		{[]string{"bench", "--relays", "100"}, exitUsage, "--relays 100"},
		{[]string{"bench", "--history", "-1"}, exitUsage, "--history -1"},
		{[]string{"bench", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"bench", "--kafka-brokers", "a,,b"}, exitUsage, "--kafka-brokers"},
		{[]string{"bench", "--mysql-dsn", "root:sekret@tcp(127.0.0.1:1)/", "--events", "10"}, exitUnavailable, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.want)
			}
			if strings.Contains(stderr.String()+stdout.String(), "sekret") {
				t.Fatalf("the password leaked: %s", stderr.String())
			}
		})
	}
}
