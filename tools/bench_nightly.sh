#!/usr/bin/env bash
# Matching cost of a fixed nightly batch against indexes of increasing size (BENCHMARKS.md,
# "Matching that reads only what it needs").
#
#   FIXED="a.warc b.warc" tools/bench_nightly.sh OUT CORPUS "2 5 10" [MEM=512MiB]
#
# CORPUS is an ndd-gen WARC corpus (batch-01.warc ..); FIXED the fixed batches (default: the
# corpus's last batch). The index is built from batches 1, 2, ... (resuming after the
# base-N.json files already in OUT) and, each time it holds the number of batches of the
# list, each fixed batch is ingested into a copy of it (hard links for the immutable segment
# and SST files, real copies of everything else) in each of MODES (default all three; a FIXED
# entry FILE@m1,m2 names its own):
#   before     --matching join, NDD_KEY_FILTER=0 (readers ignore the key filters: the old join)
#   join       --matching join with the key filters
#   auto       --matching auto (the cost model picks probe or join)
#   one-set    --matching join, NDD_PER_SEGMENT=0 (one absent-first probe set for all segments)
#   main-join, main-auto   join / auto with the binary $MAIN_BIN (e.g. a copy of main's build:
#              a before/after comparison on the same index copies, at the same moment)
# with the index's pages evicted from the page cache first (posix_fadvise DONTNEED on every
# file: drop_caches needs a privilege the benchmark machine does not grant). One TSV row per
# run: batches in the index, docs, mode, matching used, matching s (stage), ingest wall s,
# user+sys CPU s, blocks read, keys filtered, file-system input MiB, pairs, documents with no
# old probe (absent-first), documents with no old lookup and (key, old segment) lookups
# (per-segment probes), old segments' blocks read, load average.
set -euo pipefail
OUT=$1; CORPUS=$2; SIZES=$3; MEM=${4:-512MiB}
BIN=${BIN:-target/release}
mkdir -p "$OUT"
FIXED=${FIXED:-$(ls "$CORPUS"/batch-*.warc | sort | tail -1)}
MODES=${MODES:-before join auto}
IDX=$OUT/idx
evict() { python3 - "$1" <<'PY'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        try:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
        except OSError:
            pass
PY
}
. "$(dirname "$0")/index_copy.sh"   # copy_index SRC DST
summary() { python3 - "$1" <<'PY'
import json, sys
s = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and "stage_seconds" in d:
        s = d
m = s.get("matching_stats") or {}
print("\t".join(str(x) for x in [m.get("matching", "?"), round(s["stage_seconds"]["matching"], 2)]), end="\t")
print("\t".join(str(x) for x in [m.get("blocks_read", 0), m.get("keys_filtered", 0), s.get("near_duplicate_pairs", "?"), m.get("docs_absent", "-"), m.get("docs_no_old", "-"), m.get("old_lookups", "-"), m.get("old_blocks_read", "-")]))
PY
}
echo -e "batches\tdocs\tbatch\tmode\tmatching\tmatching_s\tingest_s\tcpu_s\tblocks_read\tkeys_filtered\tfs_in_MiB\tpairs\tdocs_absent\tdocs_no_old\told_lookups\told_blocks_read\tload"
have=$( (ls "$OUT"/base-*.json 2>/dev/null || true) | wc -l)
for want in $SIZES; do
  while [ "$have" -lt "$want" ]; do
    have=$((have + 1))
    "$BIN/ndd-index" ingest --quiet --json --mem "$MEM" --index "$IDX" \
      "$(printf '%s/batch-%02d.warc' "$CORPUS" "$have")" > "$OUT/base-$have.json"
  done
  docs=$(cat "$OUT"/base-*.json | grep -o '"added":[0-9]*' | awk -F: '{s+=$NF} END {print s}')
  for spec in $FIXED; do
  last=${spec%@*}; modes=$MODES; [ "$spec" != "$last" ] && modes=${spec#*@}
  fb=$(basename "$last" .warc)
  for mode in ${modes//,/ }; do
    R=$OUT/run-$want-$fb-$mode; copy_index "$IDX" "$R"
    env=(); m=$mode; bin=$BIN/ndd-index
    case $mode in before) env=(NDD_KEY_FILTER=0); m=join;; one-set) env=(NDD_PER_SEGMENT=0); m=join;;
      main-*) bin=$MAIN_BIN; m=${mode#main-};; esac
    evict "$R"; load=$(cut -d' ' -f1-3 /proc/loadavg)
    env "${env[@]}" /usr/bin/time -v "$bin" ingest --quiet --json --mem "$MEM" \
      --matching "$m" --report "$R.report" --index "$R" "$last" > "$R.json" 2> "$R.time"
    j=$R.json; t=$R.time
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; printf "%.1f", s}' "$t")
    cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {printf "%.1f", s}' "$t")
    fsin=$(awk -F': ' '/File system inputs/ {printf "%.0f", $2*512/1048576}' "$t")
    IFS=$'\t' read -r used ms blocks filtered pairs absent noold oldlk oldbl < <(summary "$j")
    echo -e "$want\t$docs\t$fb\t$mode\t$used\t$ms\t$wall\t$cpu\t$blocks\t$filtered\t$fsin\t$pairs\t$absent\t$noold\t$oldlk\t$oldbl\t$load"
    # The batch's outcome for a cmp across modes: per-document report (best near duplicate,
    # resemblance, cluster) and the index's clusters after it.
    sort "$R.report" > "$R.report.sorted" && rm -f "$R.report"
    "$BIN/ndd-index" clusters --index "$R" | sort > "$R.clusters"
    rm -rf "$R"
  done
  done
done
