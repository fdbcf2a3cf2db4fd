#!/usr/bin/env bash
# The Waterloo thesis's Table 3.1 layout on our own collection: the share of the "relevant"
# documents that are near-duplicates of another relevant document at 0.1 <= RR ... 0.9 <= RR,
# against the share of shingles kept (64-character shingles started at every word, as in the
# thesis; `--sample all`, then mod:2 ... mod:512). The collection is llvm-docs (3,228 pages),
# all of them relevant to one topic and listed by one run; the numbers are `ndd-index runs
# --qrels` output (`qrels.duplicated`).
#
#   tools/runs_sampling.sh BIN_DIR OUT_DIR > table.md
#
# BIN_DIR holds the release ndd-index; OUT_DIR (new or empty) receives the extracted corpus, the
# indexes and the JSON reports. NDD_CORPUS overrides the corpus folder. Needs tar with zstd, python3.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BIN_DIR OUT_DIR" >&2
    exit 2
fi
NDD="$(cd "$1" && pwd)/ndd-index"
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS=${NDD_CORPUS:-$HERE/../../shared/corpus/llvm-docs}
mkdir -p "$OUT"
[ -z "$(ls -A "$OUT")" ] || { echo "$OUT must be new or empty" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
log() { echo "[$(date +%T)] $*" >&2; }

log "extracting llvm-docs"
mkdir -p "$OUT/llvm"
tar --zstd -xf "$CORPUS/docs.tar.zst" -C "$OUT/llvm"
# One topic (1): every page is relevant and the run lists every page (keys: docs/<pkg>/...).
(cd "$OUT/llvm" && find docs -type f | LC_ALL=C sort) > "$OUT/keys.txt"
awk '{print "1 0 " $0 " 1"}' "$OUT/keys.txt" > "$OUT/qrels.txt"
awk '{print "1 Q0 " $0 " " NR " " (100000 - NR) " all-pages"}' "$OUT/keys.txt" > "$OUT/run.txt"

SAMPLES="all mod:2 mod:4 mod:8 mod:16 mod:32 mod:64 mod:128 mod:256 mod:512"
for s in $SAMPLES; do
    n=${s//:/-}
    log "--sample $s"
    "$NDD" ingest --index "$OUT/idx-$n" --shingle-chars 64 --sample "$s" --methods shingle \
        --json "$OUT/llvm" > "$OUT/$n.ingest.json"
    /usr/bin/time -f "%e s, %M KiB max RSS" -o "$OUT/$n.runs.time" \
        "$NDD" runs --index "$OUT/idx-$n" --qrels "$OUT/qrels.txt" --top 10 --json "$OUT/run.txt" \
        > "$OUT/$n.runs.json"
done

python3 - "$OUT" $SAMPLES <<'PY'
import json, os, sys
out, samples = sys.argv[1], sys.argv[2:]
load = lambda p: json.load(open(os.path.join(out, p)))
base = load("all.ingest.json")["features"]
cols = []
for s in samples:
    n = s.replace(":", "-")
    cols.append((s, load(n + ".ingest.json")["features"] / base, load(n + ".runs.json")["qrels"],
                 open(os.path.join(out, n + ".runs.time")).read().strip()))
rel = cols[0][2]["relevant"]
print("| ~% of shingles kept | " + " | ".join(f"{100 * k:.2f}% (`{s}`)" for s, k, _, _ in cols) + " |")
print("|---|" + "---:|" * len(cols))
for lvl in ["0.9", "0.8", "0.7", "0.6", "0.5", "0.4", "0.3", "0.2", "0.1"]:
    print(f"| {lvl} <= RR | " + " | ".join(f"{100 * q['duplicated'][lvl] / q['relevant']:.2f}%"
                                        for _, _, q, _ in cols) + " |")
print()
print(f"Relevant documents: {rel}. `runs` time and peak RSS per column: "
      + "; ".join(f"`{s}` {t}" for s, _, _, t in cols) + ".")
PY
