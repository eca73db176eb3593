#!/usr/bin/env bash
# test.sh runs the project's checks: go vet and every test, uncached.
# Integration tests need MariaDB on 127.0.0.1:3306 and the MariaDB server
# programs for private servers (scripts/ensure-mariadb.sh sees to both), and
# start their own embedded Kafka broker. Outside CI they skip when MariaDB is
# unreachable or not installed; with CI set they fail instead.
# Extra arguments go to `go test` (e.g. scripts/test.sh -short, -run X).
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "+ go vet ./..." >&2
go vet ./...
echo "+ go test -count=1 -timeout 15m${*:+ $*} ./..." >&2
go test -count=1 -timeout 15m "$@" ./...
