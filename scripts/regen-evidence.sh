#!/usr/bin/env bash
# regen-evidence.sh regenerates the committed reference example from a real
# run: evidence/example/u80.json with its event logs (evidence/example/u80/),
# checked by the verifier, and the report rendered from it (reports/u80.md).
# Commit all three together; cmd/orderflow-audit's TestCommittedEvidence* and
# TestCommittedReportUpToDate fail when they drift. (The default output of
# `run`, evidence/u80.json, is a user's own run and is git-ignored.)
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/ensure-mariadb.sh
bin="$(mktemp -d)/orderflow-audit"
trap 'rm -rf "$(dirname "$bin")"' EXIT
# Stamp the binary with the commit it is built from (this machine's GOFLAGS
# turns VCS stamping off), so that the evidence names the code that ran. go
# build does not stamp a git worktree (its .git is a file): the revision is
# then passed by hand.
rev="$(git rev-parse HEAD)"
modified=false
if [ -n "$(git status --porcelain)" ]; then modified=true; fi
go build -buildvcs=true -ldflags "-X main.revision=$rev -X main.revisionModified=$modified" -o "$bin" ./cmd/orderflow-audit

"$bin" run --out evidence/example/u80.json
"$bin" verify evidence/example/u80.json
"$bin" report evidence/example/u80.json -o reports/u80.md
echo "regenerated evidence/example/u80.json, evidence/example/u80/ and reports/u80.md" >&2
