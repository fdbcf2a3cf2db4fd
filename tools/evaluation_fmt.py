#!/usr/bin/env python3
"""Formats the raw outputs of tools/evaluation.sh as Markdown tables (stdout).

Each subcommand reads the JSON written by `ndd-index ingest/stats/eval/pairs --json` for one
table. `score` helpers compare `pairs` output (key_a, key_b, similarity) with the llvm-docs
exact truth (truth.tsv + manifest.tsv), for the settings `eval` has no option for.
"""
import json
import math
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def f3(x):
    return "-" if x is None else f"{x:.3f}"


def n(x):
    return f"{x:,}"


def table(head, rows, right=None):
    print("| " + " | ".join(head) + " |")
    al = ["---:" if (right is None or i in right) else "---" for i in range(len(head))]
    if right is None:
        al[0] = "---"
    print("|" + "|".join(al) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


def rows_of(ev, method=None, t=None):
    out = [r for r in ev["rows"] if (method is None or r["method"] == method)
           and (t is None or abs(r["threshold"] - t) < 1e-9)]
    return out


def sampling(d, samples):
    base = load(os.path.join(d, "all.ingest.json"))["features"]
    for t in (0.8, 0.5):
        print(f"**Table 1{'a' if t == 0.8 else 'b'}. Sampling, llvm-docs, T = {t}** "
              "(`--sample S --methods shingle`; truth = exact 5-word-shingle Jaccard >= T; "
              "error and correlation over the found pairs the truth lists)")
        print()
        rows = []
        for s in samples:
            n_ = s.replace(":", "-")
            ing = load(os.path.join(d, n_ + ".ingest.json"))
            st = load(os.path.join(d, n_ + ".stats.json"))
            r = rows_of(load(os.path.join(d, n_ + ".eval.json")), "shingle", t)[0]
            rows.append([f"`{s}`", f"{100.0 * ing['features'] / base:.2f}%",
                         f"{st['bytes']['total'] / 2**20:.1f}", n(r["found"]),
                         n(r["true_positives"]), f3(r["precision"]), f3(r["recall"]),
                         f3(r["f1"]), f3(r.get("mean_abs_error")), f3(r.get("correlation"))])
        table(["sample", "shingles kept", "index MiB", "pairs", "true pairs", "P", "R", "F1",
               "mean abs error", "correlation"], rows, right=set(range(1, 10)))
    pos = rows_of(load(os.path.join(d, "all.eval.json")), "shingle")
    print("Truth positives: " + ", ".join(f"{n(r['positives'])} pairs at T = {r['threshold']}"
                                          for r in pos) + ".")
    print()


def shingle_w(d, genjson, ws):
    g = load(genjson)
    c = g["counts"]
    print(f"**Table 2. Shingle width w, planted clusters** (ndd-gen --docs {c['documents']}, "
          f"{c['clusters']} clusters, {c['variants']} variants, edit rate "
          f"{g['parameters']['edit_rate']}; truth = planted labels; `--shingle-words w "
          "--sample all`)")
    print()
    rows = []
    for w in ws:
        ev = load(os.path.join(d, w + ".eval.json"))
        for r in sorted(ev["rows"], key=lambda r: -r["threshold"]):
            rows.append([w, r["threshold"], n(r["found"]), n(r["positives"]),
                         f3(r["precision"]), f3(r["recall"]), f3(r["f1"]),
                         f3(r.get("found_ratio")), f3(r.get("clusters_per_true_cluster"))])
    table(["w", "T", "pairs", "true pairs", "P", "R", "F1", "found ratio",
           "clusters per true cluster"], rows)


def simhash_k(d, kbs):
    print("**Table 3. simhash Hamming distance k, planted clusters** (same corpus as Table 2; "
          "`--methods simhash --simhash-k k --simhash-blocks b`; truth = planted labels, "
          "pair level)")
    print()
    rows = []
    for kb in kbs:
        k, b = kb.split(":")
        r = rows_of(load(os.path.join(d, k + ".eval.json")), "simhash")[0]
        ing = load(os.path.join(d, k + ".ingest.json"))
        rows.append([k, b, n(r["found"]), n(r["true_positives"]), n(r["positives"]),
                     f3(r["precision"]), f3(r["recall"]), f3(r["f1"]),
                     f3(r.get("found_ratio")), f3(r.get("clusters_per_true_cluster")),
                     f"{ing['seconds']:.2f}"])
    table(["k", "blocks", "pairs", "true pairs", "planted pairs", "P", "R", "F1",
           "found ratio", "clusters per true cluster", "ingest s"], rows)


def load_truth(truth, manifest):
    ids = {}
    with open(manifest) as f:
        next(f)
        for l in f:
            p = l.split("\t", 2)
            ids[p[0]] = p[1]
    jac = {}
    with open(truth) as f:
        next(f)
        for l in f:
            a, b, j = l.split("\t", 3)[:3]
            a, b = ids[a], ids[b]
            jac[(a, b) if a <= b else (b, a)] = float(j)
    return jac


def score(jac, path, t):
    """Found, true positives, P, R, F1, mean abs error, correlation of a pairs file."""
    pos = sum(1 for j in jac.values() if j >= t)
    found = tp = 0
    est = []
    with open(path) as f:
        for l in f:
            a, b, s = l.rstrip("\n").split("\t")[:3]
            found += 1
            j = jac.get((a, b) if a <= b else (b, a))
            if j is not None:
                est.append((float(s), j))
                if j >= t:
                    tp += 1
    p = tp / found if found else 1.0
    r = tp / pos if pos else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    err = sum(abs(x - y) for x, y in est) / len(est) if est else None
    return dict(found=found, positives=pos, true_positives=tp, precision=p, recall=r, f1=f1,
                mean_abs_error=err, correlation=pearson(est))


def pearson(v):
    if len(v) < 2:
        return None
    mx = sum(x for x, _ in v) / len(v)
    my = sum(y for _, y in v) / len(v)
    sxy = sum((x - mx) * (y - my) for x, y in v)
    sxx = sum((x - mx) ** 2 for x, _ in v)
    syy = sum((y - my) ** 2 for _, y in v)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def henzinger(d, truth, manifest, cs):
    ev = load(os.path.join(d, "eval.json"))
    o = load(os.path.join(d, "ingest.json"))
    print("**Table 4. Henzinger's B vs C vs combined, llvm-docs, T = 0.8** (`--methods all`: "
          "84 min-hashes in 6 supershingles of 14, B-similar = 2 agree; C = agreeing bits of "
          "the 384-bit simhash; truth = exact Jaccard >= 0.8; similarity error/correlation over "
          "found pairs the truth lists)")
    print()
    rows = []
    names = {"shingle": "shingle T=0.8 (exact)",
             "simhash": "simhash-64 (default: shingles, k=10, verified 0.8)",
             "henzinger": "henzinger: C across sites, combined within",
             "dsc-ss": "B: dsc-ss (2 of 6 supershingles)",
             "combined": "combined: B and C >= 355/384 (0.924)",
             "imatch": "imatch (idf-l-10)", "exact": "exact",
             "megashingle": "B via megashingles (share >= 1 of 15)",
             "c-sim": "C alone: C >= 355/384 (0.924)"}
    for r in rows_of(ev, t=0.8):
        rows.append([names.get(r["method"], r["method"]), n(r["found"]), n(r["true_positives"]),
                     f3(r["precision"]), f3(r["recall"]), f3(r["f1"]),
                     f3(r.get("mean_abs_error")), f3(r.get("correlation"))])
    jac = load_truth(truth, manifest)
    for c in cs:
        r = score(jac, os.path.join(d, f"combined-{c}.tsv"), 0.8)
        rows.append([f"combined: B and C >= {c}", n(r["found"]), n(r["true_positives"]),
                     f3(r["precision"]), f3(r["recall"]), f3(r["f1"]),
                     f3(r["mean_abs_error"]), f3(r["correlation"])])
    for c in cs:
        p = os.path.join(d, f"csim-{c}.tsv")
        if os.path.exists(p):
            r = score(jac, p, 0.8)
            rows.append([f"C alone: C >= {c}", n(r["found"]), n(r["true_positives"]),
                         f3(r["precision"]), f3(r["recall"]), f3(r["f1"]),
                         f3(r["mean_abs_error"]), f3(r["correlation"])])
    table(["method", "pairs", "true pairs", "P", "R", "F1", "mean abs error", "correlation"],
          rows)
    print(f"Ingest with `--methods all`: {o['seconds']:.1f} s.")
    print()


def henzinger_sites(title, path):
    """Same-site and different-site P/R of every method, and the split-half protocol."""
    ev = load(path)
    t = ev["rows"][0]["threshold"]
    print(f"**{title}: same-site and different-site pairs** (every method's found pairs "
          "split by site; positives of each kind)")
    print()
    rows = []
    for r in rows_of(ev, t=t):
        s, d = r["same_site"], r["different_site"]
        rows.append([r["method"], n(s["found"]), n(s["true_positives"]), f3(s["precision"]),
                     f3(s["recall"]), n(d["found"]), n(d["true_positives"]),
                     f3(d["precision"]), f3(d["recall"])])
    r0 = rows_of(ev, t=t)[0]
    print(f"Positives: {n(r0['same_site']['positives'])} same-site, "
          f"{n(r0['different_site']['positives'])} different-site.")
    print()
    table(["method", "same: pairs", "same: true", "same: P", "same: R", "diff: pairs",
           "diff: true", "diff: P", "diff: R"], rows)
    for h in ev.get("henzinger_split", []):
        print(f"**{title}: Henzinger's split-half protocol** (C thresholds chosen by best F1 "
              f"on the training half: C >= {h['c_agree_bits']}/384 across sites, combined "
              f"with C >= {h['combined_agree_bits']}/384 within; scored on the test half)")
        print()
        rows = []
        for half, part, x in [("train", "same site (combined)", h["train_same_site"]),
                              ("train", "different sites (C)", h["train_different_site"]),
                              ("test", "same site (combined)", h["test_same_site"]),
                              ("test", "different sites (C)", h["test_different_site"]),
                              ("test", "all", h["test"])]:
            rows.append([half, part, n(x["found"]), n(x["positives"]), n(x["true_positives"]),
                         f3(x["precision"]), f3(x["recall"])])
        table(["half", "part", "found", "positives", "true", "P", "R"], rows)
        print("Training curve (every 4th threshold):")
        print()
        rows = []
        for c in h["curve"][::4]:
            s, d = c["same_site"], c["different_site"]
            rows.append([c["agree_bits"], f3(s["precision"]), f3(s["recall"]),
                         f3(d["precision"]), f3(d["recall"])])
        table(["C >= bits/384", "combined same-site P", "R", "C different-site P", "R"], rows)


def imatch(d, rates):
    print("**Table 5. I-Match protocol** (ndd-gen --imatch-protocol 10,10 --docs 300: 10 "
          "originals x 10 variants at the edit rate, 300 singleton background documents; "
          "`--methods all`, the default options; truth = planted labels; found (Table III) = "
          "share of the planted documents clustered with another copy of their original, "
          "Chowdhury et al.'s Table III; largest-cluster ratio = our stricter measure; "
          "clusters per original as in their Table IV)")
    print()
    rows = []
    for rate in rates:
        ev = load(os.path.join(d, rate + ".eval.json"))
        g = load(os.path.join(d, f"gen-{rate}", "gen.json"))
        real = g["edits"]["realized_rate"]
        seen = set()
        for r in ev["rows"]:
            m = r["method"]
            if m == "shingle":
                label = f"shingle T={r['threshold']}"
            elif m in seen:
                continue  # the other methods do not depend on the threshold
            else:
                label = m
            seen.add(m)
            rows.append([f"{rate} ({real:.3f})", label, f3(r.get("found_ratio_docs")),
                         f3(r.get("found_ratio")), f3(r.get("clusters_per_true_cluster")),
                         n(r["found"]), f3(r["precision"]), f3(r["recall"])])
    table(["edit rate (realized)", "method", "found (Table III)", "largest-cluster ratio",
           "clusters per original", "pairs", "P", "R"], rows, right={2, 3, 4, 5, 6, 7})


def imatch_filters(d, rates, filters):
    print("**Table 5b. I-Match filters on the same protocol** (`--methods imatch "
          "--imatch-filter F`; idf-l-P keeps terms with normalised idf >= P/100, doc-l-P a "
          "document's P% highest-idf terms)")
    print()
    rows = []
    for rate in rates.split():
        for f in filters:
            r = rows_of(load(os.path.join(d, f"{rate}-{f}.eval.json")), "imatch")[0]
            rows.append([rate, f"`{f}`", f3(r.get("found_ratio_docs")), f3(r.get("found_ratio")),
                         f3(r.get("clusters_per_true_cluster")), n(r["found"]),
                         f3(r["precision"]), f3(r["recall"])])
    table(["edit rate", "filter", "found (Table III)", "largest-cluster ratio",
           "clusters per original", "pairs", "P", "R"], rows, right={2, 3, 4, 5, 6, 7})


def maxdf(d, truth, manifest, dfs):
    print("**Table 6. Commonality threshold, llvm-docs, T = 0.5** (`pairs --threshold 0.5 "
          "--max-df N --stats` on the `--sample all` index of Table 1; N = 0: no limit; "
          "recall against exact Jaccard >= 0.5)")
    print()
    jac = load_truth(truth, manifest)
    rows = []
    for x in dfs:
        st = load(os.path.join(d, f"stats-{x}.json"))
        r = score(jac, os.path.join(d, f"pairs-{x}.tsv"), 0.5)
        rows.append([x if x != "0" else "none", n(st["postings_visited"]),
                     n(st.get("max_df_postings_skipped", 0)), n(st.get("max_df_keys_cut", 0)),
                     n(st.get("max_df_docs_cut", 0)), n(st["candidates"]), n(r["found"]),
                     f3(r["precision"]), f3(r["recall"])])
    table(["max-df N", "postings visited", "postings skipped", "shingles cut",
           "docs with probes cut short", "candidates", "pairs", "P", "R"], rows)


def adaptive(d, t1, uniform):
    """Ye et al.'s precision by document-size group: uniform MOD_m vs adaptive tables."""
    tuned = load(os.path.join(d, "tune.json"))
    print("**Table 7. Precision by document-size group (Ye et al.), llvm-docs, T = 0.8** "
          "(size = distinct 5-word shingles of the pair's larger document; truth = exact "
          "Jaccard >= 0.8; the default groups 0-300, 300-1000, 1000-)")
    print()
    # Uniform runs: every group at the run's own modulus (by_size_group reports the default
    # table's moduli for them, which they do not use).
    runs = [(f"`{u}`", os.path.join(t1, u.replace(":", "-") + ".eval.json"),
             os.path.join(t1, u.replace(":", "-") + ".stats.json"),
             1 if u == "all" else int(u.split(":")[1])) for u in uniform]
    runs.append(("`adaptive` (default table)", os.path.join(d, "default.eval.json"),
                 os.path.join(d, "default.stats.json"), None))
    runs.append((f"`adaptive:{tuned['table']}` (tuned, P >= {tuned['precision_target']})",
                 os.path.join(d, "tuned.eval.json"), os.path.join(d, "tuned.stats.json"), None))
    rows = []
    for name, ev, st, m in runs:
        r = rows_of(load(ev), "shingle", 0.8)[0]
        mib = load(st)["bytes"]["total"] / 2**20
        for g in r["by_size_group"]:
            mod = g["modulus"] if m is None else m
            rows.append([name, g["group"], mod, n(g["documents"]), n(g["found"]),
                         n(g["positives"]), f3(g["precision"]), f3(g["recall"])])
        rows.append([name, "all", "", "", n(r["found"]), n(r["positives"]),
                     f3(r["precision"]), f3(r["recall"]) + f" ({mib:.1f} MiB)"])
    table(["sampling", "size group", "1 in m", "docs", "found", "positives", "P", "R"], rows)
    print(f"`tune --precision-target {tuned['precision_target']}` on the `--sample all` index "
          f"chose `{tuned['table']}`.")
    print()


def idf_simhash(d, ks):
    print("**Table 8. tf- vs idf-weighted simhash, llvm-docs, T = 0.8** (`--methods simhash "
          "--simhash-features words --simhash-k k --simhash-blocks b --simhash-weight W`, and "
          "the default `--methods simhash` for comparison; truth = exact Jaccard >= 0.8)")
    print()
    rows = []
    for kb in ks:
        for w in ("tf", "idf"):
            r = rows_of(load(os.path.join(d, f"{w}-{kb}.eval.json")), "simhash", 0.8)[0]
            k, b = kb.split(":")
            rows.append([w, k, b, n(r["found"]), n(r["true_positives"]), f3(r["precision"]),
                         f3(r["recall"]), f3(r["f1"])])
    dflt = os.path.join(d, "default.eval.json")
    if os.path.exists(dflt):
        r = rows_of(load(dflt), "simhash", 0.8)[0]
        rows.append(["shingles, tf, verified 0.8 (default)", 10, 11, n(r["found"]),
                     n(r["true_positives"]), f3(r["precision"]), f3(r["recall"]),
                     f3(r["f1"])])
    table(["weight", "k", "blocks", "pairs", "true pairs", "P", "R", "F1"], rows)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sampling":
        sampling(args[0], args[1:])
    elif cmd == "shingle-w":
        shingle_w(args[0], args[1], args[2:])
    elif cmd == "simhash-k":
        simhash_k(args[0], args[1:])
    elif cmd == "henzinger":
        henzinger(args[0], args[1], args[2], args[3:])
    elif cmd == "henzinger-sites":
        henzinger_sites(args[0], args[1])
    elif cmd == "imatch":
        imatch(args[0], args[1:])
    elif cmd == "imatch-filters":
        imatch_filters(args[0], args[1], args[2:])
    elif cmd == "adaptive":
        adaptive(args[0], args[1], args[2:])
    elif cmd == "idf-simhash":
        idf_simhash(args[0], args[1:])
    elif cmd == "maxdf":
        maxdf(args[0], args[1], args[2], args[3:])
    else:
        sys.exit(f"unknown table {cmd}")
