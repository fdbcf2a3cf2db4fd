#!/usr/bin/env bash
# The README's demo: generate a small web-like corpus with planted near-duplicates in two
# nightly batches, ingest them one after the other, query one page, print the clusters.
# Usage: tools/demo.sh NDD_INDEX_BIN NDD_GEN_BIN [WORK_DIR]
set -eu  # no pipefail: `| head` closes pipes on purpose
BIN="$1"; GEN="$2"
WORK="${3:-$(mktemp -d "${TMPDIR:-/tmp}/ndd-demo.XXXXXX")}"
IDX="$WORK/index"
rm -rf "$IDX"
step() { printf '\n== %s\n' "$*"; }

step "generating 2,000 documents in 2 nightly batches under $WORK/corpus"
"$GEN" --out "$WORK/corpus" --docs 2000 --batches 2 --seed 7 --edit-rate 0.03 --quiet
ls "$WORK/corpus"

step "night 1: ndd-index ingest --batch night-1"
"$BIN" ingest --index "$IDX" --batch night-1 --report "$WORK/night-1.jsonl" "$WORK/corpus/batch-01"

step "night 2: ndd-index ingest --batch night-2 (new pages are matched against night 1)"
"$BIN" ingest --index "$IDX" --batch night-2 --report "$WORK/night-2.jsonl" "$WORK/corpus/batch-02"
echo "report lines of night 2 that found a near-duplicate (first 3):"
grep '"near_duplicate"' "$WORK/night-2.jsonl" | head -n 3

step "re-running night 2 is safe: nothing changes"
"$BIN" ingest --index "$IDX" --batch night-2 "$WORK/corpus/batch-02"

step "query a page that is not indexed: a copy of an indexed page with one paragraph dropped"
page=$(grep -l . -r "$WORK/corpus/batch-02" --include='*.html' | sort | head -n 1)
awk '/<p>/ && !done { done = 1; next } { print }' "$page" > "$WORK/edited-page.html"
echo "(edited copy of ${page#$WORK/corpus/})"
"$BIN" query --index "$IDX" --threshold 0.5 --top 5 "$WORK/edited-page.html"

step "clusters (first 12 lines of cluster_id<TAB>key)"
"$BIN" clusters --index "$IDX" | head -n 12

step "pairs at resemblance >= 0.9 (first 5 of $("$BIN" pairs --index "$IDX" --threshold 0.9 | wc -l))"
"$BIN" pairs --index "$IDX" --threshold 0.9 | head -n 5

step "stats"
"$BIN" stats --index "$IDX"
echo
echo "demo done; files in $WORK"
