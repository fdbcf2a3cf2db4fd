#!/usr/bin/env bash
# A server's start on a large index, from a cold page cache: how long until `ndd-index serve`
# answers /healthz, then its first requests and its steady state, with tools/serve-load on
# loopback (queries only: the index is not written).
#
#   tools/serve_start.sh TAG BIN_DIR INDEX QUERIES
#   e.g. tools/serve_start.sh new target/release OUT/idx-10000000-512MiB OUT/queries
#
# BIN_DIR holds ndd-index and serve-load; QUERIES is a directory of pages (the scale run's
# QUERY_DOCS pages, which the index holds). Steps: sync and drop the page cache (needs root),
# start the server, poll /healthz every 20 ms ("ready_s": seconds from the start), then
#   first:  FIRST requests (default 400) from CLIENTS clients (default 8), as they come;
#   steady: SECS seconds (default 20) of the same clients on the same pages, after WAIT
#           seconds (default 10) idle, which gives a server's background work time to end.
# Prints one JSON line per run (serve-load's, with "tag" and "run" added) and the server's
# CPU seconds and major page faults (disk reads of its mappings), in all and in the steady run.
# The server is stopped on any exit.
# MODE=insert (or batch) sends check-and-inserts of QUERIES' pages instead (keys prefixed by TAG
# and the time; this writes to the index: give it a copy, tools/index_copy.sh).
# Env: MODE=query LOG=FILE (the server's stderr: its warm-up line) PORT=7913 FIRST=400 CLIENTS=8 SECS=20 WAIT=10 ARGS='threshold=0.8&top=10'
set -euo pipefail
TAG=$1; BIN=$(cd "$2" && pwd); IX=$3; Q=$4
PORT=${PORT:-7913}; FIRST=${FIRST:-400}; CLIENTS=${CLIENTS:-8}; SECS=${SECS:-20}
WAIT=${WAIT:-10}; ARGS=${ARGS:-threshold=0.8&top=10}; MODE=${MODE:-query}
KEYS="$TAG-$(date +%s)-"
sync; echo 3 > /proc/sys/vm/drop_caches
load=$(cut -d' ' -f1 /proc/loadavg)
t0=$(date +%s.%N)
"$BIN/ndd-index" serve --index "$IX" --listen "127.0.0.1:$PORT" > /dev/null 2> "${LOG:-/dev/null}" &
srv=$!
trap 'kill $srv 2>/dev/null || true; wait $srv 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null; do
  kill -0 $srv 2>/dev/null || { echo "serve_start: the server exited" >&2; exit 1; }
  sleep 0.02
done
ready=$(echo "$(date +%s.%N) - $t0" | bc)
run() { # NAME, serve-load flags...
  local name=$1; shift
  "$BIN/serve-load" --addr "127.0.0.1:$PORT" --docs "$Q" --mode "$MODE" --clients "$CLIENTS" \
    --query-args "$ARGS" --key-prefix "$KEYS$name-" --json "$@" |
    sed "s/^{/{\"tag\":\"$TAG\",\"run\":\"$name\",\"ready_s\":$ready,\"load\":$load,/"
}
# The server's CPU seconds and major page faults (reads from the disk) so far.
stat() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f %d", ($14 + $15) / hz, $12}' /proc/$srv/stat; }
run first --requests "$FIRST" --seconds 600
sleep "$WAIT"
read -r cpu0 flt0 <<< "$(stat)"
run steady --requests 10000000 --seconds "$SECS"
read -r cpu1 flt1 <<< "$(stat)"
echo "{\"tag\":\"$TAG\",\"server_cpu_s\":$cpu1,\"steady_cpu_s\":$(echo "$cpu1 - $cpu0" | bc),\"majflt\":$flt1,\"steady_majflt\":$((flt1 - flt0))}"
