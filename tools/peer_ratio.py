#!/usr/bin/env python3
"""Issue 14's "HTML to pairs" ratio from `make peer-bench` result folders.

    tools/peer_ratio.py RESULTS_DIR [RESULTS_DIR ...]

Each RESULTS_DIR is an `OUT` of peer-bench's run_all.sh; every `*/results.json` under it is
read. For each, the fastest pipeline in Python, selectolax + rensa, is timed as peer-bench
measures it: selectolax's parse (prepare.json's `canonicalize`) + reading the archive
(`read_decompress`) + rensa's shingling, build and query walls; ndd-index as `ingest` +
`pairs` (its row's build and query walls). Printed per file: corpus, threshold, both sides in
seconds, their ratio (the target is 8x), and both sides' precision and recall.

Run peer-bench with `FORCE_PREPARE=1` so every run measures selectolax's parse again, and
`LIBS=rensa,ndd-index` to time only the two sides compared.
"""
import json
import sys
from pathlib import Path


def side(rows, lib):
    for r in rows:
        if r.get("library") == lib and "error" not in r:
            return r
    return None


def ratio(path):
    res = json.loads(path.read_text())
    t = res["prepare"]["timing_s"]
    rensa = side(res["results"], "rensa")
    ndd = side(res["results"], "ndd-index")
    if rensa is None or ndd is None:
        return None
    peers = (t["canonicalize"] + t["read_decompress"] + rensa["shingle_wall_s"]
             + rensa["build_wall_s"] + rensa["query_wall_s"])
    ours = ndd["build_wall_s"] + ndd["query_wall_s"]
    pr = lambda r: "P %.4f R %.4f" % (r["score"]["precision"], r["score"]["recall"]) \
        if isinstance(r.get("score"), dict) and "precision" in r["score"] else "P/R -"
    return ("%s\tT=%s\tndd-index %.2f s (%s)\tselectolax+rensa %.2f s (%s)\t%.1fx"
            % (res["corpus"], res["threshold"], ours, pr(ndd), peers, pr(rensa), peers / ours))


def main(dirs):
    found = False
    for d in dirs:
        for f in sorted(Path(d).glob("*/results.json")):
            line = ratio(f)
            if line:
                found = True
                print("%s\t%s" % (d, line))
    if not found:
        sys.exit("peer_ratio: no results.json with both rensa and ndd-index under " + " ".join(dirs))


if __name__ == "__main__":
    main(sys.argv[1:])
