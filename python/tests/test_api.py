"""Every call of the Python API on small hand-made documents whose answers are known."""

from __future__ import annotations

import datetime
import json

import pytest

import ndd_index as ndd
from conftest import run_python

BASE = [f"w{i}" for i in range(100)]


def page(words: list[str], title: str = "t") -> str:
    return f"<html><head><title>{title}</title></head><body><p>{' '.join(words)}</p></body></html>"


A = page(BASE)
B = page(BASE[:-1] + ["zz"])  # 96 shingles each, 95 shared: resemblance 95/97
C = page([f"x{i}" for i in range(100)])
R_AB = 95 / 97


def small_docs():
    return [("a", A), ("b", B), ("c", C)]


@pytest.fixture
def idx(tmp_path):
    with ndd.Index.create(tmp_path / "idx") as ix:
        ix.ingest(small_docs(), batch="day-1")
        yield ix


def test_create_ingest_and_report(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        rep = ix.ingest(small_docs() + [("d", A)], batch="day-1")
        recs = list(rep)
        assert len(rep) == 4
        assert [r["key"] for r in recs] == ["a", "b", "c", "d"]
        assert [r["status"] for r in recs] == ["new"] * 4
        assert rep[1] == recs[1] and rep[-1] == recs[3]
        assert recs[1]["near_duplicate"]["key"] == "a"
        assert recs[1]["near_duplicate"]["resemblance"] == pytest.approx(R_AB)
        assert recs[3]["exact_duplicate_of"] == "a"
        assert recs[0]["cluster"] == recs[1]["cluster"] == recs[3]["cluster"] != recs[2]["cluster"]
        s = rep.summary
        assert (s["batch"], s["documents_read"], s["added"], s["errors"]) == ("day-1", 4, 4, 0)
        assert rep.errors == []
        assert "IngestReport(batch=" in repr(rep)
        # The same batch again: nothing to do.
        again = ix.ingest(small_docs(), batch="day-1")
        assert again.summary["already_ingested"] is True and len(ix) == 4


def test_len_contains_document_cluster_of_members(idx):
    assert len(idx) == 3
    assert "a" in idx and "c" in idx and "nope" not in idx
    da = idx.document("a")
    assert da["key"] == "a" and da["batch"] == "day-1" and da["partners"] == ["b"]
    assert idx.document("nope") is None
    cid = idx.cluster_of("b")
    assert cid == idx.cluster_of("a") == da["cluster"]
    assert idx.members(cid) == ["a", "b"]
    assert idx.cluster_of("c") != cid
    with pytest.raises(KeyError):
        idx.cluster_of("nope")


def test_pairs_and_clusters(idx):
    pairs = list(idx.pairs(0.8))
    assert len(pairs) == 1
    a, b, r = pairs[0]
    assert (a, b) == ("a", "b") and r == pytest.approx(R_AB)
    assert idx.pairs().to_list() == pairs  # default: the cluster threshold
    assert list(idx.pairs("0.99")) == []
    assert idx.pairs(threshold=0.01).to_list()[0][:2] == ("a", "b")
    p = idx.pairs(0.8)
    assert p.stats is None
    list(p)
    # At the cluster threshold the index's stored pairs answer; below it, a matching.
    assert p.stats["source"] == "stored"
    low = idx.pairs(0.5)
    assert list(low) == pairs
    assert low.stats["source"] == "matching"
    assert low.stats["matching"] in ("prefix", "probe", "join")
    assert idx.clusters() == {idx.cluster_of("a"): ["a", "b"]}
    assert idx.clusters(0.99) == {}


def test_pairs_to_arrow(idx):
    pa = pytest.importorskip("pyarrow")
    t = idx.pairs(0.8).to_arrow()
    assert isinstance(t, pa.Table)
    assert t.column_names == ["key_a", "key_b", "resemblance"]
    assert t.to_pylist() == [{"key_a": "a", "key_b": "b", "resemblance": pytest.approx(R_AB)}]


def test_pairs_with_sites(tmp_path):
    # Keys are paths: with site="path:1" s1/* share a site, s2/a is on another.
    docs = [("s1/a", A), ("s1/b", B), ("s2/a", A)]
    with ndd.Index.create(tmp_path / "i", site="path:1") as ix:
        ix.ingest(docs, batch="day-1")
        got = {(a, b): s for a, b, _, s in ix.pairs(0.8, sites=True)}
        assert got == {("s1/a", "s1/b"): True, ("s1/a", "s2/a"): False, ("s1/b", "s2/a"): False}
        assert all(len(p) == 3 for p in ix.pairs(0.8))  # without sites: as before
    with pytest.raises(ndd.OptionError):
        ndd.Index.create(tmp_path / "j", site="path:0")


def test_extract_main(tmp_path):
    # The same body words behind two different menus: one document by its main content.
    def framed(words, menu):
        links = "".join(f'<li><a href="/{m}">{m} page</a></li>' for m in menu)
        return f"<html><body><nav><ul>{links}</ul></nav><p>{' '.join(words)}</p></body></html>"

    x = framed(BASE, [f"m{i}" for i in range(60)])
    y = framed(BASE, [f"n{i}" for i in range(60)])
    assert ndd.canonicalize(x, extract="main") == " ".join(BASE)
    assert ndd.canonicalize(x).startswith("m0 page m1 page")  # extract="body", the default
    with pytest.raises(ndd.OptionError):
        ndd.canonicalize(x, extract="article")
    assert ndd.fingerprint(x, extract="main")["features"] == ndd.fingerprint(y, extract="main")[
        "features"
    ]
    with ndd.Index.create(tmp_path / "main", extract="main") as ix:
        ix.ingest([("x", x), ("y", y)])
        assert [(a, b) for a, b, _ in ix.pairs(0.8)] == [("x", "y")]
        assert [h.key for h in ix.query(framed(BASE, ["other"]))] == ["x", "y"]
        assert ix.stats()["options"]["extract"] == "main"
    with ndd.Index.create(tmp_path / "body") as ix:
        ix.ingest([("x", x), ("y", y)])
        assert [p for p in ix.pairs(0.8)] == []
        assert ix.stats()["options"]["extract"] == "body"
    # The Spark job's plan and staging take it too (checked without starting Spark).
    from ndd_index._native import SparkPlan, stage_options

    SparkPlan("0.8", extract="main")
    assert json.loads(stage_options(extract="main"))["extract"] == "main"
    with pytest.raises(ndd.OptionError):
        SparkPlan("0.8", extract="article")


def test_query(idx):
    hits = idx.query(A)
    assert [h.key for h in hits] == ["a", "b"]
    assert hits[0].resemblance == 1.0 and hits[0].containment == 1.0
    assert hits[1].resemblance == pytest.approx(R_AB)
    assert hits[0].cluster == idx.cluster_of("a") and hits[0].method == "shingle"
    key, res, cont, cluster = hits[1]
    assert (key, cluster) == ("b", idx.cluster_of("b"))
    assert hits[1].as_dict()["shared"] == 95
    assert "Match(key='a'" in repr(hits[0]) or 'Match(key="a"' in repr(hits[0])
    assert [h.key for h in idx.query(A, top=1)] == ["a"]
    assert [h.key for h in idx.query(A, threshold=0.99)] == ["a"]
    assert idx.query(page([f"y{i}" for i in range(50)])) == []
    assert idx.query(A.encode()) == hits  # bytes as well as str
    assert len(idx.query(A, threshold=0.01, top=0)) == 2  # C shares nothing with A


def test_query_many_equals_query(idx):
    docs = [A, B, C, page(BASE[:50])] * 100
    many = idx.query_many(docs, threshold=0.3)
    assert len(many) == len(docs)
    assert many[:4] == [idx.query(d, threshold=0.3) for d in docs[:4]]
    assert many[4:8] == many[:4]


def test_add_then_other_process_sees_it(idx):
    rep = idx.add([("e", page(BASE[:-2] + ["q", "r"]))], batch="online-1")
    (rec,) = list(rep)
    assert rec["status"] == "new" and rec["near_duplicate"]["key"] in ("a", "b")
    assert rep.summary["added"] == 1 and "delta_docs" in rep.summary
    assert "e" in idx and len(idx) == 4
    assert {(a, b) for a, b, _ in idx.pairs(0.8)} == {("a", "b"), ("a", "e"), ("b", "e")}
    code = (
        "import json, sys, ndd_index\n"
        "ix = ndd_index.Index.open(sys.argv[1], readonly=True)\n"
        "print(json.dumps({'len': len(ix), 'pairs': ix.pairs(0.8).to_list(), 'e': 'e' in ix}))\n"
    )
    p = run_python(code, str(idx.path))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["len"] == 4 and out["e"] is True
    assert [tuple(x[:2]) for x in out["pairs"]] == [(a, b) for a, b, _ in idx.pairs(0.8)]


def test_delete_by_key_batch_and_age(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        ix.ingest(small_docs(), batch="day-1")
        ix.ingest([("d", page(BASE[:-1] + ["yy"]))], batch="day-2")
        s = ix.delete(["b", "nope"])
        assert s["deleted"] == 1 and s["not_found"] == ["nope"]
        assert "b" not in ix and len(ix) == 3
        assert [(a, b) for a, b, _ in ix.pairs(0.8)] == [("a", "d")]
        assert ix.delete("c")["deleted"] == 1  # a single key
        assert ix.delete_older_than("1970-01-02")["deleted"] == 0
        assert ix.delete_older_than(datetime.date(1970, 1, 2))["deleted"] == 0
        assert ix.delete_batch("day-2")["deleted"] == 1
        assert len(ix) == 1 and ix.pairs(0.8).to_list() == []
        future = datetime.datetime.now() + datetime.timedelta(days=2)
        assert ix.delete_older_than(future)["deleted"] == 1
        assert len(ix) == 0
        ix.ingest([("z", A)], batch="day-3")
        assert ix.delete_older_than(int(future.timestamp()))["deleted"] == 1


def test_compact_verify_stats_options(idx):
    idx.ingest([("d", page(BASE[:-1] + ["yy"]))], batch="day-2")
    idx.delete("c")
    before = idx.pairs(0.5).to_list()
    s = idx.compact(full=True)
    assert len(s["merged"]) == 2 and s["deleted_docs_dropped"] == 1
    assert idx.pairs(0.5).to_list() == before
    r = idx.verify()
    assert r["problems"] == [] and r["live_documents"] == 3
    st = idx.stats()
    assert st["documents"] == len(idx) == 3 and st["batches"] == 2
    assert idx.options["shingle"] == "words:5" and idx.options["sample"] == "all"
    assert idx.options["cluster_threshold"] == "0.8"


def test_context_manager_and_close(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        assert not ix.closed and not ix.readonly
        assert "writer" in repr(ix)
    assert ix.closed and "closed" in repr(ix)
    with ndd.Index.open(tmp_path / "i") as again:  # the lock was released
        assert len(again) == 0
    ro = ndd.Index.open(tmp_path / "i", readonly=True)
    assert ro.readonly and "readonly" in repr(ro)
    ro.close()
    ro.close()  # closing twice is fine


def test_readers_see_a_snapshot_until_refresh(tmp_path):
    w = ndd.Index.create(tmp_path / "i")
    w.ingest(small_docs(), batch="day-1")
    r = ndd.Index.open(tmp_path / "i", readonly=True)
    w.ingest([("d", A)], batch="day-2")
    assert len(r) == 3 and len(w) == 4
    r.refresh()
    assert len(r) == 4 and "d" in r
    w.close()
    r.close()


def test_ingest_paths_dirs_jsonl_and_dicts(tmp_path):
    d = tmp_path / "pages"
    (d / "sub").mkdir(parents=True)
    (d / "a.html").write_text(A)
    (d / "sub" / "b.html").write_text(B)
    jl = tmp_path / "docs.jsonl"
    jl.write_text(json.dumps({"id": "j1", "html": C}) + "\n" + json.dumps({"id": "j2", "text": "plain text " * 20}) + "\n")
    with ndd.Index.create(tmp_path / "i") as ix:
        rep = ix.ingest(d, batch="dir")
        assert sorted(r["key"] for r in rep) == ["a.html", "sub/b.html"]
        rep = ix.ingest([str(jl)], batch="jsonl")
        assert [r["key"] for r in rep] == ["j1", "j2"]
        rep = ix.ingest({"k1": "one two three four five six", "k2": A}, batch="dict", format="text")
        assert [r["key"] for r in rep] == ["k1", "k2"]
        assert len(ix) == 6
        assert ix.document("k1")["batch"] == "dict"
        assert ("a.html", "sub/b.html") in [p[:2] for p in ix.pairs(0.8)]


def test_bytes_documents_and_encodings(tmp_path):
    latin = "<html><head><meta charset=windows-1252></head><body><p>" + " ".join(["café"] + BASE) + "</p></body></html>"
    with ndd.Index.create(tmp_path / "i") as ix:
        ix.ingest([("utf8", A.encode("utf-8"))], batch="b1")
        ix.ingest([("cp1252", latin.encode("cp1252"))], batch="b2", encoding="sniff")
        assert ndd.canonicalize(latin.encode("cp1252"), encoding="sniff").startswith("café w0 w1")
        assert len(ix) == 2


def test_canonicalize_and_fingerprint(idx):
    html = "<html><head><title>T</title><style>x{}</style></head><body><p>Hello, World!</p><script>var x</script><p>Snake_case 42</p></body></html>"
    assert ndd.canonicalize(html) == "hello world snake_case 42"
    assert ndd.canonicalize("Plain TEXT, here.", format="text") == "plain text here"
    assert ndd.canonicalize("<html><body></body></html>") == ""
    fa, fb = ndd.fingerprint(A), ndd.fingerprint(B)
    assert fa["words"] == 100 and fa["shingles"] == 96 and len(fa["features"]) == 96
    assert fa["features"] == sorted(fa["features"])
    sa, sb = set(fa["features"]), set(fb["features"])
    assert len(sa & sb) / len(sa | sb) == pytest.approx(R_AB)
    assert fa["digest"] == ndd.fingerprint(A)["digest"] != fb["digest"]
    assert ndd.fingerprint(A, shingle_words=4)["shingles"] == 97
    sampled = ndd.fingerprint(A, sample="mod:4")
    assert set(sampled["features"]) <= sa and sampled["sample"] == "mod:4"
    assert idx.fingerprint(A) == fa


def test_other_methods(tmp_path):
    with ndd.Index.create(tmp_path / "i", methods="all") as ix:
        ix.ingest(small_docs() + [("d", A)], batch="b")
        hits = ix.query(A, method="exact")
        assert sorted(h.key for h in hits) == ["a", "d"] and hits[0].method == "exact"
        assert hits[0].cluster == ix.cluster_of("a") and hits[0].containment is None
        sim = ix.query(A, method="simhash")
        assert {"a", "d"} <= {h.key for h in sim} and sim[0].hamming == 0
        assert [p[:2] for p in ix.pairs(method="exact")] == [("a", "d")]
        assert list(ix.clusters(method="exact").values()) == [["a", "d"]]


def test_create_options_are_stored_and_checked(tmp_path):
    p = tmp_path / "i"
    ndd.Index.create(p, shingle_words=4, sample="mod:2", cluster_threshold=0.9, max_df=1000).close()
    ix = ndd.Index.open(p)
    o = ix.options
    assert (o["shingle"], o["sample"], o["cluster_threshold"], o["max_df"]) == ("words:4", "mod:2", "0.9", 1000)
    ix.close()
    ndd.Index.create(p, exist_ok=True, shingle_words=4).close()  # agrees: fine
    with pytest.raises(ndd.OptionError) as e:
        ndd.Index.create(p, exist_ok=True, shingle_words=5)
    assert e.value.option == "--shingle" and e.value.stored == "words:4"


def test_abandoned_pairs_streams_end(tmp_path):
    with ndd.Index.create(tmp_path / "i") as ix:
        docs = [(f"k{i:04d}", page(BASE[: 60 + i % 40])) for i in range(300)]
        ix.ingest(docs, batch="b")
        streams = [ix.pairs(0.5) for _ in range(20)]
        firsts = [next(s) for s in streams]
        assert len(set(firsts)) == 1
        del streams  # their threads stop at their next block
        ix.compact(full=True)
        full = ix.pairs(0.5).to_list()
        assert full[0] == firsts[0] and len(full) > 1000
        p = ix.pairs(0.5)
        assert p.to_list() == full and p.to_list() == [] and next(iter(p), None) is None


def test_more_creation_options(tmp_path):
    ndd.Index.create(tmp_path / "c", shingle_chars=64, cluster_threshold="0.9").close()
    with ndd.Index.open(tmp_path / "c", readonly=True) as ix:
        assert ix.options["shingle"] == "chars:64" and ix.options["cluster_threshold"] == "0.9"
    ndd.Index.create(tmp_path / "g", sample="adaptive", size_groups="0-300:1,300-:4").close()
    with ndd.Index.open(tmp_path / "g", readonly=True) as ix:
        assert ix.options["sample"].startswith("adaptive")
    ref = tmp_path / "ref"
    ref.mkdir()
    for i in range(5):
        (ref / f"r{i}.html").write_text(page([f"w{j}" for j in range(i, 100 + i)]))
    with ndd.Index.create(tmp_path / "m", methods=["imatch", "simhash"], imatch_lexicon=ref) as ix:
        ix.ingest(small_docs() + [("d", A)], batch="b")
        assert {h.key for h in ix.query(A, method="imatch")} >= {"a", "d"}
    with pytest.raises(FileNotFoundError):
        ndd.Index.create(tmp_path / "n", imatch_lexicon=tmp_path / "missing")
