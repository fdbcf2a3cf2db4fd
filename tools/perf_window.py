#!/usr/bin/env python3
"""Leaf symbols of a `perf record -g` profile within a time window, in seconds of samples.

    perf record -F 499 -g -o P.data ndd-index ingest ...
    perf script -i P.data -F tid,time,ip,sym > P.txt
    tools/perf_window.py P.txt FROM TO [TOP] [--hz 499] [--by-thread]

FROM and TO are seconds after the first sample (a stage's window: the stage walls of the
ingest's --json output, after the process start-up, which the first samples show). Each
sample's leaf frame counts 1/hz seconds; kernel frames are marked [k]. With --by-thread each
line is (thread id, symbol), which tells the main thread from the workers and the read-ahead
thread. BENCHMARKS.md's profile breakdowns of cold nights come from this.
"""
import argparse
import collections


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("script")
    ap.add_argument("start", type=float)
    ap.add_argument("end", type=float)
    ap.add_argument("top", type=int, nargs="?", default=25)
    ap.add_argument("--hz", type=float, default=499.0)
    ap.add_argument("--by-thread", action="store_true")
    a = ap.parse_args()
    counts = collections.Counter()
    t0 = None
    header = None  # (tid, seconds after t0) of the sample whose leaf comes next
    n = 0
    with open(a.script) as f:
        for line in f:
            if not line.strip():
                continue
            # A sample's header line; its frames start with a tab (`perf script` pads a
            # short thread id with spaces, so a header may start with one).
            if not line.startswith("\t"):
                parts = line.split()
                t = float(parts[1].rstrip(":"))
                t0 = t if t0 is None else t0
                header = (parts[0], t - t0)
                continue
            if header is None:
                continue  # a deeper frame of a sample already counted
            tid, at = header
            header = None
            if not a.start <= at < a.end:
                continue
            fields = line.split(None, 1)
            sym = fields[1].strip() if len(fields) > 1 else "?"
            if fields[0].startswith("ffffffff"):
                sym = "[k] " + sym
            n += 1
            counts[(tid, sym[:90]) if a.by_thread else sym[:90]] += 1
    print("%s %g-%g s: %.2f s of samples" % (a.script, a.start, a.end, n / a.hz))
    for key, c in counts.most_common(a.top):
        print("  %6.2f  %s" % (c / a.hz, key if isinstance(key, str) else "%s %s" % key))


if __name__ == "__main__":
    main()
