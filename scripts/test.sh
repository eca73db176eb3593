#!/usr/bin/env bash
# test.sh runs the project's checks: go vet and every test, uncached.
# Integration tests need MariaDB on 127.0.0.1:3306 and the MariaDB server
# programs for private servers (scripts/ensure-mariadb.sh sees to both), and
# start their own embedded Kafka broker. Outside CI they skip when MariaDB is
# unreachable or not installed; with CI set they fail instead.
# Extra arguments go to `go test` (e.g. scripts/test.sh -short, -run X).
# The tests run under gotestsum (gotest.tools/gotestsum, pinned below,
# fetched by `go run` from the module proxy), which prints a line per
# package, the output of every failed test, every skipped test by name
# with its reason, and one line of totals at the end:
#   DONE 2101 tests, 12 skipped, 1 failure in 612.3s
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "+ go vet ./..." >&2
go vet ./...
echo "+ go test -count=1 -timeout 15m${*:+ $*} ./... (through gotestsum)" >&2
exec go run gotest.tools/gotestsum@v1.13.0 --format pkgname -- -count=1 -timeout 15m "$@" ./...
