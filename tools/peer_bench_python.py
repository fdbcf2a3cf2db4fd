#!/usr/bin/env python3
"""ndd-index from Python in the peer benchmark (../shared/peer-bench), side by side with
datasketch, rensa and gaoya: same documents, same 5-word shingles, same scorer.

Usage (the peer-bench harness prepared the corpus: prepare.py CORPUS_DIR DATA_DIR):
  PYTHON_WITH_NDD tools/peer_bench_python.py --peer-bench ../shared/peer-bench \
      --corpus DATA_DIR --truth TRUTH --threshold 0.8 [--repeat 3] [--out bench-out/peer-python] \
      [--peers-results RESULTS_DIR/results.json]

Two rows, each a fresh worker subprocess (timed and measured like the peers' workers: GNU
time for peak RSS, build and query wall/CPU inside the worker):
  ndd-python        docs.jsonl's token stream (the truth's canonical words, what the peers
                    shingle) as (key, text) tuples, format="text": like for like with the peers.
  ndd-python-html   the extracted HTML files' bytes as (key, html) tuples: what a user does
                    (HTML parsing is inside build, as in the CLI row).
build = Index.create + ingest (one batch); query = pairs(T) streamed to the pairs file.
The pairs are scored by the harness's score_pairs.py. With --peers-results, the peers' rows
of that run (peers.py results.json, same corpus and T) are printed in the same table.
"""
import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path


def worker(args):
    import ndd_index

    sys.path.insert(0, args.peer_bench)
    from peers import Timer, maxrss_mib  # the peers' own timer and RSS reader

    info = {"library": args.worker}
    corpus = Path(args.corpus)
    docs = []
    with open(corpus / "docs.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            docs.append((d["key"], d["tokens"]))
    if args.worker == "ndd-python-html":
        ext = Path(json.loads((corpus / "prepare.json").read_text())["extracted_dir"])
        docs = [(k, (ext / k).read_bytes()) for k, _ in docs]
        fmt = "html"
    else:
        fmt = "text"
    info["docs_total"] = len(docs)
    info["rss_baseline_mib"] = maxrss_mib()
    idx_dir = Path(args.index)
    if idx_dir.exists():
        shutil.rmtree(idx_dir)
    with Timer() as tb:
        ix = ndd_index.Index.create(idx_dir, shingle_words=5)
        rep = ix.ingest(docs, batch="bench", format=fmt)
    del docs
    s = rep.summary
    info["docs_indexed"] = s["added"]
    info["ingest_errors"] = s["errors"]
    n = 0
    with Timer() as tq:
        with open(args.pairs_out, "w", encoding="utf-8") as out:
            for a, b, r in ix.pairs(args.threshold):
                out.write(f"{a}\t{b}\t{r:.6f}\n")
                n += 1
    ix.close()
    info.update(build_wall_s=tb.wall, build_cpu_s=tb.cpu, query_wall_s=tq.wall, query_cpu_s=tq.cpu,
                pairs_found=n, rss_peak_self_mib=maxrss_mib(), version=ndd_index.__version__,
                shingle_wall_s=0.0, shingle_cpu_s=0.0)
    info["index_bytes"] = sum(p.stat().st_size for p in idx_dir.rglob("*") if p.is_file())
    with open(args.json_out, "w") as f:
        json.dump(info, f, indent=1)


def parent(args):
    sys.path.insert(0, args.peer_bench)
    import score_pairs
    from peers import aggregate_scores, markdown, run_child, token_stream_check

    corpus = Path(args.corpus)
    prep = json.loads((corpus / "prepare.json").read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    key_to_id = score_pairs.load_manifest(prep["manifest"])
    truth = score_pairs.Truth(args.truth, len(key_to_id))
    positives = truth.positives(args.threshold)
    rows = []
    for lib in args.libs.split(","):
        runs = []
        for k in range(args.repeat):
            pairs = out / f"{lib}.pairs.tsv"
            wjson = out / f"{lib}.worker.json"
            load0 = os.getloadavg()[0]
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib, "--peer-bench",
                   args.peer_bench, "--corpus", str(corpus), "--threshold", str(args.threshold),
                   "--pairs-out", str(pairs), "--json-out", str(wjson), "--index", str(out / f"{lib}.idx")]
            rc, wall, ut, st, rss = run_child(cmd)
            if rc != 0:
                sys.exit(f"{lib} worker exited {rc}")
            row = json.loads(wjson.read_text())
            row.update(process_wall_s=wall, process_cpu_s=ut + st, rss_peak_mib=rss, loadavg_1min_before=load0)
            if k == 0:
                row["score"] = score_pairs.score(pairs, key_to_id, truth, args.threshold, positives)
            sc = row.get("score") or runs[0]["score"]
            print(f"[ndd-python] {lib:16s} build {row['build_wall_s']:6.2f}s query {row['query_wall_s']:6.2f}s "
                  f"rss {rss:5.0f} MiB pairs {row['pairs_found']:,} P {sc['precision']:.4f} "
                  f"R {sc['recall']:.4f} F1 {sc['f1']:.4f} (load {load0:.1f})", flush=True)
            runs.append(row)
        best = dict(min(runs, key=lambda x: x["build_wall_s"] + x["query_wall_s"]))
        best["score"] = aggregate_scores([runs[0]["score"]], [None])
        best["runs"] = [{k2: x.get(k2) for k2 in ("build_wall_s", "build_cpu_s", "query_wall_s", "query_cpu_s",
                                                   "rss_peak_mib", "pairs_found", "loadavg_1min_before")}
                        for x in runs]
        rows.append(best)
    peers = []
    bands = rows_ = None
    if args.peers_results:
        pr = json.loads(Path(args.peers_results).read_text())
        assert pr["threshold"] == args.threshold, "peers' results are for another threshold"
        peers = pr["results"]
        bands, rows_ = pr["bands"], pr["rows"]
    res = dict(corpus=prep["corpus"], threshold=args.threshold, n=(bands or 0) * (rows_ or 0),
               bands=bands or "-", rows=rows_ or "-", docs=prep["docs"], truth_pairs=len(positives),
               seeds=[1], repeat=args.repeat, seeded_libraries=[],
               machine=dict(cpus=os.cpu_count(), loadavg_end=os.getloadavg()),
               token_stream_check=token_stream_check(corpus, truth, None))
    md = markdown(dict(res, rows_=peers + rows))
    (out / "results.md").write_text(md)
    (out / "results.json").write_text(json.dumps(dict(res, results=peers + rows), indent=1) + "\n")
    print(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-bench", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "peer-bench"))
    ap.add_argument("--corpus", required=True, help="OUT_DIR of the peer bench's prepare.py")
    ap.add_argument("--truth")
    ap.add_argument("--threshold", type=float, required=True)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--libs", default="ndd-python,ndd-python-html")
    ap.add_argument("--out", default="bench-out/peer-python")
    ap.add_argument("--peers-results", help="peers.py results.json of the same corpus and T")
    ap.add_argument("--worker")
    ap.add_argument("--pairs-out")
    ap.add_argument("--json-out")
    ap.add_argument("--index")
    args = ap.parse_args()
    if args.worker:
        worker(args)
    else:
        if not args.truth:
            ap.error("--truth is required")
        parent(args)


if __name__ == "__main__":
    main()
