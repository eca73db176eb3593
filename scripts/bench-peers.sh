#!/usr/bin/env bash
# bench-peers.sh measures this project's relay side by side with Watermill's
# SQL forwarder (bench/peers/watermill, a module of its own), on the same
# MySQL/MariaDB server and the same broker (one `orderflow-audit broker`,
# kfake over loopback TCP, started for the script), draining the same number
# of order-sized intents into a topic. Each round runs every configuration
# once, ours and the peer's alternating; each run makes and drops its own
# scratch database and topic. It prints one line per run and a Markdown
# table: every round's events/s, the median, and our median over the best
# Watermill median.
#
# Usage: scripts/bench-peers.sh [--rounds N] [--events N] [--relays R] [--batch B] [--partitions P]
# Environment: ORDERFLOW_MYSQL_DSN (default root@tcp(127.0.0.1:3306)/).
# Needs jq, and network access to the Go module proxy the first time (the
# peer's dependencies).
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rounds=3 events=20000 relays="" batch="" partitions=8
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds="$2"; shift 2 ;;
	--events) events="$2"; shift 2 ;;
	--relays) relays="$2"; shift 2 ;;
	--batch) batch="$2"; shift 2 ;;
	--partitions) partitions="$2"; shift 2 ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-peers.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
dsn="${ORDERFLOW_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/}"
command -v jq >/dev/null || { echo "bench-peers.sh: jq is needed" >&2; exit 2; }

tmp="$(mktemp -d)"
broker_pid=""
cleanup() {
	if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building orderflow-audit and the Watermill peer" >&2
go build -o "$tmp/orderflow-audit" ./cmd/orderflow-audit
(cd bench/peers/watermill && go build -o "$tmp/watermill-peer" .)

"$tmp/orderflow-audit" broker --listen 127.0.0.1:0 >"$tmp/broker.out" 2>"$tmp/broker.err" &
broker_pid=$!
for _ in $(seq 100); do
	grep -q 'broker listening on' "$tmp/broker.out" 2>/dev/null && break
	sleep 0.1
done
brokers="$(sed -n 's/^broker listening on \([^ ]*\) .*/\1/p' "$tmp/broker.out")"
[ -n "$brokers" ] || { echo "bench-peers.sh: the broker did not start: $(cat "$tmp/broker.err")" >&2; exit 3; }
echo "broker on $brokers; database server $(echo "$dsn" | sed 's/:[^@]*@/:xxxxx@/')" >&2

ours_args=(--relay-only --events "$events" --partitions "$partitions" --mysql-dsn "$dsn" --kafka-brokers "$brokers" --json)
[ -n "$relays" ] && ours_args+=(--relays "$relays")
[ -n "$batch" ] && ours_args+=(--batch "$batch")
peer_args=(--events "$events" --partitions "$partitions" --mysql-dsn "$dsn" --kafka-brokers "$brokers" --json)

# The configurations, in the order each round runs them: ours, then
# Watermill's defaults and its tuned settings (the issue's best: batch 5000,
# poll 10 ms, interpolateParams), ours again between them.
configs=("ours" "watermill-defaults" "ours" "watermill-batch5000-poll10ms" "ours" "watermill-batch5000-poll10ms-interpolate")
run_config() {
	case "$1" in
	ours) "$tmp/orderflow-audit" bench "${ours_args[@]}" ;;
	watermill-defaults) "$tmp/watermill-peer" "${peer_args[@]}" ;;
	watermill-batch5000-poll10ms) "$tmp/watermill-peer" "${peer_args[@]}" --batch 5000 --poll 10ms ;;
	watermill-batch5000-poll10ms-interpolate) "$tmp/watermill-peer" "${peer_args[@]}" --batch 5000 --poll 10ms --interpolate ;;
	esac
}

declare -A results
for r in $(seq "$rounds"); do
	for c in "${configs[@]}"; do
		out="$tmp/$c.$r.json"
		if ! run_config "$c" >"$out" 2>"$tmp/$c.$r.err"; then
			echo "bench-peers.sh: $c failed in round $r:" >&2
			tail -5 "$tmp/$c.$r.err" >&2
			exit 1
		fi
		v="$(jq -r '.relay_events_per_s | floor' "$out")"
		ok="$(jq -r 'if has("check") then .check.ok else .ok end' "$out")"
		[ "$ok" = true ] || { echo "bench-peers.sh: $c in round $r failed its check" >&2; cat "$out" >&2; exit 1; }
		results[$c]="${results[$c]:-} $v"
		echo "round $r $c: $v events/s" >&2
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "| relay ($events intents, $partitions partitions) | events/s per run | median |"
echo "| --- | --- | ---: |"
best=0
for c in ours watermill-defaults watermill-batch5000-poll10ms watermill-batch5000-poll10ms-interpolate; do
	m="$(echo "${results[$c]}" | median)"
	echo "| $c | ${results[$c]# } | $m |"
	if [ "$c" != ours ] && [ "$m" -gt "$best" ]; then best=$m; fi
done
ours="$(echo "${results[ours]}" | median)"
echo
awk -v o="$ours" -v b="$best" 'BEGIN { printf "ours / best Watermill configuration (medians): %.2f\n", o / b }'
