#!/usr/bin/env bash
# Scaling and memory measurements of ndd-index on ndd-gen corpora (BENCHMARKS.md).
#
#   tools/bench_scale.sh OUT [DOCS=1000000] [BATCHES=4] [MEM=512MiB]
#   PARTS=4 DROP_INPUT=1 tools/bench_scale.sh OUT 4000000 16 512MiB   # the 4M run
#
# Generates (once) DOCS web-like documents (~2 KB of text, ~4.4 KB of HTML each) as BATCHES
# nightly WARC files, ingests them one batch after another with --mem MEM (clusters are kept
# up to date by every ingest), lists the clusters after each batch, and prints one TSV row per
# batch: index size, ingest wall time, docs/s, peak RSS (/usr/bin/time -v), index bytes per
# document, and the clusters listing's wall time and RSS. Set MEMTEST=1 to also run the
# bounded-memory check: batch 1 ingested alone and `pairs --threshold 0.8` with --mem 64MiB.
# Binaries: $BIN (default target/release). DROP_INPUT=1 deletes each batch's WARC once it is
# ingested (a 4M-document corpus is ~18 GB of WARC next to a ~30 GB index).
# Each ingest runs under tools/peak_mem.sh: the peak heap (RssAnon) and the peak of mapped
# segment pages (RssFile) are recorded apart. MAX_SEGMENT=4GiB passes `--max-segment` (the
# largest segment the merge after a batch may write; default 16GiB). QUERY_AT="4 40" measures
# single-document query latency (one `query --json` process, warm: the second of two passes;
# p50/p99 of the engine's per-query time) after those batches, on QUERY_DOCS=1000 pages taken
# from batch 1 before it is ingested, every other one edited (tools/warc_pages.py).
# KEEP_AT="4 40" keeps those nights for re-running later (e.g. cold, several times): the index
# as it was before the batch, in OUT/before-B (hard links for the write-once segment and SST
# files, copies of the rest), and the batch's WARC, OUT/before-B.warc (kept by DROP_INPUT).
# STOP=k ends the run after batch k (resume with START=k+1).
# Disk: the run stops before it starts when OUT's file system has less than 6 KB free per
# document (60 GB for 10M: the largest merge writes its output beside the whole index, with a
# part's WARC and the sort's run files; DISK_CHECK=0 skips the check), and stops after a batch
# whose merge failed (`compaction_error` in the ingest's JSON, e.g. a full disk): the batches
# after it would be timed on an index the policy did not leave.
set -euo pipefail
OUT=$1; DOCS=${2:-1000000}; BATCHES=${3:-4}; MEM=${4:-512MiB}
BIN=${BIN:-target/release}
mkdir -p "$OUT"
if [ "${DISK_CHECK:-1}" != 0 ] && [ "${START:-1}" = 1 ]; then
  need=$((DOCS * 6000)); have=$(df --output=avail -B1 "$OUT" | tail -1)
  if [ "$have" -lt "$need" ]; then
    echo "bench_scale.sh: $OUT has $((have >> 30)) GiB free; a run of $DOCS documents needs about $((need >> 30)) GiB (DISK_CHECK=0 runs anyway)" >&2
    exit 1
  fi
fi
# PARTS=p generates the corpus as p independent ndd-gen runs (seeds 42, 43, ...) of DOCS/p
# documents and BATCHES/p batches each (keys prefixed p1-, p2-, ...), each generated just before its first batch: with
# DROP_INPUT=1 only one part's WARC is on disk at a time. Planted clusters stay within a part.
PARTS=${PARTS:-1}
PER_PART=$((BATCHES / PARTS))
corpus_of() { # batch -> directory of its part (generated on first use)
  local p=$(( ($1 - 1) / PER_PART + 1 ))
  local dir=$OUT/corpus-$DOCS-$BATCHES-p$p-of-$PARTS
  [ "$PARTS" = 1 ] && dir=$OUT/corpus-$DOCS-$BATCHES
  if [ ! -f "$dir/gen.json" ]; then
    rm -rf "$dir"
    "$BIN/ndd-gen" --out "$dir" --docs $((DOCS / PARTS)) --batches "$PER_PART" --format warc \
      --seed $((41 + p)) --key-prefix "p$p-" --quiet
  fi
  echo "$dir"
}
batch_file() { printf '%s/batch-%02d.warc' "$(corpus_of "$1")" $(( ($1 - 1) % PER_PART + 1 )); }
CORPUS=$(corpus_of 1)
. "$(dirname "$0")/index_copy.sh"   # copy_index SRC DST
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; printf "%.1f", s}' "$1"; }

if [ "${MEMTEST:-0}" = 1 ]; then
  M=$OUT/mem64; rm -rf "$M"; mkdir -p "$M"
  /usr/bin/time -v "$BIN/ndd-index" ingest --quiet --json --mem 64MiB --index "$M/idx" \
    "$CORPUS/batch-01.warc" > "$M/ingest.json" 2> "$M/ingest.time"
  /usr/bin/time -v "$BIN/ndd-index" pairs --stats --mem 64MiB --threshold 0.8 --index "$M/idx" \
    > "$M/pairs.tsv" 2> "$M/pairs.time"
  echo -e "mem64\tingest_s=$(wall "$M/ingest.time")\tingest_rss_MiB=$(rss "$M/ingest.time")\tpairs_s=$(wall "$M/pairs.time")\tpairs_rss_MiB=$(rss "$M/pairs.time")\tfeatures=$(grep -o '"features":[0-9]*' "$M/ingest.json")\tpairs=$(wc -l < "$M/pairs.tsv")"
  grep -v '^\s' "$M/pairs.time" | tail -1 || true
fi

HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "${QUERY_AT:-}" ] && [ ! -d "$OUT/queries" ]; then
  python3 "$HERE/warc_pages.py" "$(batch_file 1)" "$OUT/queries" "${QUERY_DOCS:-1000}"
fi
IDX=$OUT/idx-$DOCS-$MEM
START=${START:-1}   # START=k resumes at batch k on the index the earlier batches built
[ "$START" = 1 ] && rm -rf "$IDX"
echo -e "batch\tdocs_in_index\tingest_s\tdocs_per_s\tpeak_rss_MiB\tindex_bytes_per_doc\tstage_seconds\tclusters_s\tclusters_rss_MiB\tmax_clusters\tmatching\tcpu_s\tload\tpeak_heap_RssAnon_MiB\tpeak_RssFile_MiB\tstage_cpu_seconds\tsegments\tquery_ms"
total=0
for b in $(seq 1 $((START - 1))); do
  total=$((total + $(grep -o '"added":[0-9]*' "$OUT/ingest-$b.json" | cut -d: -f2)))
done
for b in $(seq "$START" "${STOP:-$BATCHES}"); do
  f=$(batch_file "$b")
  if [[ " ${KEEP_AT:-} " == *" $b "* ]]; then
    copy_index "$IDX" "$OUT/before-$b"; ln -f "$f" "$OUT/before-$b.warc"
  fi
  /usr/bin/time -v "$HERE/peak_mem.sh" "$BIN/ndd-index" ingest --quiet --json --mem "$MEM" \
    ${MAX_SEGMENT:+--max-segment "$MAX_SEGMENT"} --index "$IDX" "$f" \
    > "$OUT/ingest-$b.json" 2> "$OUT/ingest-$b.time"
  if failed=$(grep -o '"compaction_error":"[^"]*"' "$OUT/ingest-$b.json"); then
    echo "bench_scale.sh: the merge after batch $b failed ($failed); stopping: later batches" \
      "would run on an index the policy did not leave" >&2
    exit 1
  fi
  n=$(grep -o '"added":[0-9]*' "$OUT/ingest-$b.json" | cut -d: -f2)
  total=$((total + n))
  bytes=$(du -sb "$IDX" | cut -f1)
  /usr/bin/time -v "$BIN/ndd-index" clusters --index "$IDX" > "$OUT/clusters-$b.tsv" 2> "$OUT/clusters-$b.time"
  [ "${DROP_INPUT:-0}" = 1 ] && rm -f "$f"
  s=$(wall "$OUT/ingest-$b.time")
  stages=$(grep -o '"stage_seconds":{[^}]*}' "$OUT/ingest-$b.json" | sed 's/"stage_seconds"://; s/"//g')
  big=$(awk '{n[$1]++} END {m=0; for (c in n) if (n[c] > m) m = n[c]; print m}' "$OUT/clusters-$b.tsv")
  # The matching used, posting blocks read and probe lookups the key filters ruled out.
  match=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])).get("matching_stats") or {}; print("%s/blocks=%s/filtered=%s" % (m.get("matching"), m.get("blocks_read"), m.get("keys_filtered")))' "$OUT/ingest-$b.json" 2>/dev/null || echo -)
  anon=$(grep -o 'peak_rss_anon_MiB=[0-9]*' "$OUT/ingest-$b.time" | cut -d= -f2)
  file=$(grep -o 'peak_rss_file_MiB=[0-9]*' "$OUT/ingest-$b.time" | cut -d= -f2)
  scpu=$(grep -o '"stage_cpu_seconds":{[^}]*}' "$OUT/ingest-$b.json" | sed 's/"stage_cpu_seconds"://; s/"//g')
  nseg=$(ls "$IDX"/segments 2>/dev/null | grep -c '\.ndds$' || true)
  q=-
  if [[ " ${QUERY_AT:-} " == *" $b "* ]]; then
    "$HERE/query_latency.sh" "$BIN/ndd-index" "$IDX" "$OUT/queries" > /dev/null  # warm-up pass
    "$HERE/query_latency.sh" "$BIN/ndd-index" "$IDX" "$OUT/queries" > "$OUT/query-$b.txt"
    q=$(sed -E 's/.*p50 ([0-9.]+) ms.*p99 ([0-9.]+) ms.*/p50=\1,p99=\2/' "$OUT/query-$b.txt")
  fi
  cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.1f", s}' "$OUT/ingest-$b.time")
  echo -e "$b\t$total\t$s\t$(awk -v n="$n" -v s="$s" 'BEGIN{printf "%.0f", n/s}')\t$(rss "$OUT/ingest-$b.time")\t$((bytes / total))\t$stages\t$(wall "$OUT/clusters-$b.time")\t$(rss "$OUT/clusters-$b.time")\t${big:-0}\t$match\t$cpu\t$(cut -d' ' -f1 /proc/loadavg)\t${anon:--}\t${file:--}\t$scpu\t$nseg\t$q"
done
