#!/usr/bin/env bash
# EVALUATION.md sections 3, 5 and 8 (issue 15): simhash settings on real HTML against exact
# 5-word-shingle Jaccard >= 0.8, and I-Match settings on Chowdhury et al.'s protocol.
#
#   tools/eval_simhash_imatch.sh BIN_DIR OUT_DIR > tables.md
#
# Corpora: the shared llvm-docs (its exact truth.tsv) and, when the rustup documentation is
# installed ($RUST_DOCS, default ~/.rustup/toolchains), the book, reference, cargo,
# edition-guide, rustc, std::collections and std::io pages of the stable and nightly
# toolchains; their truth is `ndd-index pairs --threshold 0.5` over a `--sample all` shingle
# index (exact: Table 1 shows P = R = 1 for `all` against the llvm truth).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd); NDD="$BIN/ndd-index"; GEN="$BIN/ndd-gen"
OUT=$2; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS=${NDD_CORPUS:-$HERE/../../shared/corpus/llvm-docs}
RUST_DOCS=${RUST_DOCS:-$HOME/.rustup/toolchains}
log() { echo "[$(date +%T)] $*" >&2; }

: > "$OUT/index.tsv"   # table, corpus or edit rate, setting, JSON file (for tools/eval_charts.py)
echo "Machine: $(nproc) cores, load $(uptime | sed 's/.*load average: //'), commit $(git -C "$HERE" rev-parse --short HEAD)."
echo

# ---- corpora ---------------------------------------------------------------------------------
if [ ! -d "$OUT/llvm/docs" ]; then
    log "extracting llvm-docs"; mkdir -p "$OUT/llvm"
    tar --zstd -xf "$CORPUS/docs.tar.zst" -C "$OUT/llvm"
fi
CORPORA="llvm"
if [ -d "$RUST_DOCS/stable-x86_64-unknown-linux-gnu" ] && [ -d "$RUST_DOCS/nightly-x86_64-unknown-linux-gnu" ]; then
    if [ ! -f "$OUT/rust.truth.tsv" ]; then
        log "collecting the rust docs"
        rm -rf "$OUT/rust"
        for tc in stable nightly; do
            src=$RUST_DOCS/$tc-x86_64-unknown-linux-gnu/share/doc/rust/html
            for d in book reference cargo edition-guide rustc std/collections std/io; do
                [ -d "$src/$d" ] || continue
                (cd "$src" && find "$d" -name '*.html' -size -2M) | while read -r f; do
                    mkdir -p "$OUT/rust/$tc/$(dirname "$f")"; cp "$src/$f" "$OUT/rust/$tc/$f"
                done
            done
        done
        "$NDD" ingest --quiet --index "$OUT/rust-truth-idx" --methods shingle "$OUT/rust" > /dev/null
        { printf 'key_a\tkey_b\tjaccard\n'; "$NDD" pairs --index "$OUT/rust-truth-idx" --threshold 0.5; } > "$OUT/rust.truth.tsv"
        rm -rf "$OUT/rust-truth-idx"
    fi
    CORPORA="llvm rust"
fi
truth_args() {
    case $1 in
        llvm) echo "--truth $CORPUS/truth.tsv --manifest $CORPUS/manifest.tsv" ;;
        rust) echo "--truth $OUT/rust.truth.tsv" ;;
    esac
}

# ---- 3. simhash settings ----------------------------------------------------------------------
# name | ingest options
SETTINGS=(
  "words, tf, k=3 (old default)|--simhash-features words"
  "words, tf, k=6|--simhash-features words --simhash-k 6 --simhash-blocks 8"
  "words, tf, k=10|--simhash-features words --simhash-k 10 --simhash-blocks 11"
  "words, idf, k=3|--simhash-weight idf"
  "words, idf, k=6|--simhash-weight idf --simhash-k 6 --simhash-blocks 8"
  "words, tf, boilerplate 20%, k=3|--simhash-features words --simhash-boilerplate 20"
  "shingles, k=3|--simhash-features shingles --simhash-verify none --simhash-k 3 --simhash-blocks 6"
  "shingles, k=6|--simhash-features shingles --simhash-verify none --simhash-k 6 --simhash-blocks 8"
  "shingles, k=8|--simhash-features shingles --simhash-verify none --simhash-k 8 --simhash-blocks 10"
  "shingles, k=10|--simhash-features shingles --simhash-verify none --simhash-k 10 --simhash-blocks 11"
  "shingles, k=12|--simhash-features shingles --simhash-verify none --simhash-k 12 --simhash-blocks 13"
  "shingles, boilerplate 50%, k=10|--simhash-verify none --simhash-boilerplate 50"
  "shingles, boilerplate 20%, k=3|--simhash-verify none --simhash-boilerplate 20 --simhash-k 3 --simhash-blocks 6"
  "shingles, boilerplate 20%, k=10|--simhash-verify none --simhash-boilerplate 20"
  "shingles, k=9, verified 0.8|--simhash-k 9 --simhash-blocks 10"
  "**shingles, k=10, verified 0.8 (new default)**|"
  "shingles, k=12, verified 0.8|--simhash-k 12 --simhash-blocks 13"
)
for c in $CORPORA; do
    echo "**Table 3-$c. simhash settings, $c, truth = exact Jaccard >= 0.8**"
    echo
    echo "| setting | pairs | true pairs | P | R | F1 | ingest s | pairs s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    i=0
    for s in "${SETTINGS[@]}"; do
        name=${s%%|*}; opts=${s#*|}; i=$((i + 1))
        log "3 $c: $name"
        idx="$OUT/t3-$c-$i"; rm -rf "$idx"
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        "$NDD" ingest --quiet --index "$idx" --methods simhash $opts "$OUT/$c" > /dev/null
        t1=$(date +%s.%N)
        "$NDD" pairs --index "$idx" --method simhash > "$OUT/t3-$c-$i.pairs"
        t2=$(date +%s.%N)
        # shellcheck disable=SC2046
        "$NDD" eval --index "$idx" $(truth_args "$c") --method simhash --thresholds 0.8 --json > "$OUT/t3-$c-$i.json"
        printf '3\t%s\t%s\tt3-%s-%s.json\n' "$c" "$name" "$c" "$i" >> "$OUT/index.tsv"
        python3 - "$OUT/t3-$c-$i.json" "$name" "$t0" "$t1" "$t2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
t0, t1, t2 = map(float, sys.argv[3:6])
print(f"| {sys.argv[2]} | {r['found']:,} | {r['true_positives']:,} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | {t1 - t0:.1f} | {t2 - t1:.1f} |")
EOF
        rm -rf "$idx"
    done
    echo
done

# ---- 5. I-Match protocol ----------------------------------------------------------------------
IM=(
  "imatch idf-l-10 (as published)|imatch|--methods imatch"
  "imatch doc-l-10 = their DOC-L-90 (as published)|imatch|--methods imatch --imatch-filter doc-l-10"
  "imatch idf-l-10, 10 lexicons, 30% dropped|imatch|--methods imatch --imatch-lexicons 10:30"
  "imatch idf-l-10, 20 lexicons, 80% dropped|imatch|--methods imatch --imatch-lexicons 20:80"
  "imatch idf-l-10, 40 lexicons, 90% dropped|imatch|--methods imatch --imatch-lexicons 40:90"
  "imatch idf-l-30, 40 lexicons, 90% dropped|imatch|--methods imatch --imatch-lexicons 40:90 --imatch-filter idf-l-30"
  "imatch idf-l-10, 64 lexicons, 95% dropped|imatch|--methods imatch --imatch-lexicons 64:95"
  "simhash words k=3 (old default)|simhash|--methods simhash --simhash-features words"
  "simhash shingles k=10 verified 0.8 (new default)|simhash|--methods simhash"
)
echo "**Table 5. I-Match protocol** (ndd-gen --imatch-protocol 10,10 --docs 300 --seed 1; found = Chowdhury et al.'s Table III share of documents clustered with their own original's; largest = our stricter largest-cluster ratio)"
echo
echo "| edit rate | method | found (Table III def.) | largest-cluster ratio | clusters per original | pairs | P | R |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for r in 0.005 0.01 0.02 0.05 0.10 0.20; do
    g="$OUT/gen-$r"
    [ -d "$g" ] || "$GEN" --out "$g" --docs 300 --seed 1 --imatch-protocol 10,10 --edit-rate "$r" --format warc --quiet
    for s in "${IM[@]}"; do
        name=${s%%|*}; rest=${s#*|}; m=${rest%%|*}; opts=${rest#*|}
        case $r in 0.10|0.20) ;; *) case $name in *published*) ;; *) continue ;; esac ;; esac
        log "5 $r: $name"
        idx="$OUT/t5-idx"; rm -rf "$idx"
        # shellcheck disable=SC2086
        "$NDD" ingest --quiet --index "$idx" $opts "$g/batch-01.warc" > /dev/null
        "$NDD" eval --index "$idx" --truth "$g/truth-clusters.tsv" --method "$m" --json > "$OUT/t5-$r-${name//[^a-z0-9]/_}.json"
        printf '5\t%s\t%s\tt5-%s-%s.json\n' "$r" "$name" "$r" "${name//[^a-z0-9]/_}" >> "$OUT/index.tsv"
        python3 - "$OUT/t5-$r-${name//[^a-z0-9]/_}.json" "$name" "$r" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
print(f"| {sys.argv[3]} | {sys.argv[2]} | {r['found_ratio_docs']:.3f} | {r['found_ratio']:.3f} | {r['clusters_per_true_cluster']:.2f} | {r['found']:,} | {r['precision']:.3f} | {r['recall']:.3f} |")
EOF
        rm -rf "$idx"
    done
done
echo

# ---- 5c. randomized lexicons on llvm (pair precision against the Jaccard truth) ---------------
echo "**Table 5c. I-Match on llvm-docs against exact Jaccard** (pairs = documents sharing a signature)"
echo
echo "| setting | T | pairs | true pairs | P | R |"
echo "|---|---:|---:|---:|---:|---:|"
for s in "idf-l-10, 1 lexicon|" "idf-l-10, 40 lexicons, 90% dropped|--imatch-lexicons 40:90" "idf-l-30, 40 lexicons, 90% dropped|--imatch-lexicons 40:90 --imatch-filter idf-l-30"; do
    name=${s%%|*}; opts=${s#*|}
    log "5c: $name"
    idx="$OUT/t5c-idx"; rm -rf "$idx"
    # shellcheck disable=SC2086
    "$NDD" ingest --quiet --index "$idx" --methods imatch $opts "$OUT/llvm" > /dev/null
    "$NDD" eval --index "$idx" --truth "$CORPUS/truth.tsv" --manifest "$CORPUS/manifest.tsv" --method imatch --thresholds 0.8,0.5 --json > "$OUT/t5c.json"
    python3 - "$OUT/t5c.json" "$name" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(f"| {sys.argv[2]} | {r['threshold']} | {r['found']:,} | {r['true_positives']:,} | {r['precision']:.3f} | {r['recall']:.3f} |")
EOF
    rm -rf "$idx"
done
