#!/usr/bin/env python3
"""Draws EVALUATION.md's curves from the JSON the evaluation scripts leave in their folders.

    tools/eval_charts.py NDD_INDEX CHART_DIR [--eval EVAL_OUT] [--simhash SIMHASH_OUT]

EVAL_OUT is the OUT_DIR of tools/evaluation.sh, SIMHASH_OUT that of
tools/eval_simhash_imatch.sh. Each chart is drawn only when its data is there, by
`ndd-index plot` (the shared chart code, src/plot), one SVG file per figure:

- sampling.svg (EVAL_OUT/t1): precision and recall against the share of shingles kept, one
  chart per threshold (Tables 1a, 1b);
- simhash-k.svg (SIMHASH_OUT t3-*, EVAL_OUT/t3): precision and recall against the Hamming
  distance k, per corpus (Tables 3-llvm, 3-rust, 3);
- imatch-edit-rate.svg (SIMHASH_OUT t5-*): Chowdhury et al.'s found ratio and the pair
  precision against the edit rate (Table 5c);
- henzinger-llvm.svg, henzinger-gen.svg, imatch-0.10.svg, imatch-0.20.svg: copies of the
  `eval --plot` figures evaluation.sh draws (Tables 4b, 4c, 5).
"""
import json
import os
import re
import shutil
import subprocess
import sys


# nikkhoo-thesis-near-duplicates-ir-evaluation.txt, Table 3.2: ~% of shingles kept, recall,
# precision, as printed.
THESIS_3_2 = [(50.0, 0.9681, 0.9659), (25.0, 0.9378, 0.9086),
              (12.5, 0.8810, 0.7922), (6.25, 0.8211, 0.7187), (3.13, 0.8330, 0.6746),
              (1.56, 0.8607, 0.6791), (0.78, 0.7258, 0.7695), (0.39, 0.6929, 0.5939),
              (0.20, 0.6079, 0.6479)]


def load(p):
    with open(p) as f:
        return json.load(f)


def draw(ndd, fig, out):
    subprocess.run([ndd, "plot", "--spec", "-", "--out", out],
                   input=json.dumps(fig).encode(), check=True)
    print(f"wrote {out}", file=sys.stderr)


def rows_at(ev, method, t):
    return [r for r in ev["rows"] if r["method"] == method and abs(r["threshold"] - t) < 1e-9]


def sampling(ndd, t1, out):
    base = load(os.path.join(t1, "all.ingest.json"))["features"]
    fams = {"mod:M": [], "bottom-k": [], "minhash": [], "all": []}
    for f in sorted(os.listdir(t1)):
        m = re.match(r"(.+)\.eval\.json$", f)
        if not m:
            continue
        name = m.group(1)
        ing = os.path.join(t1, name + ".ingest.json")
        if not os.path.exists(ing):
            continue
        kept = 100.0 * load(ing)["features"] / base
        fam = ("mod:M" if name.startswith("mod-") else "bottom-k" if name.startswith("bottomk")
               else "minhash" if name.startswith("minhash") else "all")
        fams[fam].append((kept, name, load(os.path.join(t1, f))))
    charts = []
    for t in (0.8, 0.5):
        series = []
        for i, (fam, runs) in enumerate(fams.items()):
            runs.sort(key=lambda x: x[0])
            pts = [(k, rows_at(ev, "shingle", t)) for k, _, ev in runs]
            pts = [(k, r[0]) for k, r in pts if r]
            if not pts:
                continue
            series.append({"name": f"{fam} P", "color": i,
                           "points": [[k, r["precision"]] for k, r in pts]})
            series.append({"name": f"{fam} R", "color": i, "dashed": True,
                           "points": [[k, r["recall"]] for k, r in pts]})
        if t == 0.5:
            # The Waterloo thesis's Table 3.2 (hash-value-based sampling of 64-character
            # shingles, GOV2 relevant documents): a paper figure drawn for comparison.
            series.append({"name": "thesis Table 3.2 P", "color": "#888888",
                           "points": [[k, p] for k, _, p in THESIS_3_2]})
            series.append({"name": "thesis Table 3.2 R", "color": "#888888", "dashed": True,
                           "points": [[k, r] for k, r, _ in THESIS_3_2]})
        charts.append({"kind": "line",
                       "title": f"Sampling, llvm-docs, T = {t}: precision (solid), recall (dashed)",
                       "x": {"label": "shingles kept (% of all, log)", "log": True, "suffix": "%"},
                       "y": {"label": "pair-level score", "min": 0, "max": 1},
                       "series": series})
    draw(ndd, {"title": "Tables 1a/1b: sampling against exact Jaccard", "charts": charts},
         os.path.join(out, "sampling.svg"))


def simhash_k(ndd, sim, t3_planted, out):
    charts = []
    idx = os.path.join(sim, "index.tsv") if sim else None
    if idx and os.path.exists(idx):
        by_corpus = {}
        for line in open(idx):
            table, corpus, name, path = line.rstrip("\n").split("\t")
            if table != "3":
                continue
            m = re.search(r"k=(\d+)", name)
            if not m or "boilerplate" in name:
                continue
            k = int(m.group(1))
            if name.startswith("words, tf"):
                fam = "words, tf"
            elif name.startswith("words, idf"):
                fam = "words, idf"
            elif "verified" in name:
                fam = "shingles, verified 0.8"
            else:
                fam = "shingles"
            r = load(os.path.join(sim, path))["rows"][0]
            by_corpus.setdefault(corpus, {}).setdefault(fam, []).append((k, r))
        for corpus, fams in by_corpus.items():
            series = []
            for i, (fam, pts) in enumerate(sorted(fams.items())):
                pts.sort(key=lambda x: x[0])
                series.append({"name": f"{fam} P", "color": i,
                               "points": [[k, r["precision"]] for k, r in pts]})
                series.append({"name": f"{fam} R", "color": i, "dashed": True,
                               "points": [[k, r["recall"]] for k, r in pts]})
            charts.append({"kind": "line",
                           "title": f"simhash on {corpus}, truth Jaccard >= 0.8: P (solid), R (dashed)",
                           "x": {"label": "Hamming distance k (of 64 bits)"},
                           "y": {"label": "pair-level score", "min": 0, "max": 1},
                           "marks": [{"x": 10, "label": "default k"}],
                           "series": series})
    if t3_planted and os.path.isdir(t3_planted):
        pts = []
        for f in os.listdir(t3_planted):
            m = re.match(r"(\d+)\.eval\.json$", f)
            if m:
                r = load(os.path.join(t3_planted, f))["rows"][0]
                pts.append((int(m.group(1)), r))
        pts.sort(key=lambda x: x[0])
        if pts:
            charts.append({"kind": "line",
                           "title": "Word simhash on planted clusters (Table 3): P, R, found ratio",
                           "x": {"label": "Hamming distance k (of 64 bits)"},
                           "y": {"label": "score", "min": 0, "max": 1},
                           "series": [
                               {"name": "P (pairs)", "color": 0,
                                "points": [[k, r["precision"]] for k, r in pts]},
                               {"name": "R (pairs)", "color": 0, "dashed": True,
                                "points": [[k, r["recall"]] for k, r in pts]},
                               {"name": "found ratio", "color": 2,
                                "points": [[k, r.get("found_ratio")] for k, r in pts
                                           if r.get("found_ratio") is not None]}]})
    if charts:
        draw(ndd, {"title": "simhash: precision and recall against k", "charts": charts},
             os.path.join(out, "simhash-k.svg"))


def short_name(name):
    """A legend-sized name of an I-Match protocol setting of eval_simhash_imatch.sh."""
    for a, b in [("imatch ", ""), (" = their DOC-L-90 (as published)", " (DOC-L-90)"),
                 ("(as published)", "(published)"), (" lexicons", " lex."),
                 ("% dropped", "% out"), ("simhash words k=3 (old default)", "old simhash (words k=3)"),
                 ("simhash shingles k=10 verified 0.8 (new default)", "default simhash")]:
        name = name.replace(a, b)
    return name


def imatch_rates(ndd, sim, out):
    idx = os.path.join(sim, "index.tsv")
    if not os.path.exists(idx):
        return
    fams = {}
    for line in open(idx):
        table, rate, name, path = line.rstrip("\n").split("\t")
        if table != "5":
            continue
        r = load(os.path.join(sim, path))["rows"][0]
        fams.setdefault(short_name(name), []).append((float(rate), r))
    found, prec = [], []
    for i, (name, pts) in enumerate(fams.items()):
        pts.sort(key=lambda x: x[0])
        found.append({"name": name, "color": i,
                      "points": [[x, r.get("found_ratio_docs")] for x, r in pts]})
        prec.append({"name": name, "color": i,
                     "points": [[x, r["precision"]] for x, r in pts]})
    rates = sorted({x for pts in fams.values() for x, _ in pts})
    if rates:
        # The paper's averages (Table III; its edit rate is not given): a reference line.
        for j, (label, v) in enumerate([("paper: IDF-L-10 found 0.900", 0.9),
                                        ("paper: DOC-L-90 found 0.836", 0.836)]):
            found.append({"name": label, "color": "#888888" if j == 0 else "#bbbbbb",
                          "dashed": True, "points": [[rates[0], v], [rates[-1], v]]})
    charts = [
        {"kind": "line", "title": "I-Match protocol: found ratio (Table III's definition)",
         "x": {"label": "edit rate (share of words edited, log)", "log": True},
         "y": {"label": "found ratio", "min": 0, "max": 1}, "series": found},
        {"kind": "line", "title": "I-Match protocol: pair precision",
         "x": {"label": "edit rate (share of words edited, log)", "log": True},
         "y": {"label": "precision", "min": 0, "max": 1}, "series": prec},
    ]
    draw(ndd, {"title": "Table 5c: I-Match and simhash against the edit rate", "width": 900,
               "charts": charts}, os.path.join(out, "imatch-edit-rate.svg"))


def main():
    args = sys.argv[1:]
    opts = {}
    for flag in ("--eval", "--simhash"):
        if flag in args:
            i = args.index(flag)
            opts[flag] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    ndd, out = args
    os.makedirs(out, exist_ok=True)
    ev, sim = opts.get("--eval"), opts.get("--simhash")
    if ev and os.path.exists(os.path.join(ev, "t1", "all.ingest.json")):
        sampling(ndd, os.path.join(ev, "t1"), out)
    simhash_k(ndd, sim, os.path.join(ev, "t3") if ev else None, out)
    if sim:
        imatch_rates(ndd, sim, out)
    if ev:
        for src, dst in [("t4/eval.svg", "henzinger-llvm.svg"),
                         ("t4/eval-gen.svg", "henzinger-gen.svg"),
                         ("t5/0.10.svg", "imatch-0.10.svg"), ("t5/0.20.svg", "imatch-0.20.svg")]:
            p = os.path.join(ev, src)
            if os.path.exists(p):
                shutil.copyfile(p, os.path.join(out, dst))
                print(f"copied {p}", file=sys.stderr)


if __name__ == "__main__":
    main()
