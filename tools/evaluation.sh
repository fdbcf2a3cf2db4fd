#!/usr/bin/env bash
# Regenerates the tables of EVALUATION.md: every method scored with `ndd-index eval` (and, where
# eval has no knob, `ndd-index pairs` scored against the same truth) on the shared llvm-docs
# corpus (exact 5-word-shingle Jaccard truth) and on ndd-gen's planted clusters.
#
#   tools/evaluation.sh BIN_DIR OUT_DIR > tables.md
#
# BIN_DIR holds the release ndd-index and ndd-gen; OUT_DIR (new or empty) receives the
# extracted corpus, the indexes and every raw JSON/pair file. Markdown goes to stdout,
# progress to stderr. NDD_CORPUS overrides the corpus folder (default: ../shared/corpus/
# llvm-docs next to the repository). Needs bash, tar with zstd, python3 (formatting only).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BIN_DIR OUT_DIR" >&2
    exit 2
fi
BIN=$(cd "$1" && pwd)
OUT=$2
NDD="$BIN/ndd-index"
GEN="$BIN/ndd-gen"
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS=${NDD_CORPUS:-$HERE/../../shared/corpus/llvm-docs}
CORPUS=$(cd "$CORPUS" && pwd)
TRUTH=$CORPUS/truth.tsv
MANIFEST=$CORPUS/manifest.tsv
for f in "$NDD" "$GEN" "$TRUTH" "$MANIFEST" "$CORPUS/docs.tar.zst"; do
    [ -e "$f" ] || { echo "missing $f" >&2; exit 2; }
done
mkdir -p "$OUT"
if [ -n "$(ls -A "$OUT")" ]; then
    echo "$OUT must be new or empty" >&2
    exit 2
fi
OUT=$(cd "$OUT" && pwd)
FMT="$HERE/evaluation_fmt.py"
START=$(date +%s.%N)
log() { echo "[$(date +%T)] $*" >&2; }
# SECTIONS="4 5 8" runs only those tables (6 and 7 need section 1: run them with it).
SECTIONS=" ${SECTIONS:-1 2 3 4 5 6 7 8} "
want() { [[ $SECTIONS == *" $1 "* ]]; }

# Keys must match the manifest's paths (docs/<pkg>/...), so the folder holding docs/ is ingested.
log "extracting llvm-docs"
mkdir -p "$OUT/llvm"
tar --zstd -xf "$CORPUS/docs.tar.zst" -C "$OUT/llvm"

echo "# ndd-index evaluation tables"
echo
echo "Command: \`tools/evaluation.sh BIN_DIR OUT_DIR\` ($(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?'))."
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr)."
echo

# ---- 1. Sampling (Waterloo thesis) ------------------------------------------------------------
if want 1; then
log "1. sampling"
mkdir -p "$OUT/t1"
SAMPLES="all mod:2 mod:4 mod:8 mod:16 mod:32 mod:64 mod:128 mod:256 mod:512 bottomk:400 bottomk:200 bottomk:100 minhash:84"
for s in $SAMPLES; do
    n=${s//:/-}
    log "  --sample $s"
    "$NDD" ingest --index "$OUT/t1/idx-$n" --sample "$s" --methods shingle --json "$OUT/llvm" \
        > "$OUT/t1/$n.ingest.json"
    "$NDD" stats --index "$OUT/t1/idx-$n" --json > "$OUT/t1/$n.stats.json"
    "$NDD" eval --index "$OUT/t1/idx-$n" --truth "$TRUTH" --manifest "$MANIFEST" \
        --method shingle --thresholds 0.8,0.5 --json > "$OUT/t1/$n.eval.json"
    [ "$n" = all ] || rm -rf "$OUT/t1/idx-$n"
done
python3 "$FMT" sampling "$OUT/t1" $SAMPLES
fi

# ---- 2. Shingle width (Williams & Giles) on planted clusters ----------------------------------
if want 2; then
log "2. shingle w"
mkdir -p "$OUT/t2"
"$GEN" --out "$OUT/gen" --docs 2000 --seed 1 --format warc --quiet
for w in 5 8 10; do
    log "  w=$w"
    "$NDD" ingest --index "$OUT/t2/idx-$w" --shingle-words "$w" --methods shingle --json \
        "$OUT/gen/batch-01.warc" > "$OUT/t2/$w.ingest.json"
    "$NDD" eval --index "$OUT/t2/idx-$w" --truth "$OUT/gen/truth-clusters.tsv" \
        --method shingle --thresholds 0.5,0.8 --json > "$OUT/t2/$w.eval.json"
    rm -rf "$OUT/t2/idx-$w"
done
python3 "$FMT" shingle-w "$OUT/t2" "$OUT/gen/gen.json" 5 8 10
fi

# ---- 3. simhash k sweep (Williams & Giles / Manku) on planted clusters, word simhashes (the
if want 3; then
# old default; the new default and the llvm/rust tables: tools/eval_simhash_imatch.sh) -------
log "3. simhash k"
mkdir -p "$OUT/t3"
# blocks = k + 3 where the permuted tables (C(blocks, k)) fit the format's 64; else fewer.
KB="1:4 2:5 3:6 4:7 5:8 6:8"
for kb in $KB; do
    k=${kb%:*}
    b=${kb#*:}
    log "  k=$k blocks=$b"
    "$NDD" ingest --index "$OUT/t3/idx-$k" --methods simhash --simhash-features words --simhash-k "$k" --simhash-blocks "$b" \
        --json "$OUT/gen/batch-01.warc" > "$OUT/t3/$k.ingest.json"
    "$NDD" eval --index "$OUT/t3/idx-$k" --truth "$OUT/gen/truth-clusters.tsv" \
        --method simhash --thresholds 0.5 --json > "$OUT/t3/$k.eval.json"
    rm -rf "$OUT/t3/idx-$k"
done
python3 "$FMT" simhash-k "$OUT/t3" $KB
fi

# ---- 4. Henzinger: B (dsc-ss) vs C (384-bit) vs combined, llvm --------------------------------
if want 4; then
log "4. Henzinger"
mkdir -p "$OUT/t4"
# --site path:2: keys are docs/<package>/..., so each of the 5 doc packages is a site.
"$NDD" ingest --index "$OUT/t4/idx" --methods all --site path:2 --json "$OUT/llvm" \
    > "$OUT/t4/ingest.json"
"$NDD" eval --index "$OUT/t4/idx" --truth "$TRUTH" --manifest "$MANIFEST" --thresholds 0.8 \
    --plot "$OUT/t4/eval.svg" --json > "$OUT/t4/eval.json"
# combined at other C-similarity thresholds (eval uses the default 355/384 only)
CS="0.85 0.90 0.95 0.98"
for c in $CS; do
    "$NDD" pairs --index "$OUT/t4/idx" --method combined --threshold "$c" > "$OUT/t4/combined-$c.tsv"
    "$NDD" pairs --index "$OUT/t4/idx" --method c-sim --threshold "$c" > "$OUT/t4/csim-$c.tsv"
done
python3 "$FMT" henzinger "$OUT/t4" "$TRUTH" "$MANIFEST" $CS
python3 "$FMT" henzinger-sites "Table 4b. llvm-docs (--site path:2), T = 0.8" "$OUT/t4/eval.json"
# A generated crawl of 20 sites: 100 boilerplate words per site, 200-word pages, 30% of the
# variants mirrored on another host, 1% word edits; truth = the planted clusters.
"$GEN" --out "$OUT/t4/gen" --docs 5000 --sites 20 --format warc --words 200 --nav-words 100 \
    --cross-site 0.3 --edit-rate 0.01 --seed 7 --quiet
"$NDD" ingest --index "$OUT/t4/idx-gen" --methods all --json "$OUT/t4/gen/batch-01.warc" \
    > "$OUT/t4/ingest-gen.json"
"$NDD" eval --index "$OUT/t4/idx-gen" --truth "$OUT/t4/gen/truth-clusters.tsv" --thresholds 0.8 \
    --plot "$OUT/t4/eval-gen.svg" --json > "$OUT/t4/eval-gen.json"
python3 "$FMT" henzinger-sites "Table 4c. ndd-gen crawl of 20 sites" "$OUT/t4/eval-gen.json"
fi

# ---- 5. I-Match protocol (Chowdhury et al.) ----------------------------------------------------
if want 5; then
log "5. I-Match protocol"
mkdir -p "$OUT/t5"
RATES="0.10 0.20"
FILTERS="idf-l-10 idf-l-30 idf-l-60 doc-l-10 doc-l-30 doc-l-60"
for r in $RATES; do
    log "  edit rate $r"
    "$GEN" --out "$OUT/t5/gen-$r" --docs 300 --seed 1 --imatch-protocol 10,10 --edit-rate "$r" \
        --format warc --quiet
    "$NDD" ingest --index "$OUT/t5/idx-$r" --methods all --json "$OUT/t5/gen-$r/batch-01.warc" \
        > "$OUT/t5/$r.ingest.json"
    "$NDD" eval --index "$OUT/t5/idx-$r" --truth "$OUT/t5/gen-$r/truth-clusters.tsv" \
        --thresholds 0.5,0.8 --plot "$OUT/t5/$r.svg" --json > "$OUT/t5/$r.eval.json"
    rm -rf "$OUT/t5/idx-$r"
    for f in $FILTERS; do
        "$NDD" ingest --index "$OUT/t5/idx-$r-$f" --methods imatch --imatch-filter "$f" --json \
            "$OUT/t5/gen-$r/batch-01.warc" > /dev/null
        "$NDD" eval --index "$OUT/t5/idx-$r-$f" --truth "$OUT/t5/gen-$r/truth-clusters.tsv" \
            --method imatch --json > "$OUT/t5/$r-$f.eval.json"
        rm -rf "$OUT/t5/idx-$r-$f"
    done
done
python3 "$FMT" imatch "$OUT/t5" $RATES
python3 "$FMT" imatch-filters "$OUT/t5" "$RATES" $FILTERS
fi

# ---- 6. Commonality threshold (--max-df), llvm, T = 0.5 ----------------------------------------
if want 6; then
log "6. max-df"
mkdir -p "$OUT/t6"
DFS="0 1000 300 100 30 10"
for n in $DFS; do
    log "  --max-df $n"
    "$NDD" pairs --index "$OUT/t1/idx-all" --threshold 0.5 --max-df "$n" --stats \
        > "$OUT/t6/pairs-$n.tsv" 2> "$OUT/t6/stats-$n.json"
done
python3 "$FMT" maxdf "$OUT/t6" "$TRUTH" "$MANIFEST" $DFS
fi

# ---- 7. Adaptive sampling and precision by size group (Ye et al.), llvm, T = 0.8 --------------
if want 7; then
log "7. adaptive sampling"
mkdir -p "$OUT/t7"
"$NDD" tune --index "$OUT/t1/idx-all" --truth "$TRUTH" --manifest "$MANIFEST" \
    --precision-target 0.95 --json > "$OUT/t7/tune.json"
TUNED=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['table'])" "$OUT/t7/tune.json")
for run in default tuned; do
    if [ "$run" = default ]; then G=(); else G=(--size-groups "$TUNED"); fi
    "$NDD" ingest --index "$OUT/t7/idx-$run" --sample adaptive "${G[@]}" --methods shingle \
        --json "$OUT/llvm" > /dev/null
    "$NDD" stats --index "$OUT/t7/idx-$run" --json > "$OUT/t7/$run.stats.json"
    "$NDD" eval --index "$OUT/t7/idx-$run" --truth "$TRUTH" --manifest "$MANIFEST" \
        --method shingle --thresholds 0.8 --json > "$OUT/t7/$run.eval.json"
    rm -rf "$OUT/t7/idx-$run"
done
python3 "$FMT" adaptive "$OUT/t7" "$OUT/t1" all mod:4 mod:16
fi

# ---- 8. tf- vs idf-weighted simhash, llvm, T = 0.8 ---------------------------------------------
if want 8; then
log "8. idf simhash"
mkdir -p "$OUT/t8"
KS="3:6 6:8 10:11"
for kb in $KS; do
    for w in tf idf; do
        "$NDD" ingest --index "$OUT/t8/idx" --methods simhash --simhash-features words --simhash-k "${kb%%:*}" \
            --simhash-blocks "${kb##*:}" --simhash-weight "$w" --json "$OUT/llvm" > /dev/null
        "$NDD" eval --index "$OUT/t8/idx" --truth "$TRUTH" --manifest "$MANIFEST" \
            --method simhash --thresholds 0.8 --json > "$OUT/t8/$w-$kb.eval.json"
        rm -rf "$OUT/t8/idx"
    done
done
# the default for comparison: shingle features (tf), k = 10, verified at 0.8
"$NDD" ingest --index "$OUT/t8/idx" --methods simhash --json "$OUT/llvm" > /dev/null
"$NDD" eval --index "$OUT/t8/idx" --truth "$TRUTH" --manifest "$MANIFEST" \
    --method simhash --thresholds 0.8 --json > "$OUT/t8/default.eval.json"
rm -rf "$OUT/t8/idx"
python3 "$FMT" idf-simhash "$OUT/t8" $KS
fi

END=$(date +%s.%N)
echo "Whole script: $(python3 -c "print(f'{$END - $START:.0f}')") s."
log "done in $(python3 -c "print(f'{$END - $START:.0f}')") s"
