#!/usr/bin/env python3
"""The derived figures of a tools/bench_scale.sh run that BENCHMARKS.md quotes.

    tools/scale_summary.py SCALE.tsv [SCALE.tsv ...]

For each run: cumulative wall and CPU per document (every batch's whole process, merges
included) at 1, 2, 4, 8 and 10M documents; what c * log2 N anchored at 1M allows at the last
point; the least-squares fit a + b * log2(N / 1M) of the cumulative wall per document and its
residuals; the whole run's wall and CPU; and the batches by kind (a batch that ended in a merge
holds fewer segments after it than before it plus one): wall medians and ranges, and the
median stage CPU of the batches without a merge.

Then the log N budget, split: a batch's wall is its stages (read, postings, matching, publish)
plus the rest: its merge when it ended in one, and in every batch the index's opening (View::load
reads every document record) and the process's exit. The cumulative wall per document at 1M and
at the last point is given for the stages alone and for the rest, with how much of the ratio
c * log2 N allows (log2 N_last / log2 1M) the stages alone already take; the rest of the
batches without a merge is printed for the first and last three.
"""
import math
import re
import statistics
import sys

POINTS = (1_000_000, 2_000_000, 4_000_000, 8_000_000, 10_000_000)


def rows(path):
    out = []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if not f[0].isdigit():
            continue
        cpu = {k: float(v) for k, v in re.findall(r"(\w+):([0-9.]+)", f[15])}
        wall = {k: float(v) for k, v in re.findall(r"(\w+):([0-9.]+)", f[6])}
        out.append({"batch": int(f[0]), "n": int(f[1]), "wall": float(f[2]),
                    "cpu": float(f[11]), "stages": cpu, "stage_wall": sum(wall.values()),
                    "segments": int(f[16])})
    return out


def summary(path):
    rs = rows(path)
    print(path)
    wall = cpu = 0.0
    pts = []
    for r in rs:
        wall += r["wall"]
        cpu += r["cpu"]
        if r["n"] in POINTS:
            pts.append((r["n"], wall / r["n"] * 1e6, cpu / r["n"] * 1e6))
    print("  cumulative per document (wall / CPU us): " + ", ".join(
        "%gM %.0f / %.0f" % (n / 1e6, w, c) for n, w, c in pts))
    if pts and pts[0][0] == POINTS[0]:
        n, w = pts[-1][0], pts[-1][1]
        allow = pts[0][1] * math.log2(n) / math.log2(POINTS[0])
        print("  c*log2 N anchored at 1M allows %.0f us at %gM; took %.0f (%+.0f %%)"
              % (allow, n / 1e6, w, (w / allow - 1) * 100))
        xs = [math.log2(n / 1e6) for n, _, _ in pts]
        ys = [w for _, w, _ in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        print("  least squares: %.1f + %.1f * log2(N / 1M) us, residuals %s"
              % (a, b, ", ".join("%+.1f" % (y - a - b * x) for x, y in zip(xs, ys))))
    print("  whole run: %.0f s wall, %.0f s CPU" % (wall, cpu))
    prev = 0
    kinds = {"no merge": [], "merge": []}
    for r in rs:
        kinds["merge" if r["segments"] < prev + 1 else "no merge"].append(r)
        prev = r["segments"]
    for k, group in kinds.items():
        if not group:
            continue
        walls = [r["wall"] for r in group]
        print("  %d batches with %s: wall median %.1f s, %.1f-%.1f s" % (
            len(group), k, statistics.median(walls), min(walls), max(walls)))
    quiet = kinds["no merge"]
    if quiet:
        print("  stage CPU medians without a merge: " + ", ".join(
            "%s %.1f s" % (s, statistics.median(r["stages"][s] for r in quiet))
            for s in ("read", "postings", "matching")))
        # Outside the stages a batch without a merge opens the index (View::load scans every
        # document record) and exits: a term no stage owns.
        outside = ["%.1f" % (r["wall"] - r["stage_wall"]) for r in quiet]
        print("  wall outside the stages, batches without a merge: first %s, last %s s" % (
            " ".join(outside[:3]), " ".join(outside[-3:])))
        opening(rs, quiet)

    budget(rs)


def opening(rs, quiet):
    """The wall outside the stages of the batches without a merge, fitted as a + b * N (the
    index's opening grows with N), summed over every batch as a cumulative wall per document at
    1M and at the last point, and the c * log2 N reading with its growing part (b * N) taken
    out of every batch."""
    if len(quiet) < 2 or rs[-1]["n"] == POINTS[0]:
        return
    xs = [r["n"] for r in quiet]
    ys = [r["wall"] - r["stage_wall"] for r in quiet]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    wall = term = grow = 0.0
    at = {}
    for r in rs:
        wall += r["wall"]
        term += a + b * r["n"]
        grow += b * r["n"]
        at[r["n"]] = (term / r["n"] * 1e6, (wall - grow) / r["n"] * 1e6)
    if POINTS[0] not in at:
        return
    n = rs[-1]["n"]
    (t0, w0), (t1, w1) = at[POINTS[0]], at[n]
    allow = w0 * math.log2(n) / math.log2(POINTS[0])
    print("  outside the stages, fitted: %.2f s + %.3f s per million documents a batch; over the "
          "run %.1f us a document at 1M, %.1f at %gM; without its growing part: %.1f -> %.1f us "
          "(%+.0f %% against c*log2 N)" % (a, b * 1e6, t0, t1, n / 1e6, w0, w1,
                                            (w1 / allow - 1) * 100))


def budget(rs):
    """The cumulative wall per document at 1M and at the last point, split into the batches'
    stages and the rest (the merges), against the ratio c * log2 N allows."""
    first, last = None, None
    stages = rest = 0.0
    for r in rs:
        stages += r["stage_wall"]
        rest += r["wall"] - r["stage_wall"]
        cut = (r["n"], stages / r["n"] * 1e6, rest / r["n"] * 1e6)
        if r["n"] == POINTS[0]:
            first = cut
        last = cut
    if first is None or last[0] == first[0]:
        return
    allow = math.log2(last[0]) / math.log2(first[0])
    (n0, s0, m0), (n1, s1, m1) = first, last
    print("  log N budget: c*log2 N allows x%.3f from 1M to %gM" % (allow, n1 / 1e6))
    print("    stages alone: %.1f -> %.1f us (x%.3f); merges (the rest of the wall): "
          "%.1f -> %.1f us" % (s0, s1, s1 / s0, m0, m1))
    print("    total: %.1f -> %.1f us (x%.3f); with merges free: x%.3f; merges may cost at most "
          "%.0f %% of what they cost for the total to stay within x%.3f"
          % (s0 + m0, s1 + m1, (s1 + m1) / (s0 + m0), s1 / s0,
             max(0.0, (allow * s0 - s1) / (m1 - allow * m0)) * 100 if m1 > allow * m0 else 100,
             allow))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summary(p)
