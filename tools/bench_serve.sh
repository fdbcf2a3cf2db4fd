#!/usr/bin/env bash
# The serving benchmark of BENCHMARKS.md ("Serving"): `ndd-index serve` on an index of 1M
# generated documents, loaded by tools/serve-load on loopback.
#
#   tools/bench_serve.sh BIN_DIR WORK_DIR
#   e.g. cargo build --release --workspace && tools/bench_serve.sh target/release /work/data/serve
#
# BIN_DIR holds ndd-index, ndd-gen and serve-load. WORK_DIR keeps the index between runs:
#   WORK_DIR/ix            the index (built when WORK_DIR/ix/BUILT is missing: DOCS documents
#                          from ndd-gen in PARTS parts, seeds 42.., keys p1-..; each part's
#                          WARC is ingested as one batch and deleted, so at most one part's
#                          WARC is on disk next to the index: 1M = 4 x ~1.1 GB WARC, ~7 GB index)
#   WORK_DIR/query.warc    the first ~QUERY_MB MB of part 1's WARC: pages the index holds
#   WORK_DIR/big/          BIG_DOCS pages of ~100 KB (ndd-gen --words 15000), for the
#                          large-page query run
#   WORK_DIR/insert/       pages for check-and-insert (ndd-gen --seed 99, files)
#   WORK_DIR/run-N/        each run's nightly batch (generated, ingested, deleted), logs and
#                          serve-load answers; N counts runs, so keys never repeat
# Runs (8 clients each, bounded by SECS seconds and a request budget):
#   1. query, own pages, threshold 0.5, top 10
#   2. query, ~100 KB pages
#   3. query while another process runs `ndd-index ingest --background` of a NIGHTLY_DOCS
#      batch (from 3 s into the run until the ingest ends; NIGHTLY_FLAGS= runs it at normal
#      priority)
#   4. check-and-insert, one page per request
#   5. check-and-insert, 50 pages per request (`/v1/documents:batch`)
# The server is stopped (SIGTERM) at the end and on any exit. Prints a JSON line per run and a
# markdown table; every run records `uptime` before and after, and the server's CPU seconds.
# Env: DOCS=1000000 PARTS=4 MEM=512MiB PORT=7911 SECS=30 CLIENTS=8 THREADS=2 NIGHTLY_DOCS=20000
#      QUERY_MB=100 BIG_DOCS=200 ONLY_BUILD=1 (build the index and inputs, run nothing)
#      NIGHTLY_FLAGS=--background (extra flags of the nightly ingest)
#      QUERY_SRC=DIR|FILE.warc (the query pages; default WORK_DIR/query.warc. With an index built
#      elsewhere, e.g. the 10M run's copied to WORK_DIR/ix with a WORK_DIR/ix/BUILT file, give
#      the pages that run kept: QUERY_SRC=OUT/queries)
set -euo pipefail
BIN=$(cd "$1" && pwd); W=$2
DOCS=${DOCS:-1000000}; PARTS=${PARTS:-4}; MEM=${MEM:-512MiB}; PORT=${PORT:-7911}
SECS=${SECS:-30}; CLIENTS=${CLIENTS:-8}; THREADS=${THREADS:-2}
NIGHTLY_DOCS=${NIGHTLY_DOCS:-20000}; NIGHTLY_FLAGS=${NIGHTLY_FLAGS---background}; QUERY_MB=${QUERY_MB:-100}; BIG_DOCS=${BIG_DOCS:-200}
mkdir -p "$W"; W=$(cd "$W" && pwd)
IX=$W/ix
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# ---- the index ------------------------------------------------------------------------
if [ ! -f "$IX/BUILT" ]; then
  rm -rf "$IX"
  log "building a $DOCS-document index in $IX ($PARTS parts); load: $(uptime)"
  for p in $(seq 1 "$PARTS"); do
    g=$W/gen-p$p
    if [ ! -f "$g/gen.json" ]; then
      rm -rf "$g"
      "$BIN/ndd-gen" --out "$g" --docs $((DOCS / PARTS)) --format warc --seed $((41 + p)) \
        --key-prefix "p$p-" --threads 2 --quiet
    fi
    /usr/bin/time -v "$BIN/ndd-index" ingest --quiet --json --mem "$MEM" --index "$IX" \
      --batch "part-$p" "$g/batch-01.warc" > "$W/ingest-p$p.json" 2> "$W/ingest-p$p.time"
    log "part $p ingested: $(grep -o '"added":[0-9]*' "$W/ingest-p$p.json"), $(grep 'Elapsed' "$W/ingest-p$p.time" | sed 's/.*: //') wall; load: $(uptime)"
    if [ "$p" = 1 ]; then
      # Keep the first QUERY_MB MB of part 1 as query pages (serve-load drops the cut record).
      head -c $((QUERY_MB << 20)) "$g/batch-01.warc" > "$W/query.warc"
    fi
    rm -rf "$g"
  done
  du -sh "$IX" >&2
  touch "$IX/BUILT"
fi
if [ ! -f "$W/big/gen.json" ]; then
  rm -rf "$W/big"
  "$BIN/ndd-gen" --out "$W/big" --docs "$BIG_DOCS" --words 15000 --seed 5 --threads 2 --quiet
fi
if [ ! -f "$W/insert/gen.json" ]; then
  rm -rf "$W/insert"
  "$BIN/ndd-gen" --out "$W/insert" --docs 20000 --seed 99 --threads 2 --quiet
fi
[ "${ONLY_BUILD:-0}" = 1 ] && exit 0

# ---- the runs -------------------------------------------------------------------------
n=1; while [ -e "$W/run-$n" ]; do n=$((n + 1)); done
R=$W/run-$n; mkdir -p "$R"
log "run $n in $R"
"$BIN/ndd-gen" --out "$R/nightly" --docs "$NIGHTLY_DOCS" --format warc --seed $((1000 + n)) \
  --key-prefix "n$n-" --threads 2 --quiet

SERVER=
stop_server() {
  if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then
    kill -TERM "$SERVER"; wait "$SERVER" || true
  fi
  SERVER=
}
trap stop_server EXIT
"$BIN/ndd-index" serve --index "$IX" --listen "127.0.0.1:$PORT" --threads "$THREADS" \
  2> "$R/server.log" &
SERVER=$!
for _ in $(seq 1 600); do
  curl -sf "127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break
  kill -0 "$SERVER" || { cat "$R/server.log" >&2; exit 1; }
  sleep 0.1
done
# Wait for the server's warm-up (every segment block checked once, in file order).
for _ in $(seq 1 1800); do
  curl -s "127.0.0.1:$PORT/healthz" | grep -q '"warm":true' && break
  sleep 1
done
log "server warm: $(grep warm-up "$R/server.log" | tail -1); load: $(uptime)"
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$SERVER/stat"; } # utime + stime, seconds
SUMMARY=$R/summary.jsonl; : > "$SUMMARY"
# run NAME SERVE-LOAD-ARGS...: one load run, one summary line.
run() {
  local name=$1; shift
  local u0 u1 c0 c1
  u0=$(uptime | sed 's/.*load average: //'); c0=$(cpu)
  "$BIN/serve-load" --addr "127.0.0.1:$PORT" --clients "$CLIENTS" --seconds "$SECS" --json "$@" \
    > "$R/$name.json"
  c1=$(cpu); u1=$(uptime | sed 's/.*load average: //')
  local line
  line=$(sed "s/^{/{\"run\":\"$name\",\"server_cpu_s\":$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}'),\"load_before\":\"$u0\",\"load_after\":\"$u1\",/" "$R/$name.json")
  echo "$line" | tee -a "$SUMMARY"
}
Q='threshold=0.5&top=10'
QUERY_SRC=${QUERY_SRC:-$W/query.warc}
run query --mode query --docs "$QUERY_SRC" --query-args "$Q" --requests 1000000
run query-100k --mode query --docs "$W/big" --query-args "$Q" --requests 1000000
# The nightly ingest in another process; the query run lasts until it has finished.
( sleep 3; /usr/bin/time -v "$BIN/ndd-index" ingest $NIGHTLY_FLAGS --quiet --json --mem "$MEM" \
    --index "$IX" --batch "nightly-$n" "$R/nightly/batch-01.warc" > "$R/nightly.json" 2> "$R/nightly.time"
  date +%s.%N > "$R/nightly.done" ) &
NIGHTLY=$!
SECS_SAVED=$SECS; SECS=1800
run query-during-ingest --mode query --docs "$QUERY_SRC" --query-args "$Q" --requests 10000000 \
  --stop-file "$R/nightly.done"
SECS=$SECS_SAVED
wait "$NIGHTLY"
log "nightly ingest: $(grep 'Elapsed' "$R/nightly.time" | sed 's/.*: //') wall, $(grep -o '"added":[0-9]*' "$R/nightly.json")"
run insert --mode insert --docs "$W/insert" --key-prefix "r$n-" --query-args "$Q" --requests 200000
run insert-batch50 --mode batch --batch-size 50 --docs "$W/insert" --key-prefix "rb$n-" --requests 20000
curl -s "127.0.0.1:$PORT/metrics" > "$R/metrics.txt"
stop_server
trap - EXIT
rm -rf "$R/nightly"

# ---- summary --------------------------------------------------------------------------
python3 - "$SUMMARY" "$R" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"\nresults: {sys.argv[2]}\n")
print("| run (8 clients) | requests/s | docs/s | server p50 / p99 ms | client p50 / p99 ms | server CPU s | errors | load before -> after |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for r in rows:
    s, c = r["server_ms"], r["client_ms"]
    sv = f"{s['p50']:.3f} / {s['p99']:.3f}" if s["p50"] is not None else ""
    print(f"| {r['run']} | {r['requests_per_s']:,.0f} | {r['docs_per_s']:,.0f} | {sv} "
          f"| {c['p50']:.2f} / {c['p99']:.2f} | {r['server_cpu_s']} | {r['http_errors'] + r['failed']} "
          f"| {r['load_before']} -> {r['load_after']} |")
EOF
