#!/usr/bin/env bash
# Accuracy, size and speed of sampling settings on the shared llvm-docs corpus: for each
# setting, ingest the whole corpus (one batch), list pairs at T, and score them with the
# peer bench's scorer against the exact truth. Prints one Markdown table row per setting.
# Usage: tools/eval_llvm.sh NDD_INDEX_BIN [T=0.8] [SETTINGS...]
#   e.g. tools/eval_llvm.sh target/release/ndd-index 0.8 all mod:4 bottomk:256 minhash:84
set -eu
BIN="$(realpath "$1")"; T="${2:-0.8}"; shift $(( $# >= 2 ? 2 : $# ))
SETTINGS=("$@"); [ ${#SETTINGS[@]} -gt 0 ] || SETTINGS=(all mod:2 mod:4 mod:8 bottomk:400 bottomk:200 minhash:84)
HERE="$(cd "$(dirname "$0")/.." && pwd)"
CORPUS="$HERE/../shared/corpus/llvm-docs"
SCORE="$HERE/../shared/peer-bench/score_pairs.py"
WORK="${WORK:-${CARGO_TARGET_DIR:-$HERE/target}/eval-llvm}"
mkdir -p "$WORK"
if [ ! -f "$WORK/docs.complete" ]; then
  rm -rf "$WORK/docs"; mkdir -p "$WORK/docs"
  tar --zstd -xf "$CORPUS/docs.tar.zst" -C "$WORK/docs"
  touch "$WORK/docs.complete"
fi
TIME=/usr/bin/time; [ -x "$TIME" ] || TIME=""
echo "| sample | T | ingest s | pairs s | peak RSS MiB | index MiB | bytes/doc | pairs | precision | recall | F1 |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for s in "${SETTINGS[@]}"; do
  idx="$WORK/idx-${s//:/-}"; rm -rf "$idx"
  t0=$(date +%s.%N)
  ${TIME:+$TIME -f %M -o "$WORK/rss1"} "$BIN" ingest --quiet --index "$idx" --shingle-words 5 --sample "$s" "$WORK/docs" >/dev/null
  t1=$(date +%s.%N)
  ${TIME:+$TIME -f %M -o "$WORK/rss2"} "$BIN" pairs --index "$idx" --threshold "$T" > "$WORK/pairs.tsv"
  t2=$(date +%s.%N)
  rss=$(cat "$WORK/rss1" "$WORK/rss2" 2>/dev/null | sort -n | tail -1)
  stats=$("$BIN" stats --json --index "$idx")
  read -r total per <<<"$(python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["bytes"]["total"], round(s["bytes_per_document"]))' <<<"$stats")"
  python3 "$SCORE" "$WORK/pairs.tsv" "$CORPUS/manifest.tsv" "$CORPUS/truth.tsv" --threshold "$T" --json "$WORK/score.json" >/dev/null
  score=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("%.4f | %.4f | %.4f" % (s["precision"], s["recall"], s["f1"]))' "$WORK/score.json")
  printf '| %s | %s | %.2f | %.2f | %s | %.1f | %s | %s | %s |\n' "$s" "$T" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(( ${rss:-0} / 1024 ))" \
    "$(echo "$total / 1048576" | bc -l)" "$per" "$(wc -l < "$WORK/pairs.tsv")" "$score"
done
