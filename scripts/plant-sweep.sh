#!/usr/bin/env bash
# plant-sweep.sh: for each planted bug, explore seeds 1..20 until one fails
# with the bug's rule, shrink it, then run the shrunk replay command
# REPLAYS times and count how often `verify` fails it with the same rule.
# One line per bug on stdout, logs under OUT.
#
#   scripts/plant-sweep.sh [-b BIN] [-o OUT] [-r REPLAYS] [-s SHRINK_RUNS] [BUG...]
#
# BIN defaults to a fresh build of ./cmd/orderflow-audit; no BUG: all.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="" out="sweep-out" replays=3 shrink=8
while getopts "b:o:r:s:" o; do
	case $o in
	b) bin=$OPTARG ;; o) out=$OPTARG ;; r) replays=$OPTARG ;; s) shrink=$OPTARG ;;
	*) echo "usage: $0 [-b BIN] [-o OUT] [-r REPLAYS] [-s SHRINK_RUNS] [BUG...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
mkdir -p "$out"
if [ -z "$bin" ]; then
	bin=$out/orderflow-audit
	go build -o "$bin" ./cmd/orderflow-audit
fi
bugs=("$@")
if [ ${#bugs[@]} -eq 0 ]; then
	mapfile -t bugs < <(sed -n 's/^\t{"\([a-z0-9-]*\)", ".*/\1/p' spec/plants.go)
fi
printf '%-32s %-6s %-40s %s\n' bug seed rules "replays failing with the rule"
for bug in "${bugs[@]}"; do
	log=$out/$bug.log
	"$bin" explore --seeds 1..20 --plant "$bug" --stop-on-fail --shrink-runs "$shrink" --progress off \
		--out-dir "$out/$bug" >"$log" 2>&1 || true
	found=$(sed -n "s/^planted bug $bug: found by seed \([0-9]*\) (rules \(.*\))$/\1 \2/p" "$log")
	if [ -z "$found" ]; then
		printf '%-32s %-6s %-40s %s\n' "$bug" - "not found in seeds 1..20" -
		continue
	fi
	seed=${found%% *} rules=${found#* }
	rule=$(sed -n 's/^shrunk seed .*; rule \([a-z0-9-]*\) still fails$/\1/p' "$log")
	cmd=$(grep '^orderflow-audit run ' "$log" | tail -n 1)
	ok=0
	for i in $(seq 1 "$replays"); do
		ev=$out/$bug/replay-$i.json
		rm -rf "$ev" "${ev%.json}"
		# shellcheck disable=SC2086 # the replay line is flags only, no shell syntax
		"$bin" ${cmd#orderflow-audit } --out "$ev" >"$out/$bug/replay-$i.out" 2>&1 || true
		verdict=$("$bin" verify "$ev" 2>&1 || true) # exit 1 on FAIL: wanted here
		if grep -q "^  \[$rule\]" <<<"$verdict"; then
			ok=$((ok + 1))
		fi
	done
	printf '%-32s %-6s %-40s %d of %d (%s; %s)\n' "$bug" "$seed" "$rules" "$ok" "$replays" "$rule" "${cmd#orderflow-audit run }"
done
