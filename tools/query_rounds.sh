#!/usr/bin/env bash
# One round of query latency on an index as a user meets it (BENCHMARKS.md, "Queries that
# read only what they need"): the page cache dropped (needs root), one `ndd-index query` of
# one page from the cold cache and the same again warm (the process's wall and the engine's
# `micros`), then every page under QUERIES in one process, twice (tools/query_latency.sh:
# p50/p90/p99/max of `micros`). Alternate binaries between rounds to compare them.
# Usage: tools/query_rounds.sh TAG NDD_INDEX_BIN INDEX_DIR QUERIES_DIR [PAGE]
set -eu
TAG=$1; BIN=$2; IDX=$3; Q=$4; PAGE=${5:-$(find "$Q" -type f -name '*.html' | sort | sed -n 2p)}
HERE=$(dirname "$0")
sync; echo 3 > /proc/sys/vm/drop_caches
echo "== $TAG $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
T=$(mktemp); trap 'rm -f "$T"' EXIT
for k in cold warm; do
  micros=$(/usr/bin/time -f "%e" -o "$T" "$BIN" query --json --index "$IDX" --threshold 0.8 \
    --top 10 "$PAGE" | python3 -c 'import json, sys; print(json.load(sys.stdin)["micros"])')
  echo "single $k: wall $(cat "$T") s, micros $micros"
done
for p in 1 2; do
  echo "pass $p: $("$HERE/query_latency.sh" "$BIN" "$IDX" "$Q")"
done
