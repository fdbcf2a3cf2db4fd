#!/usr/bin/env python3
"""Draws the scaling charts of BENCHMARKS.md from what tools/bench_scale.sh produces.

    tools/bench_charts.py NDD_INDEX SOURCE OUT.svg [--title TEXT]

SOURCE is either the OUT directory of a bench_scale.sh run (its ingest-N.json, and the
/usr/bin/time -v output ingest-N.time and stats-N.json / peak-N.json when present) or the TSV
that bench_scale.sh prints (columns found by name: docs_in_index, ingest_s, stage_seconds,
index_bytes_per_doc, peak_rss_MiB and any column naming heap/RssAnon/RssFile; lines starting
with '#' are comments). The charts, one SVG figure drawn by `ndd-index plot` (src/plot):
time per document against N (whole batch and per stage, log N), CPU per document (the
process's CPU and each stage's, when the source has them), index bytes per document
against N, and peak memory per batch. Only what the source holds is drawn: nothing is
estimated or filled in.
"""
import glob
import json
import os
import re
import subprocess
import sys

STAGES = ["read", "postings", "matching", "publish"]


def parse_stages(s):
    """'read:24.7,postings:7.2' or {'read': 24.7, ...} -> dict."""
    if isinstance(s, dict):
        return {k: float(v) for k, v in s.items()}
    out = {}
    for part in (s or "").strip("{}").split(","):
        if ":" in part:
            k, v = part.split(":", 1)
            try:
                out[k.strip().strip('"')] = float(v)
            except ValueError:
                pass
    return out


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except (TypeError, ValueError):
        return None


def from_tsv(path):
    rows, head = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            if head is None:
                head = cells
                continue
            if len(cells) != len(head):
                continue  # e.g. the mem64 line of MEMTEST=1
            r = dict(zip(head, cells))
            row = {"n": num(r.get("docs_in_index")), "wall": num(r.get("ingest_s")),
                   "stages": parse_stages(r.get("stage_seconds")),
                   "cpu_stages": parse_stages(r.get("stage_cpu_seconds")),
                   "cpu": num(r.get("cpu_s")),
                   "bytes_per_doc": num(r.get("index_bytes_per_doc")),
                   "mem": {}}
            for k, v in r.items():
                kl = k.lower()
                if "rss" in kl or "heap" in kl:
                    if kl.startswith("clusters"):
                        continue
                    row["mem"][k] = num(v)
            rows.append(row)
    return rows


def time_file(path):
    """Wall seconds and peak RSS MiB of a /usr/bin/time -v output."""
    wall = rss = None
    if not os.path.exists(path):
        return wall, rss
    with open(path) as f:
        for line in f:
            if "Maximum resident set size" in line:
                rss = int(line.split(":")[-1]) / 1024
            elif "Elapsed (wall clock)" in line:
                t = line.split("):", 1)[1].strip().split(":")
                wall = 0.0
                for p in t:
                    wall = wall * 60 + float(p)
    return wall, rss


def from_dir(d):
    files = glob.glob(os.path.join(d, "ingest-*.json"))
    batches = sorted(int(m.group(1)) for f in files
                     if (m := re.search(r"ingest-(\d+)\.json$", f)))
    rows, total = [], 0
    for b in batches:
        j = json.load(open(os.path.join(d, f"ingest-{b}.json")))
        total += j.get("added", 0)
        wall, rss = time_file(os.path.join(d, f"ingest-{b}.time"))
        row = {"n": total, "wall": wall if wall is not None else j.get("seconds"),
               "stages": parse_stages(j.get("stage_seconds", {})), "bytes_per_doc": None,
               "cpu_stages": parse_stages(j.get("stage_cpu_seconds", {})), "cpu": None,
               "mem": {}}
        if rss is not None:
            row["mem"]["peak RSS (time -v)"] = rss
        st = os.path.join(d, f"stats-{b}.json")
        if os.path.exists(st):
            s = json.load(open(st))
            row["bytes_per_doc"] = s.get("bytes_per_document")
        pk = os.path.join(d, f"peak-{b}.json")  # tools/peak_mem.sh-style samples, if recorded
        if os.path.exists(pk):
            for k, v in json.load(open(pk)).items():
                row["mem"][k] = v
        rows.append(row)
    return rows


def figure(rows, title):
    rows = [r for r in rows if r["n"]]
    charts = []
    prev = 0
    per_doc = {"whole batch (wall, incl. merge)": []}
    for s in STAGES:
        per_doc[s] = []
    cum, cum_s = [], 0.0
    for r in rows:
        docs = r["n"] - prev
        prev = r["n"]
        if docs <= 0:
            continue
        if r["wall"] is not None:
            per_doc["whole batch (wall, incl. merge)"].append([r["n"], 1e6 * r["wall"] / docs])
            cum_s += r["wall"]
            cum.append([r["n"], 1e6 * cum_s / r["n"]])
        for s in STAGES:
            if s in r["stages"]:
                per_doc[s].append([r["n"], 1e6 * r["stages"][s] / docs])
    series = [{"name": k, "points": v, "color": i}
              for i, (k, v) in enumerate(per_doc.items()) if v]
    if cum:
        series.append({"name": "cumulative / N", "points": cum, "color": 0,
                       "dashed": True})
    if series:
        charts.append({"kind": "line", "title": "Ingest time per document of each batch",
                       "x": {"label": "documents in the index after the batch (N, log)",
                             "log": True},
                       "y": {"label": "µs per document", "min": 0}, "series": series})
    # CPU seconds per document (process CPU: what a shared machine's load does not inflate).
    per_cpu = {"whole batch (process CPU, incl. merge)": []}
    for s in STAGES:
        per_cpu[s] = []
    prev = 0
    for r in rows:
        docs = r["n"] - prev
        prev = r["n"]
        if docs <= 0:
            continue
        if r.get("cpu") is not None:
            per_cpu["whole batch (process CPU, incl. merge)"].append([r["n"], 1e6 * r["cpu"] / docs])
        for s in STAGES:
            if s in r.get("cpu_stages", {}):
                per_cpu[s].append([r["n"], 1e6 * r["cpu_stages"][s] / docs])
    series = [{"name": k, "points": v, "color": i}
              for i, (k, v) in enumerate(per_cpu.items()) if v]
    if series:
        charts.append({"kind": "line", "title": "Ingest CPU per document of each batch",
                       "x": {"label": "documents in the index after the batch (N, log)",
                             "log": True},
                       "y": {"label": "CPU µs per document", "min": 0}, "series": series})
    bpd = [[r["n"], r["bytes_per_doc"]] for r in rows if r["bytes_per_doc"]]
    if bpd:
        charts.append({"kind": "line", "title": "Index bytes per document",
                       "x": {"label": "documents in the index (N, log)", "log": True},
                       "y": {"label": "bytes per document", "min": 0},
                       "series": [{"name": "index bytes / N", "points": bpd}]})
    keys = []
    for r in rows:
        for k in r["mem"]:
            if k not in keys:
                keys.append(k)
    mem = [{"name": k, "points": [[r["n"], r["mem"][k]] for r in rows
                                  if r["mem"].get(k) is not None], "color": i}
           for i, k in enumerate(keys)]
    mem = [m for m in mem if m["points"]]
    if mem:
        charts.append({"kind": "line", "title": "Peak memory of each batch's ingest",
                       "x": {"label": "documents in the index (N, log)", "log": True},
                       "y": {"label": "MiB", "min": 0}, "series": mem})
    return {"title": title, "charts": charts}


def main():
    args = sys.argv[1:]
    title = "ndd-index scaling (tools/bench_scale.sh)"
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    ndd, src, out = args
    rows = from_dir(src) if os.path.isdir(src) else from_tsv(src)
    if not rows:
        sys.exit(f"{src}: no batches found (expected ingest-N.json files or the TSV)")
    spec = json.dumps(figure(rows, title))
    subprocess.run([ndd, "plot", "--spec", "-", "--out", out], input=spec.encode(),
                   check=True)
    print(f"wrote {out} ({len(rows)} batches)", file=sys.stderr)


if __name__ == "__main__":
    main()
