#!/usr/bin/env bash
# regen.sh regenerates the verifier's fixtures from real runs (each run on
# a private mariadbd with its binlog on, and the embedded broker persisting
# into the bundle), so that they carry real witnesses:
#
#   witnessed/          a clean run of every scenario
#   u80/                a clean run of the five U80 scenarios
#   planted/<bug>/      a run with <bug> planted, of the scenario(s) that expose it
#
# Usage: checks/testdata/regen.sh [witnessed|u80|planted]...  (default: all)
# Then run `go test ./checks/` and commit the fixtures with the code that
# needs them.
set -euo pipefail
export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
td=checks/testdata
bin="$(mktemp -d)/orderflow-audit"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/orderflow-audit

# run DIR ARGS...: a fresh bundle in $td/DIR from one run. A planted run
# fails (exit 1) by design; anything else but 0 stops the script.
run() {
	local dir="$td/$1"
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	local code=0
	"$bin" run "$@" --out "$dir/u80.json" >/dev/null || code=$?
	if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then
		echo "regen: run $* exited $code" >&2
		exit "$code"
	fi
	echo "regenerated $dir" >&2
}

what=("$@")
[ ${#what[@]} -gt 0 ] || what=(witnessed u80 planted)
for w in "${what[@]}"; do
	case "$w" in
	witnessed) run witnessed ;;
	u80) run u80 --scenarios txBoundaryRollback,normalChain,sendBeforeMarkCrash,offsetReplay,businessInvariants ;;
	planted)
		run planted/mark-before-publish --plant mark-before-publish --scenarios businessInvariants
		run planted/mark-without-token --plant mark-without-token --scenarios sendBeforeMarkCrash
		run planted/offset-before-effect --plant offset-before-effect --scenarios offsetReplay
		run planted/no-inbox-dedupe --plant no-inbox-dedupe --scenarios normalChain
		run planted/outbox-outside-tx --plant outbox-outside-tx --scenarios orderCrashWindow
		run planted/claim-without-lock --plant claim-without-lock --scenarios concurrentRelays
		run planted/created-on-rollback --plant created-on-rollback --scenarios txBoundaryRollback
		run planted/idem-key-across-users --plant idem-key-across-users --scenarios twoUsersOneKey
		run planted/amount-ignores-quantity --plant amount-ignores-quantity --scenarios orderAmounts
		run planted/token-alg-none --plant token-alg-none --scenarios tokenClaims
		run planted/proof-from-config --plant proof-from-config --scenarios orderCrashWindow
		run planted/batch-offset-before-effect --plant batch-offset-before-effect --scenarios replayCrash-batch
		run planted/publish-ahead-of-version --plant publish-ahead-of-version --scenarios versionsAfterRefusal
		run planted/inbox-by-event-id --plant inbox-by-event-id --scenarios twoConsumers
		run planted/close-without-leave --plant close-without-leave --scenarios rebalanceSettling
		;;
	*)
		echo "regen: unknown fixture $w (witnessed, u80, planted)" >&2
		exit 2
		;;
	esac
done
