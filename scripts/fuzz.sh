#!/usr/bin/env bash
# fuzz.sh runs each fuzz target of the readers of untrusted input (the
# evidence file, an event line, the binlog witness, the broker witness, the
# embedded broker's frame guard) for a
# bounded time: FUZZTIME per target (default 20s). Each starts from its
# committed seed corpus (testdata/fuzz/<target>); a crash fails the script
# and go test writes the crashing input under testdata/fuzz/<target>/, which
# becomes a regression seed once committed.
#   scripts/fuzz.sh                 # every target, 20 s each
#   FUZZTIME=5m scripts/fuzz.sh binlog   # the targets whose package or name contains "binlog"
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime="${FUZZTIME:-20s}"
filter="${1:-}"
targets=(
	"./checks FuzzParseEvidence"
	"./checks FuzzReadEvents"
	"./checks/eventline FuzzFastEvent"
	"./witness/binlog FuzzScan"
	"./witness/broker FuzzReadDataFS"
	"./witness/broker FuzzDecodeRecords"
	"./witness/broker FuzzReadDumpFrom"
	"./runner/infra FuzzKafkaGuard"
)
ran=0
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	if [ -n "$filter" ] && [[ "$pkg $name" != *"$filter"* ]]; then continue; fi
	echo "+ go test -run '^\$' -fuzz '^${name}\$' -fuzztime $fuzztime $pkg" >&2
	# A crash is a failure with "Failing input written to" (the input is
	# then in testdata/fuzz/). The fuzzing engine also fails, now and then,
	# with a bare "context deadline exceeded" when -fuzztime ends while it
	# minimizes a new input, with no input written: that target runs once
	# more, and a second failure of any kind fails the script.
	for try in 1 2; do
		if out="$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg" 2>&1)"; then
			printf '%s\n' "$out" | tail -n 2
			break
		fi
		printf '%s\n' "$out" | tail -n 30
		if [ "$try" = 2 ] || grep -q "Failing input written to" <<<"$out" || ! grep -q "context deadline exceeded" <<<"$out"; then
			echo "fuzz: $name in $pkg failed" >&2
			exit 1
		fi
		echo "fuzz: $name stopped by the engine's deadline while minimizing, no input written; once more" >&2
	done
	ran=$((ran + 1))
done
echo "fuzz: $ran targets, $fuzztime each, no crash"
