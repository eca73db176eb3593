#!/usr/bin/env bash
# mutants.sh runs the mutant campaign of docs/negative-controls.md: each
# patch in scripts/mutants/ is one realistic bug written into the source of
# the system under test (relay, consumer, order service, migrations; not
# --plant). The script copies the working tree to a scratch directory, and
# for the unchanged tree (the baseline) and each patch in turn applies the
# patch, builds the binary, runs `orderflow-audit run` and `verify` on its
# evidence RUNS times, and reverses the patch.
#
# A mutant is caught when verify does not say PASS in every one of its
# runs; a patch whose header says "Expect: PASS" is an equivalent mutant
# (no bug: it changes the code, not the behaviour) and must PASS. The
# baseline must PASS every run, or nothing else means anything.
#
# Automatic mode (-a) takes its mutants from tools instead of patches:
# gremlins' mutants (conditions negated or moved by one, arithmetic and
# logic inverted, loop control swapped) of the relay, the consumer and the
# order service (runner/internal/{relay,consumer,orders}; the load client
# is the auditor's, not the system under test's), and rule-based
# mutations of the migrations (a unique key made plain or narrowed, a
# column type narrowed, a collation changed, an index or a check
# removed), listed and applied by scripts/mutapply. Each runs `run --full`
# (the default suite and chaos, both consumer modes; the default suite
# alone first, and run --full only when that passes); a mutant is killed
# when a run does not verify PASS. Mutants listed in
# scripts/mutants/equivalent.tsv (id, reason) are triaged equivalent: they
# do not count, and must still PASS. Needs gremlins on PATH or in
# ~/go/bin (go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0).
#
# usage: scripts/mutants.sh [-n RUNS] [-o DIR] [-k] [PATTERN...]
#        scripts/mutants.sh -a [-s N] [-S SEED] [-n RUNS] [-o DIR] [-k] [PATTERN...]
#   -a        automatic mode; PATTERN then filters mutant ids or places
#   -s N      (-a) a seeded random sample of N mutants (default: every one)
#   -S SEED   (-a) the sample's seed (default 1)
#   -n RUNS   runs per mutant (default 3; with -a, the runs of a mutant
#             stop at its first kill)
#   -o DIR    where the copy, the binaries and the runs go (default: a new
#             temporary directory, removed at the end unless -k)
#   -k        keep DIR (the evidence of every run)
#   PATTERN   only the patches whose file name contains one of them
#             (the baseline always runs)
#
# Prints one line per run and, at the end, a Markdown table (also in
# DIR/table.md if kept). Exit 0 when the baseline passed every run, every
# mutant was caught in every run and every equivalent mutant passed; 1
# otherwise; 2 for bad usage or a patch that no longer applies or builds.
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

runs=3 out="" keep=false auto=false sample=0 seed=1
while getopts "n:o:khas:S:" opt; do
	case "$opt" in
	n) runs="$OPTARG" ;;
	a) auto=true ;;
	s) sample="$OPTARG" ;;
	S) seed="$OPTARG" ;;
	o) out="$OPTARG" ;;
	k) keep=true ;;
	h)
		sed -n '2,48p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
	echo "mutants.sh: -n wants a positive number, got '$runs'" >&2
	exit 2
fi
for tool in go jq git; do
	command -v "$tool" >/dev/null || {
		echo "mutants.sh: $tool is required" >&2
		exit 2
	}
done

if [ -z "$out" ]; then
	out="$(mktemp -d "${TMPDIR:-/tmp}/ofa-mutants.XXXXXX")"
else
	mkdir -p "$out"
	keep=true
fi
if ! $keep; then trap 'rm -rf "$out"' EXIT; fi

# The copy: every tracked file and every untracked one git does not
# ignore, as the working tree has them.
src="$out/src"
rm -rf "$src"
mkdir -p "$src" "$out/bin"
(cd "$root" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$src"

if $auto; then
	# shellcheck source=scripts/mutants-auto.sh
	source "$root/scripts/mutants-auto.sh"
	exit $?
fi

patches=()
for p in "$root"/scripts/mutants/*.patch; do
	name="$(basename "$p" .patch)"
	if [ $# -gt 0 ]; then
		match=false
		for pat in "$@"; do [[ "$name" == *"$pat"* ]] && match=true; done
		$match || continue
	fi
	patches+=("$p")
done

table="$out/table.tsv"
: >"$table"
status=0

# campaign NAME EXPECT: runs and verifies the tree as it is now RUNS times
# and appends one row to the table.
campaign() {
	local name="$1" expect="$2" bin="$out/bin/$1" i verdicts=() runrcs=() rules=() failed=()
	(cd "$src" && go build -buildvcs=false -o "$bin" ./cmd/orderflow-audit) || {
		echo "mutants.sh: $name does not build" >&2
		exit 2
	}
	for i in $(seq 1 "$runs"); do
		local dir="$out/runs/$name/$i" rc=0 vrc=0
		mkdir -p "$dir"
		"$bin" run --out "$dir/u80.json" >"$dir/run.out" 2>"$dir/run.err" || rc=$?
		local verdict="NO_EVIDENCE"
		if [ -f "$dir/u80.json" ]; then
			"$bin" verify --json "$dir/u80.json" >"$dir/verify.json" 2>"$dir/verify.err" || vrc=$?
			verdict="$(jq -r '.status // "ERROR"' "$dir/verify.json" 2>/dev/null || echo ERROR)"
			mapfile -t -O "${#rules[@]}" rules < <(jq -r '.reasons[]?.rule' "$dir/verify.json" 2>/dev/null)
		fi
		mapfile -t -O "${#failed[@]}" failed < <(sed -n 's/^[A-Z0-9]* \([A-Za-z0-9]*\)=\(FAIL\|NOT_RUN\|INCONCLUSIVE\).*/\1/p' "$dir/run.out")
		verdicts+=("$verdict")
		runrcs+=("$rc")
		printf '%s run %d: run exit %d, verify %s (exit %d)\n' "$name" "$i" "$rc" "$verdict" "$vrc" >&2
	done
	local caught=yes v
	for v in "${verdicts[@]}"; do [ "$v" = PASS ] && caught=no; done
	local all_pass=yes
	for v in "${verdicts[@]}"; do [ "$v" != PASS ] && all_pass=no; done
	local result
	if [ "$expect" = PASS ]; then
		result="$([ $all_pass = yes ] && echo "passes (as expected)" || echo "FLAKY or FALSE ALARM")"
		[ $all_pass = yes ] || status=1
	else
		local n_caught=0
		for v in "${verdicts[@]}"; do [ "$v" != PASS ] && n_caught=$((n_caught + 1)); done
		result="$n_caught/$runs"
		[ $caught = yes ] || status=1
	fi
	local rule_list scen_list
	rule_list="$(printf '%s\n' "${rules[@]}" | sed '/^$/d' | sort | uniq -c | sort -rn | awk '{print $2}' | head -6 | paste -sd, -)"
	scen_list="$(printf '%s\n' "${failed[@]}" | sed '/^$/d' | sort -u | paste -sd, -)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$result" "$(
		IFS=/
		echo "${runrcs[*]}"
	)" "$(
		IFS=/
		echo "${verdicts[*]}"
	)" "${scen_list:--}" "${rule_list:--}" >>"$table"
}

campaign baseline PASS
if ! grep -q $'^baseline\tpasses' "$table"; then
	echo "mutants.sh: the unchanged tree does not pass the audit every time; see $out/runs/baseline" >&2
	status=1
fi
for p in "${patches[@]}"; do
	name="$(basename "$p" .patch)"
	expect=FAIL
	if sed -n '1,5p' "$p" | grep -q '^Expect: PASS'; then expect=PASS; fi
	if ! (cd "$src" && git apply -p1 "$p"); then
		echo "mutants.sh: $name does not apply to this tree" >&2
		exit 2
	fi
	campaign "$name" "$expect"
	(cd "$src" && git apply -R -p1 "$p")
done

{
	echo "| mutant | caught | run exit codes | verify verdicts | scenarios not PASS | rules named by verify (most frequent first) |"
	echo "| --- | --- | --- | --- | --- | --- |"
	while IFS=$'\t' read -r name result rcs verdicts scen rules; do
		echo "| \`$name\` | $result | $rcs | $verdicts | $scen | $rules |"
	done <"$table"
} | tee "$out/table.md"
$keep && echo "runs kept in $out" >&2
exit $status
