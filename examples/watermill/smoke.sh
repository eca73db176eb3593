#!/usr/bin/env bash
# smoke.sh: the manual smoke run of README.md, scripted. For each run it
# creates a scratch database on the server (root, no password, nothing
# global changed) with migrations/*.up.sql and a topic on one embedded
# broker, starts the service, the forwarder and the consumer, sends
# REQUESTS orders from WRITERS concurrent writers, and counts orders,
# records and inbox rows (`watermill-example count`). Then it stops the
# three processes it started and drops the database.
#
#   examples/watermill/smoke.sh [RUNS] [WRITERS] [REQUESTS]     (default 1 8 200)
#
# Environment: MYSQL (default "mysql -uroot -h127.0.0.1 -P3306"),
# MYSQL_DSN (default root@tcp(127.0.0.1:3306)/), OFA (an orderflow-audit
# binary; default: built from the main module), BROKER_DATA_DIR (the
# broker persists its log there, for reading it afterwards), KEEP=1 keeps
# databases and logs. Logs go to $TMPDIR/watermill-smoke.XXXXXX/.
set -euo pipefail
runs=${1:-1} writers=${2:-8} requests=${3:-200}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mysql_cmd=${MYSQL:-"mysql -uroot -h127.0.0.1 -P3306"}
dsn=${MYSQL_DSN:-"root@tcp(127.0.0.1:3306)/"}
work=$(mktemp -d "${TMPDIR:-/tmp}/watermill-smoke.XXXXXX")
bin=$here/bin/watermill-example
(cd "$here" && go build -o "$bin" .)
ofa=${OFA:-$work/orderflow-audit}
[ -x "$ofa" ] || (cd "$root" && go build -o "$ofa" ./cmd/orderflow-audit)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; kill "${broker_pid:-}" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

bport=$(free_port)
"$ofa" broker --listen "127.0.0.1:$bport" ${BROKER_DATA_DIR:+--data-dir "$BROKER_DATA_DIR"} >"$work/broker.log" 2>&1 &
broker_pid=$!
brokers=127.0.0.1:$bport
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$bport") 2>/dev/null && break; sleep 0.1; done

echo "run writers requests | result"
for run in $(seq "$runs"); do
  id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
  db=wm_smoke_$id topic=orders.$id port=$(free_port)
  $mysql_cmd -e "CREATE DATABASE \`$db\`"
  cat "$here"/migrations/*.up.sql | $mysql_cmd "$db"
  "$bin" topic --brokers "$brokers" --topic "$topic" --partitions 4 >/dev/null
  export MYSQL_DSN=$dsn MYSQL_DATABASE=$db KAFKA_BROKERS=$brokers KAFKA_TOPIC=$topic
  "$bin" service --listen "127.0.0.1:$port" 2>"$work/$id.service.log" & pids+=($!)
  "$bin" forwarder 2>"$work/$id.forwarder.log" & pids+=($!)
  "$bin" consumer --group "notify-$id" 2>"$work/$id.consumer.log" & pids+=($!)
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  load=$("$bin" load --url "http://127.0.0.1:$port" --requests "$requests" --concurrency "$writers" --run "$id" 2>>"$work/$id.load.log" || true)
  count=$("$bin" count --settle 5s 2>&1 || true)
  echo "$run $writers $requests | $load"
  echo "$count" | sed 's/^/    /'
  stop_all
  [ -n "${KEEP:-}" ] || $mysql_cmd -e "DROP DATABASE \`$db\`"
done
[ -z "${KEEP:-}" ] || echo "kept: databases wm_smoke_*, logs in $work"
