#!/usr/bin/env bash
# Query latency on an index: queries every file under DIR (already indexed or not) in one
# `ndd-index query --json` process and prints p50/p90/p99/max of the per-query time the
# engine reports (canonicalization + search + catalog lookups; process start-up excluded).
# Usage: tools/query_latency.sh NDD_INDEX_BIN INDEX_DIR DOCS_DIR [THRESHOLD=0.8] [TOP=10]
set -eu
BIN="$1"; IDX="$2"; DOCS="$3"; T="${4:-0.8}"; TOP="${5:-10}"
find "$DOCS" -type f -name '*.html' | sort > /tmp/ndd-query-files.$$
xargs -a /tmp/ndd-query-files.$$ -d '\n' "$BIN" query --json --index "$IDX" --threshold "$T" --top "$TOP" \
  | python3 -c '
import json, sys
us = sorted(json.loads(l)["micros"] for l in sys.stdin)
n = len(us)
pct = lambda p: us[min(n - 1, int(p * n))] / 1000
print(f"{n} queries: p50 {pct(0.5):.2f} ms, p90 {pct(0.9):.2f} ms, p99 {pct(0.99):.2f} ms, max {us[-1]/1000:.2f} ms")'
rm -f /tmp/ndd-query-files.$$
