"""Bad input gets a clear exception naming the document or request and the reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ndd_index as ndd
from test_api import A, B, small_docs


@pytest.fixture
def idx(tmp_path):
    with ndd.Index.create(tmp_path / "idx") as ix:
        ix.ingest(small_docs(), batch="day-1")
        yield ix


def test_hierarchy():
    for cls in (ndd.CorruptionError, ndd.LockedError, ndd.OptionError, ndd.InvalidArgumentError,
                ndd.DocumentError, ndd.NotAnIndexError, ndd.IndexExistsError,
                ndd.ClosedIndexError, ndd.StorageError):
        assert issubclass(cls, ndd.Error)
    assert issubclass(ndd.OptionError, ValueError)
    assert issubclass(ndd.NotAnIndexError, FileNotFoundError)


def test_non_str_keys(idx):
    with pytest.raises(TypeError, match=r"document #1: key must be str, not int"):
        idx.ingest([("ok", A), (7, B)], batch="x")
    with pytest.raises(TypeError, match=r"key must be str, not bytes"):
        idx.add([(b"k", A)])
    with pytest.raises(TypeError, match=r"key must be str"):
        idx.delete(["a", None])
    with pytest.raises(TypeError):
        _ = 3 in idx
    with pytest.raises(TypeError):
        idx.cluster_of(1)
    assert len(idx) == 3  # nothing was ingested


def test_keys_and_bytes_that_are_not_utf8(idx):
    with pytest.raises(ndd.InvalidArgumentError, match=r"document #0: key is not valid UTF-8"):
        idx.ingest([("bad\udcff", A)], batch="x")
    with pytest.raises(ndd.InvalidArgumentError, match=r'document #0 \("k"\): bytes are not valid UTF-8 \(at byte 9\)'):
        idx.ingest([("k", b"<p>ok caf\xe9 x</p>")], batch="x")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        idx.query(b"\xc3\x28 broken")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        ndd.canonicalize(b"abc \xff")
    with pytest.raises(ValueError, match="lone surrogates"):
        idx.query("text \udc80")
    assert len(idx) == 3


def test_wrong_shapes(idx):
    with pytest.raises(TypeError, match=r"document #0: expected a \(key, html\) pair, got a tuple of length 3"):
        idx.ingest([("a", A, "extra")])
    with pytest.raises(TypeError, match=r'document #0 \("a"\): the document must be str or bytes, not int'):
        idx.ingest([("a", 5)])
    with pytest.raises(TypeError, match=r"document #0: expected a \(key, html\) tuple or a path, not int"):
        idx.ingest([5])
    with pytest.raises(TypeError, match="mix paths and"):
        idx.ingest([("a", A), "some/path"])
    with pytest.raises(TypeError, match="not bytes"):
        idx.ingest(b"abc")
    with pytest.raises(TypeError, match="query_many takes an iterable"):
        idx.query_many(A)
    with pytest.raises(TypeError):
        idx.query(42)


def test_missing_paths(tmp_path, idx):
    with pytest.raises(ndd.NotAnIndexError, match="is not an ndd-index index") as e:
        ndd.Index.open(tmp_path / "nope")
    assert isinstance(e.value, FileNotFoundError) and e.value.path.endswith("nope")
    with pytest.raises(ndd.NotAnIndexError):
        ndd.Index.open(tmp_path / "nope", readonly=True)
    assert not (tmp_path / "nope").exists()  # opening did not create anything
    with pytest.raises(FileNotFoundError, match="no such file or directory: .*missing.html"):
        idx.ingest(tmp_path / "missing.html")
    with pytest.raises(FileNotFoundError):
        idx.ingest([str(tmp_path / "missing-dir")])


def test_closed_index(tmp_path):
    ix = ndd.Index.create(tmp_path / "i")
    ix.ingest(small_docs(), batch="b")
    ix.close()
    calls = [
        lambda: len(ix), lambda: "a" in ix, lambda: ix.query(A), lambda: ix.query_many([A]),
        lambda: ix.pairs(0.8), lambda: ix.clusters(), lambda: ix.cluster_of("a"),
        lambda: ix.members(0), lambda: ix.document("a"), lambda: ix.ingest(small_docs()),
        lambda: ix.add(small_docs()), lambda: ix.delete("a"), lambda: ix.delete_batch("b"),
        lambda: ix.delete_older_than("2000-01-01"), lambda: ix.compact(), lambda: ix.verify(),
        lambda: ix.stats(), lambda: ix.options, lambda: ix.fingerprint(A), lambda: ix.refresh(),
    ]
    for call in calls:
        with pytest.raises(ndd.ClosedIndexError, match=r"index .* is closed"):
            call()


def test_one_writer(tmp_path, idx):
    with pytest.raises(ndd.LockedError, match="is locked by another writer") as e:
        ndd.Index.open(idx.path)
    assert f"pid {os.getpid()}" in e.value.holder
    code = "import sys, ndd_index\ntry:\n    ndd_index.Index.open(sys.argv[1])\nexcept ndd_index.LockedError as e:\n    print('locked', e.holder)\n"
    p = subprocess.run([sys.executable, "-c", code, str(idx.path)], capture_output=True, text=True)
    assert p.stdout.startswith(f"locked pid {os.getpid()}"), p.stderr
    with ndd.Index.open(idx.path, readonly=True) as r:  # readers need no lock
        assert len(r) == 3
        with pytest.raises(ndd.InvalidArgumentError, match="opened read-only"):
            r.ingest(small_docs(), batch="x")
        with pytest.raises(ndd.InvalidArgumentError, match="opened read-only"):
            r.delete("a")


def test_bad_options_and_arguments(tmp_path, idx):
    with pytest.raises(ndd.IndexExistsError, match="exists at .* already"):
        ndd.Index.create(idx.path)
    for kw, msg in [
        (dict(sample="bogus"), "invalid sampling"),
        (dict(cluster_threshold=1.5), "threshold"),
        (dict(shingle_words=4, shingle_chars=8), "exclude each other"),
        (dict(methods="nope"), "nope"),
        (dict(max_df=0), "max_df"),
    ]:
        with pytest.raises(ndd.OptionError, match=msg):
            ndd.Index.create(tmp_path / "new", **kw)
        assert not (tmp_path / "new" / "catalog").exists()
    with pytest.raises(ndd.InvalidArgumentError, match="threshold"):
        idx.query(A, threshold=2)
    with pytest.raises(ndd.InvalidArgumentError, match="unknown method"):
        idx.query(A, method="nope")
    with pytest.raises(ndd.InvalidArgumentError, match="matching"):
        idx.pairs(0.8, matching="fast")
    with pytest.raises(ndd.InvalidArgumentError, match="mem"):
        idx.pairs(0.8, mem="12 parsecs")
    with pytest.raises(ndd.InvalidArgumentError, match="encoding"):
        idx.query(A, encoding="latin-1")
    with pytest.raises(ndd.InvalidArgumentError):
        idx.delete_older_than("yesterday")
    with pytest.raises(TypeError):
        idx.query(A, threshold=True)


def test_strict_ingest_publishes_nothing(idx):
    bad = [("fine", A), ("empty", "<html><body></body></html>")]
    with pytest.raises(ndd.DocumentError, match="empty") as e:
        idx.ingest(bad, batch="strict", strict=True)
    assert e.value.key == "empty"
    assert len(idx) == 3 and "fine" not in idx
    rep = idx.ingest(bad, batch="lenient")
    assert [r["status"] for r in rep] == ["new", "error"]
    assert rep.errors[0]["key"] == "empty" and "no words" in rep.errors[0]["error"]
    assert "fine" in idx


def test_damage_is_reported(tmp_path):
    p = tmp_path / "i"
    with ndd.Index.create(p) as ix:
        ix.ingest(small_docs(), batch="b")
        seg = next((p / "segments").iterdir())
        data = bytearray(seg.read_bytes())
        data[len(data) // 2] ^= 0xFF
        seg.write_bytes(bytes(data))
        with pytest.raises(ndd.CorruptionError, match="problem") as e:
            ix.verify()
        assert e.value.problems >= 1 and e.value.report["problems"]
        assert seg.name in str(e.value)
