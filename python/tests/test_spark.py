"""ndd_index.spark on local[2] against the CLI: OUT/pairs sorted equals `ndd-index pairs`
byte for byte, clusters equal `ndd-index clusters --threshold T` as a partition, for 1, 3
and 7 shuffle partitions; a hot feature in every document and one very long document finish
(the hot prefix group split across tasks) with the CLI's answer.

Needs pyspark (tools/setup.sh installs it unless NDD_SKIP_SPARK=1), Java 17, and the
ndd-index and ndd-gen binaries of the same build (NDD_INDEX_BIN / NDD_GEN_BIN, or
$CARGO_TARGET_DIR/release, or target/release)."""

from __future__ import annotations

import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

if os.environ.get("NDD_SKIP_SPARK") == "1":
    pytest.skip("NDD_SKIP_SPARK=1", allow_module_level=True)
pyspark = pytest.importorskip("pyspark", reason="pyspark not installed (NDD_SKIP_SPARK=1?)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java (pyspark needs Java 17)", allow_module_level=True)

from ndd_index import spark as nspark  # noqa: E402


def _bin(env: str, name: str) -> Path:
    cands = [Path(os.environ[env])] if os.environ.get(env) else []
    if os.environ.get("CARGO_TARGET_DIR"):
        cands.append(Path(os.environ["CARGO_TARGET_DIR"]) / "release" / name)
    cands.append(REPO / "target" / "release" / name)
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    pytest.skip(f"{name} not built (cargo build --release, or set {env})")


def _run(*args) -> str:
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    assert p.returncode == 0, f"{args} exited {p.returncode}: {p.stderr}"
    return p.stdout


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("ndd-index test_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Make the shuffles real: no broadcast joins, no coalescing of the partitions.
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Path]:
    """A corpus no test has seen: generated pages (a directory), a WARC of other pages, and a
    JSONL file with a repeated key (the first is kept), an empty document (rejected) and a
    copy of a page under a new key (an exact duplicate pair)."""
    gen = _bin("NDD_GEN_BIN", "ndd-gen")
    root = tmp_path_factory.mktemp("spark-corpus")
    _run(gen, "--out", root / "files", "--docs", "160", "--words", "120", "--sites", "4",
         "--seed", "4242", "--quiet")
    _run(gen, "--out", root / "warc", "--docs", "60", "--words", "90", "--sites", "3",
         "--seed", "977", "--format", "warc", "--key-prefix", "w-", "--quiet")
    page = sorted((root / "files" / "batch-01").rglob("*.html"))[3].read_text()
    rows = [
        {"id": "j-1", "html": page},
        {"id": "j-2", "text": "one two three four five six seven eight nine ten"},
        {"id": "j-2", "text": "a repeated key: this one is dropped as in ingest"},
        {"id": "j-3", "text": ""},
        {"id": "j-4", "text": "one two three four five six seven eight nine eleven"},
    ]
    with gzip.open(root / "extra.jsonl.gz", "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return [root / "files" / "batch-01", *sorted((root / "warc").glob("*.warc*")), root / "extra.jsonl.gz"]


@pytest.fixture(scope="module")
def cli_index(corpus, tmp_path_factory) -> Path:
    cli = _bin("NDD_INDEX_BIN", "ndd-index")
    idx = tmp_path_factory.mktemp("spark-cli") / "idx"
    _run(cli, "ingest", "--index", idx, *corpus)
    return idx


def _cli_pairs(idx: Path, t: str) -> bytes:
    out = _run(_bin("NDD_INDEX_BIN", "ndd-index"), "pairs", "--index", idx, "--threshold", t)
    return b"".join(sorted(line.encode() + b"\n" for line in out.splitlines()))


def _partition(lines) -> list[list[str]]:
    groups = collections.defaultdict(set)
    for line in lines:
        c, k = line.rstrip("\n").split("\t")
        groups[c].add(k)
    return sorted(sorted(g) for g in groups.values())


def _cli_clusters(idx: Path, t: str) -> list[list[str]]:
    out = _run(_bin("NDD_INDEX_BIN", "ndd-index"), "clusters", "--index", idx, "--threshold", t)
    return _partition(out.splitlines())


def _read_parts(d: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(d.glob("part-*")))


@pytest.fixture(scope="module")
def staged(spark, corpus, tmp_path_factory):
    """One run at T = 0.8 with 3 shuffle partitions that also writes a staging (3 parts):
    (result, OUT, STAGING). Shared by the equality test of that case and the adopt test, so
    the --index path costs no Spark run of its own."""
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    root = tmp_path_factory.mktemp("spark-staged")
    res = nspark.dedup(spark, corpus, threshold="0.8", index=root / "staging", index_parts=3)
    nspark.write(res, str(root / "out"))
    return res, root / "out", root / "staging"


@pytest.mark.parametrize("partitions", [1, 3, 7])
@pytest.mark.parametrize("threshold", ["0.8", "0.5"])
def test_pairs_and_clusters_equal_the_cli(spark, corpus, cli_index, tmp_path, threshold, partitions,
                                          request):
    if (threshold, partitions) == ("0.8", 3):
        res, out, _ = request.getfixturevalue("staged")
    else:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        res = nspark.dedup(spark, corpus, threshold=threshold)
        out = tmp_path / "out"
        nspark.write(res, str(out))

    raw = _read_parts(out / "pairs")
    want = _cli_pairs(cli_index, threshold)
    assert want, "the corpus has planted near-duplicates"
    # The written part files are globally sorted already.
    assert raw == want
    lines = raw.decode().splitlines()
    for line in lines:
        a, b, r = line.split("\t")
        assert a < b and len(r.split(".")[1]) == 6

    clusters = _read_parts(out / "clusters").decode().splitlines()
    assert _partition(clusters) == _cli_clusters(cli_index, threshold)
    # The representative is the oldest member in input order, and lists itself.
    pos = {r["key"]: r["pos"] for r in res.docs.collect()}
    by_rep = collections.defaultdict(list)
    for line in clusters:
        c, k = line.split("\t")
        by_rep[c].append(k)
    for rep, members in by_rep.items():
        assert rep in members and pos[rep] == min(pos[m] for m in members)

    s = json.loads((out / "summary.json").read_text())
    assert s["pairs"] == len(lines) and s["clustered_documents"] == len(clusters)
    errors = _read_parts(out / "errors").decode().splitlines()
    assert any(e.startswith("j-2\tduplicate key") for e in errors), errors
    assert any(e.startswith("j-3\t") for e in errors), errors
    assert s["documents"] == len(pos) == 160 + 60 + 3


def test_hot_feature_and_long_document(spark, tmp_path):
    """One shingle in every document, 80 tiny documents whose prefixes all hold it (a prefix
    group split into buckets with group_cap=8), and a 1.4 MB page with a near copy."""
    import random

    rnd = random.Random(5)
    words = [f"w{i}" for i in range(20000)]
    hot = "planted hot shingle in everything"
    d = tmp_path / "docs"
    d.mkdir()
    for i in range(80):
        (d / f"tiny-{i:03}.txt").write_text(f"{hot} u{i}\n")
    for i in range(40):
        body = " ".join(rnd.choice(words) for _ in range(150))
        (d / f"page-{i:03}.txt").write_text(f"{hot} {body}\n")
        if i % 4 == 0:
            edited = body.split()
            edited[rnd.randrange(len(edited))] = "edited"
            (d / f"page-{i:03}-copy.txt").write_text(f"{hot} {' '.join(edited)}\n")
    long = [rnd.choice(words) for _ in range(230_000)]
    (d / "long.html").write_text(f"<html><body><p>{hot} {' '.join(long)}</p></body></html>")
    long[1000] = "changed"
    (d / "long-copy.html").write_text(f"<html><body><p>{hot} {' '.join(long)}</p></body></html>")
    assert (d / "long.html").stat().st_size > 1_400_000

    cli = _bin("NDD_INDEX_BIN", "ndd-index")
    idx = tmp_path / "idx"
    _run(cli, "ingest", "--index", idx, d)
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    res = nspark.dedup(spark, [d], threshold="0.5", group_cap=8)
    out = tmp_path / "out"
    nspark.write(res, str(out))
    assert _read_parts(out / "pairs") == _cli_pairs(idx, "0.5")
    assert "long-copy.html\tlong.html\t" in _read_parts(out / "pairs").decode()
    assert res.stats["split_groups"] >= 1 and res.stats["largest_group"] >= 80
    assert _partition(_read_parts(out / "clusters").decode().splitlines()) == _cli_clusters(idx, "0.5")


def _verify_clean(idx: Path) -> dict:
    p = subprocess.run([str(_bin("NDD_INDEX_BIN", "ndd-index")), "verify", "--index", str(idx), "--json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, f"verify exited {p.returncode}: {p.stdout}{p.stderr}"
    rep = json.loads(p.stdout)
    assert rep["problems"] == [], rep
    return rep


def test_index_staging_adopted_equals_ingest(staged, corpus, cli_index, tmp_path):
    """dedup(index=STAGING) + `ndd-index adopt`: verify is clean, `pairs` on the adopted index
    equals the Spark output and a plain ingest's, the stored clusters are the ingest's (same
    ids: doc ids follow input order in both), and a nightly ingest continues on it."""
    cli = _bin("NDD_INDEX_BIN", "ndd-index")
    res, out, staging = staged
    st = res.stats["staging"]
    assert st["doc_lo"] == 0 and st["doc_hi"] == res.stats["documents"] == 223
    assert 2 <= st["parts"] <= 3, st  # one part per non-empty range partition

    idx = tmp_path / "idx"  # no index there yet: adopt creates it with the staging's options
    s = json.loads(_run(cli, "adopt", "--index", idx, staging, "--json"))
    assert s["documents"] == 223 and s["errors"] == res.stats["errors"] == 2
    assert len(s["segments"]) == st["parts"]
    rep = _verify_clean(idx)
    assert rep["live_documents"] == 223

    spark_pairs = _read_parts(out / "pairs")
    assert spark_pairs and _cli_pairs(idx, "0.8") == spark_pairs == _cli_pairs(cli_index, "0.8")
    assert _cli_pairs(idx, "0.5") == _cli_pairs(cli_index, "0.5")
    stored = lambda i: _run(cli, "clusters", "--index", i)  # noqa: E731
    assert stored(idx) == stored(cli_index) and stored(idx)
    # Catalog records: the same doc ids, clusters and partners as the ingest's (the batch
    # names differ: adopt-<run> and batch-000001).
    from ndd_index import Index

    keys = [r["key"] for r in res.docs.collect()]
    with Index.open(idx) as ix_a, Index.open(cli_index) as ix_b:
        for k in keys:
            a, b = ix_a.document(k), ix_b.document(k)
            a.pop("batch"), b.pop("batch")
            assert a == b, k

    # A nightly ingest of more documents continues on the adopted index as on a plain one.
    gen = _bin("NDD_GEN_BIN", "ndd-gen")
    night = tmp_path / "night"
    _run(gen, "--out", night, "--docs", "40", "--words", "120", "--sites", "2", "--seed", "4242",
         "--format", "warc", "--key-prefix", "n-", "--quiet")
    plain = tmp_path / "plain"
    _run(cli, "ingest", "--index", plain, *corpus)
    for i in (idx, plain):
        _run(cli, "ingest", "--index", i, "--quiet", "--batch", "night-1", night)
        _verify_clean(i)
    assert _cli_pairs(idx, "0.8") == _cli_pairs(plain, "0.8")
    assert stored(idx) == stored(plain)


def test_cli_entry_point(spark, corpus, tmp_path, capsys):
    """`python -m ndd_index.spark dedup` writes OUT/pairs, OUT/clusters, OUT/summary.json;
    bad options exit 2 before Spark starts. (The run itself goes through `main()` in this
    process, reusing the module's Spark session, which main() leaves running: not its own.)
    With --index: the staging adopted equals an ingest with the same creation options."""
    bad = subprocess.run(
        [sys.executable, "-m", "ndd_index.spark", "dedup", "--threshold", "0.8", "--out",
         str(tmp_path / "x"), "--sample", "nonsense", str(corpus[-1])],
        capture_output=True, text=True,
    )
    assert bad.returncode == 2 and "sampling" in bad.stderr, bad.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "ndd_index.spark", "dedup", "--threshold", "0.8", "--out",
         str(tmp_path / "x"), "--methods", "simhash", str(corpus[-1])],
        capture_output=True, text=True,
    )
    assert bad.returncode == 2 and "--methods needs --index" in bad.stderr, bad.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "ndd_index.spark", "dedup", "--threshold", "0.8", "--out",
         str(tmp_path / "x"), "--index", str(tmp_path / "st"), "--methods", "imatch", str(corpus[-1])],
        capture_output=True, text=True,
    )
    assert bad.returncode == 2 and "lexicon" in bad.stderr, bad.stderr
    out = tmp_path / "out"
    staging = tmp_path / "staging"
    rc = nspark.main(["dedup", "--master", "local[2]", "--threshold", "0.7", "--partitions", "2",
                      "--json", "--out", str(out), "--index", str(staging), "--cluster-threshold",
                      "0.7", "--methods", "simhash,dsc-ss", str(corpus[-1])])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["documents"] == 3 and s["errors"] == 2 and s["pairs"] == 1
    assert s["shuffle_partitions"] == 2
    cli = _bin("NDD_INDEX_BIN", "ndd-index")
    idx = tmp_path / "idx"
    _run(cli, "ingest", "--index", idx, "--cluster-threshold", "0.7", "--methods", "simhash,dsc-ss",
         corpus[-1])
    assert _read_parts(out / "pairs") == _cli_pairs(idx, "0.7")
    adopted = tmp_path / "adopted"
    _run(cli, "adopt", "--index", adopted, staging)
    _verify_clean(adopted)
    assert _cli_pairs(adopted, "0.7") == _cli_pairs(idx, "0.7")
    for method in ("simhash", "dsc-ss"):
        assert _run(cli, "pairs", "--index", adopted, "--method", method) == \
            _run(cli, "pairs", "--index", idx, "--method", method)
    assert _run(cli, "clusters", "--index", adopted) == _run(cli, "clusters", "--index", idx)
    assert json.loads((out / "summary.json").read_text())["pairs"] == 1
    assert _read_parts(out / "clusters").decode().splitlines() == ["j-2\tj-2", "j-2\tj-4"]
    assert nspark.main(["dedup", "--threshold", "0.7", "--out", str(out), str(corpus[-1])]) == 2
