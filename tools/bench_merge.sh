#!/usr/bin/env bash
# One merge as users meet it (BENCHMARKS.md, "Merges: the (doc, rank) records transposed"):
# `compact --full` of a copy of the index SRC (tools/index_copy.sh: SRC is not changed), the
# page cache dropped first unless MODE is "warm". Needs root for drop_caches.
#
#   tools/bench_merge.sh TAG BIN SRC [cold|warm]  >> merges.tsv
#
# e.g. on the night tools/bench_scale.sh kept with KEEP_AT=4 (3 x 250k):
#   for t in m1:MAIN n1:NEW n2:NEW m2:MAIN; do
#     tools/bench_merge.sh ${t%%:*} ${t#*:} OUT/before-4
#   done >> merges.tsv
# One TSV row: tag, load before, wall / user / sys s, peak RSS KiB (/usr/bin/time), the
# merge's own seconds (`compact --json`), sha256 of the merged segment (12 hex digits). The
# copy and the run's files go to ${WORK:-/tmp}/merge-TAG.*
set -euo pipefail
TAG=$1; BIN=$2; SRC=$3; MODE=${4:-cold}
. "$(dirname "$0")/index_copy.sh"
W=${WORK:-/tmp}/merge-$TAG; R=$W.ix
copy_index "$SRC" "$R"
if [ "$MODE" != warm ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
load=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/time -f "%e %U %S %M" -o "$W.time" "$BIN" compact --full --json --index "$R" > "$W.json"
read -r seg secs < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['segment'], d['seconds'])" "$W.json")
sha=$(sha256sum "$R/segments/$seg" | cut -c1-12)
echo -e "$TAG\t$load\t$(cat "$W.time")\t$secs\t$sha"
rm -rf "$R"
