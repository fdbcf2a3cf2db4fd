#!/usr/bin/env bash
# One nightly batch as users meet it (BENCHMARKS.md, "Scaling: 10M documents again"): the batch
# WARC ingested into a copy of the index SRC (tools/index_copy.sh: SRC is not changed), the page
# cache dropped first unless MODE is "warm", `--mem 512MiB --max-segment 1GiB` (no merge after
# the batch: the night's own work). MERGE=1 leaves `--max-segment` at its default, so a night
# whose batch completes a merge level (e.g. the one before batch 4: 3 x 250k) runs the merge
# too, in the same process, as bench_scale.sh's batches do; its segment sha256 is then the
# merged segment's. Needs root for drop_caches.
#
#   tools/bench_night.sh TAG BIN SRC WARC [cold|warm]  >> nights.tsv
#
# e.g. on the nights tools/bench_scale.sh kept with KEEP_AT="4 40":
#   for t in 4a:4 40a:40 40b:40 4b:4; do
#     tools/bench_night.sh c${t%%:*} target/release/ndd-index OUT/before-${t#*:} OUT/before-${t#*:}.warc
#   done >> nights.tsv
# One TSV row: tag, mode, start (UTC), load before-after, ingest wall / user / sys s and major
# faults, stage walls and stage CPU s (read/postings/matching/publish), matching CPU s, filter
# checks, old blocks read, blocks read, pairs, md5 of the sorted report, sha256 of the new
# segment (8 hex digits each). The copy and the run's files go to ${WORK:-/tmp}/night-TAG.*
set -euo pipefail
TAG=$1; BIN=$2; SRC=$3; WARC=$4; MODE=${5:-cold}
. "$(dirname "$0")/index_copy.sh"
W=${WORK:-/tmp}/night-$TAG; R=$W.ix
copy_index "$SRC" "$R"
before=$(ls "$R/segments" | sort)
if [ "$MODE" != warm ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
start=$(date -u +%H:%M:%S); load=$(cut -d' ' -f1 /proc/loadavg)
LIMIT=(--max-segment 1GiB); [ "${MERGE:-0}" = 1 ] && LIMIT=()
/usr/bin/time -f "%e %U %S %F" -o "$W.time" "$BIN" ingest --quiet --json --mem 512MiB \
  "${LIMIT[@]}" --report "$W.report" --index "$R" "$WARC" > "$W.json"
new=$(comm -13 <(echo "$before") <(ls "$R/segments" | sort) | grep '\.ndds$' | head -1)
sha=$(sha256sum "$R/segments/$new" | cut -c1-8); md5=$(sort "$W.report" | md5sum | cut -c1-8)
python3 - "$W.json" "$TAG" "$MODE" "$start" "$load-$(cut -d' ' -f1 /proc/loadavg)" \
  "$(cat "$W.time")" "$md5" "$sha" <<'PY'
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
s, c, m = d["stage_seconds"], d["stage_cpu_seconds"], d.get("matching_stats") or {}
f = lambda o: "/".join("%.1f" % o[k] for k in ("read", "postings", "matching", "publish"))
print("\t".join(str(v) for v in sys.argv[2:7] + [f(s), f(c), "%.1f" % c["matching"],
      m.get("filter_checks"), m.get("old_blocks_read"), m.get("blocks_read"),
      d.get("near_duplicate_pairs")] + sys.argv[7:9]))
PY
rm -rf "$R"
