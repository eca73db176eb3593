#!/usr/bin/env bash
# sweep-mutants.sh runs the call sweep against the hand-written mutants of
# docs/negative-controls.md (The call sweep): the tree is copied to a
# scratch directory; for the unchanged copy (the baseline, RUNS times) and
# each mutant of scripts/sweep-mutants/mutants.py it applies the edit,
# builds, runs `orderflow-audit run --scenarios callSweep` and `verify`,
# and prints one line: the sweep's line and verify's verdict. A mutant is
# caught when verify names a failed rule (or the run fails); the baseline
# must name none. Needs MariaDB's programs (a private server per run).
#
# usage: scripts/sweep-mutants.sh [-n RUNS] [NAME...]
set -euo pipefail
export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=3
while getopts "n:" opt; do
	case "$opt" in
	n) runs="$OPTARG" ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
names=("$@")
[ ${#names[@]} -gt 0 ] || read -r -a names <<<"$(python3 "$root/scripts/sweep-mutants/mutants.py" list)"
out="$(mktemp -d "${TMPDIR:-/tmp}/ofa-sweep-mutants.XXXXXX")"
trap 'rm -rf "$out"' EXIT
tree="$out/tree"
mkdir -p "$tree"
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$tree")
one() { # one NAME: build the tree as it is, run the sweep, verify
	(cd "$tree" && go build -o "$out/ofa" ./cmd/orderflow-audit)
	local d="$out/run-$1"
	rm -rf "$d" && mkdir -p "$d"
	local code=0
	(cd "$d" && timeout 180 "$out/ofa" run --scenarios callSweep >run.out 2>&1) || code=$?
	(cd "$d" && timeout 60 "$out/ofa" verify evidence/u80.json >verify.out 2>&1) || true
	local failed
	failed=$(awk '/^failed \(/{f=1;next} /^inconclusive|^invariants|^unknown outcomes/{f=0} f && /^  \[/{gsub(/[][]/,"",$1); print $1}' "$d/verify.out" | sort -u | tr '\n' ' ')
	echo "$1: run exit $code; $(grep -E '^SWEEP' "$d/run.out" | head -1); $(head -1 "$d/verify.out" | grep -o 'verify: [A-Z]*' || echo "verify: none") ${failed:+(failed: $failed)}"
}
for i in $(seq "$runs"); do one baseline; done
for m in "${names[@]}"; do
	cp -a "$tree" "$out/saved"
	python3 "$root/scripts/sweep-mutants/mutants.py" "$tree" "$m" >/dev/null
	one "$m"
	rm -rf "$tree" && mv "$out/saved" "$tree"
done
