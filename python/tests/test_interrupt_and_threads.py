"""Long calls run without the GIL (other Python threads go on), and Ctrl-C during an ingest
stops it without damaging the index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import ndd_index as ndd
from test_api import BASE, page, small_docs


def docs(n: int, words: int = 150, prefix: str = "d"):
    # Deterministic pages with little overlap: word i of page k is "t<(k * 7919 + i * 31) % 50000>".
    return [(f"{prefix}{k:06d}", page([f"t{(k * 7919 + i * 31 + i * i) % 50000}" for i in range(words)]))
            for k in range(n)]


def test_gil_is_released_during_long_calls(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        ix.ingest(docs(3000), batch="b")
        queries = [d[1] for d in docs(2000, prefix="q")]
        ticks = 0
        stop = False

        def spin():
            nonlocal ticks
            while not stop:
                ticks += 1
                time.sleep(0)

        t = threading.Thread(target=spin)
        t.start()
        try:
            t0 = time.perf_counter()
            before = ticks
            ix.query_many(queries)
            during = ticks - before
            elapsed = time.perf_counter() - t0
        finally:
            stop = True
            t.join()
        # While query_many ran (in Rust, on every core), the other thread kept running Python.
        assert during > 100, (during, elapsed)


def test_query_many_from_threads(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        ix.ingest(small_docs(), batch="b")
        want = ix.query(page(BASE))
        out = []

        def worker():
            out.append(ix.query_many([page(BASE)] * 50))

        ts = [threading.Thread(target=worker) for _ in range(4)]
        for t in ts:
            t.start()
        ix.ingest([("late", page(BASE[:-1] + ["late"]))], batch="b2")  # a writer among readers
        for t in ts:
            t.join()
        assert len(out) == 4
        for res in out:
            for hits in res:
                assert [h.key for h in hits][:2] == [h.key for h in want][:2]


SCRIPT = r"""
import signal, sys, ndd_index
from test_interrupt_and_threads import docs
# A process started from a background job inherits SIGINT ignored (POSIX shells do that without
# job control), and Python then keeps it ignored: restore Ctrl-C's usual meaning.
signal.signal(signal.SIGINT, signal.default_int_handler)
ix = ndd_index.Index.open(sys.argv[1])
batch = docs(int(sys.argv[2]), prefix="big")
print("start", flush=True)
try:
    rep = ix.ingest(batch, batch="big")
    print("finished", len(ix), flush=True)
except KeyboardInterrupt:
    print("interrupted", len(ix), flush=True)
"""


def test_ctrl_c_during_ingest_leaves_the_index_as_it_was(tmp_path):
    p = tmp_path / "i"
    with ndd.Index.create(p) as ix:
        ix.ingest(small_docs(), batch="day-1")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outcomes = []
    for delay in (0.3, 1.0):
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(p), "60000"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "start"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outcomes.append(out.split())
        with ndd.Index.open(p) as ix:
            assert ix.verify()["problems"] == []
            if out.startswith("interrupted"):
                assert len(ix) == 3 and "big000000" not in ix
                assert not any((p / "tmp").iterdir())
                assert len(list((p / "segments").iterdir())) == 1
            else:
                assert len(ix) == 3 + 60000
                break
    assert outcomes[0][0] == "interrupted", outcomes
    assert outcomes[0][1] == "3"
    # The interrupted batch can be ingested later.
    with ndd.Index.open(p) as ix:
        rep = ix.ingest(docs(500, prefix="big"), batch="big")
        assert rep.summary["added"] == 500
