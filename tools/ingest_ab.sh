#!/usr/bin/env bash
# Ingest of one directory into a new index, then `pairs` at 0.8, with several ndd-index
# binaries in turn (BENCHMARKS.md, "The prefix self-join without a candidate array"): one
# line per run (process walls from /usr/bin/time, the ingest's stage walls, the pairs'
# count), then each binary's medians. Binaries are named by their directory.
# Usage: D=DIR tools/ingest_ab.sh ROUNDS BIN_A [BIN_B ...]
set -eu
N=$1; shift
D=${D:?D=directory of pages to ingest}
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
for _ in $(seq "$N"); do
  for b in "$@"; do
    tag=$(basename "$(dirname "$b")")
    rm -rf "$OUT/ix"
    /usr/bin/time -f "%e %U %S" -o "$OUT/t.txt" "$b" ingest --quiet --json --index "$OUT/ix" \
      --shingle-words 5 "$D" > "$OUT/j.json"
    /usr/bin/time -f "%e" -o "$OUT/p.txt" "$b" pairs --index "$OUT/ix" --threshold 0.8 \
      > "$OUT/pairs.txt"
    python3 - "$OUT" "$tag" <<'PY'
import json, sys
o, tag = sys.argv[1], sys.argv[2]
d = json.load(open(o + "/j.json"))
w, u, s = open(o + "/t.txt").read().split()[-3:]
p = open(o + "/p.txt").read().split()[-1]
st = d["stage_seconds"]
n = sum(1 for _ in open(o + "/pairs.txt"))
print(f"{tag} wall {w} u {u} s {s} pairs_wall {p} read {st['read']:.3f} "
      f"post {st['postings']:.3f} match {st['matching']:.3f} pub {st['publish']:.3f} npairs {n}")
PY
  done
done | tee "$OUT/all.txt"
python3 - "$OUT/all.txt" <<'PY'
import collections, statistics as S, sys
r = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    for i in range(1, len(f) - 1, 2):
        r[f[0]][f[i]].append(float(f[i + 1]))
for tag, m in r.items():
    tot = S.median([a + b for a, b in zip(m["wall"], m["pairs_wall"])])
    print(tag, " ".join(f"{k}={S.median(v):.3f}" for k, v in m.items() if k != "npairs"),
          f"ingest+pairs={tot:.3f}")
PY
