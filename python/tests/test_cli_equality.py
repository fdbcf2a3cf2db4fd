"""The Python API and the CLI give the same answers on the same index: pairs, clusters, query,
reports and stats, on generated pages (tools/gen-corpus) and on a slice of the shared llvm-docs
corpus. Both call the same library functions; these tests check that nothing is lost or
re-implemented in between."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ndd_index as ndd
from conftest import cli_clusters, cli_pairs, load_docs, py_pairs_lines, run_cli, run_python

BATCHES = ["batch-01", "batch-02"]


@pytest.fixture(scope="module")
def gen_indexes(tmp_path_factory, corpus, cli):
    """The generated corpus indexed twice: from (key, html) tuples in Python, and from its
    folders by the CLI; with both reports of the second batch."""
    base = tmp_path_factory.mktemp("eq")
    py_idx, cli_idx = base / "py", base / "cli"
    with ndd.Index.create(py_idx) as ix:
        reports = [list(ix.ingest(load_docs(corpus / b), batch=b)) for b in BATCHES]
    cli_reports = []
    for b in BATCHES:
        rep = base / f"{b}.jsonl"
        run_cli(cli, "ingest", "--index", cli_idx, "--batch", b, "--report", rep, "--quiet", corpus / b)
        cli_reports.append([json.loads(l) for l in rep.read_text().splitlines()])
    return py_idx, cli_idx, reports, cli_reports


def test_generated_reports_equal(gen_indexes):
    _, _, reports, cli_reports = gen_indexes
    for py_rep, cli_rep in zip(reports, cli_reports):
        assert len(py_rep) == len(cli_rep) > 200
        for p, c in zip(py_rep, cli_rep):
            c.pop("origin", None)
            p.pop("origin", None)
            assert p == c
    assert any(r.get("near_duplicate") for r in reports[1])


@pytest.mark.parametrize("threshold", ["0.8", "0.5", "0.95"])
def test_generated_pairs_equal(gen_indexes, cli, threshold):
    py_idx, cli_idx, _, _ = gen_indexes
    with ndd.Index.open(py_idx, readonly=True) as ix:
        mine = py_pairs_lines(ix.pairs(float(threshold)))
    assert len(mine) > (20 if threshold != "0.95" else 0)
    assert mine == cli_pairs(cli, py_idx, threshold)  # the CLI on the Python-built index
    assert mine == cli_pairs(cli, cli_idx, threshold)  # the CLI-built index: same content
    with ndd.Index.open(cli_idx, readonly=True) as ix:
        assert py_pairs_lines(ix.pairs(threshold, matching="join", mem="16MiB")) == mine


def test_generated_clusters_and_stats_equal(gen_indexes, cli):
    py_idx, cli_idx, _, _ = gen_indexes
    with ndd.Index.open(py_idx, readonly=True) as ix:
        mine = ix.clusters()
        assert len(mine) > 10
        assert list(mine.items()) == list(cli_clusters(cli, py_idx).items())
        assert list(mine.items()) == list(cli_clusters(cli, cli_idx).items())
        stats = json.loads(run_cli(cli, "stats", "--json", "--index", cli_idx).stdout)
        assert len(ix) == ix.stats()["documents"] == stats["documents"]
        for cid, keys in list(mine.items())[:5]:
            assert ix.members(cid) == keys and all(ix.cluster_of(k) == cid for k in keys)
        other = ix.clusters(0.6)
        out = run_cli(cli, "clusters", "--index", py_idx, "--threshold", "0.6").stdout
        assert sum(len(v) for v in other.values()) == len(out.splitlines())


def test_generated_query_equal(gen_indexes, cli, corpus):
    _, cli_idx, _, _ = gen_indexes
    files = sorted((corpus / "batch-02").rglob("*.html"))[:12]
    out = run_cli(cli, "query", "--json", "--index", cli_idx, "--top", "0", "--threshold", "0.3", *files).stdout
    answers = [json.loads(l) for l in out.splitlines()]
    assert len(answers) == len(files)
    with ndd.Index.open(cli_idx, readonly=True) as ix:
        many = ix.query_many([f.read_bytes() for f in files], threshold=0.3, top=0,
                             names=[str(f) for f in files])
        for f, ans, hits in zip(files, answers, many):
            mine = ix.query(f.read_text(), threshold=0.3, top=0, name=str(f))
            assert mine == hits
            assert [(h.key, h.resemblance, h.containment, h.cluster, h.doc, h.shared) for h in mine] == [
                (h["key"], h["resemblance"], h["containment"], h["cluster"], h["doc"], h["shared"])
                for h in ans["hits"]
            ]
            assert mine and mine[0].resemblance == 1.0  # the page itself is indexed


def test_delete_persists_for_the_cli_and_other_processes(gen_indexes, cli, tmp_path):
    py_idx, cli_idx, _, _ = gen_indexes
    import shutil

    a, b = tmp_path / "py", tmp_path / "cli"
    shutil.copytree(py_idx, a)
    shutil.copytree(cli_idx, b)
    with ndd.Index.open(a) as ix:
        victims = sorted({p[0] for p in ix.pairs(0.8)})[:3]
        s = ix.delete(victims)
        assert s["deleted"] == 3
        ix.delete_batch("batch-02")
    run_cli(cli, "delete", "--index", b, *victims)
    run_cli(cli, "delete", "--index", b, "--batch", "batch-02")
    assert cli_pairs(cli, a) == cli_pairs(cli, b)
    assert cli_clusters(cli, a) == cli_clusters(cli, b)
    code = (
        "import json, sys, ndd_index\n"
        "with ndd_index.Index.open(sys.argv[1]) as ix:\n"
        "    print(json.dumps({'len': len(ix), 'in': [k in ix for k in sys.argv[2:]],"
        " 'pairs': [f'{x}\\t{y}\\t{r:.6f}' for x, y, r in ix.pairs(0.8)], 'verify': ix.verify()['problems']}))\n"
    )
    p = run_python(code, str(a), *victims)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["in"] == [False] * 3 and out["verify"] == []
    assert out["pairs"] == cli_pairs(cli, b)
    stats = json.loads(run_cli(cli, "stats", "--json", "--index", b).stdout)
    assert out["len"] == stats["documents"]


def test_llvm_slice_equal(llvm_slice, cli, tmp_path):
    """Real pages: CommandGuide of llvm 14/15/16 and clang (many near-identical versions)."""
    docs = load_docs(llvm_slice)
    py_idx, cli_idx = tmp_path / "py", tmp_path / "cli"
    with ndd.Index.create(py_idx) as ix:
        rep = ix.ingest(docs, batch="llvm")
        assert rep.summary["added"] + rep.summary["errors"] == len(docs)
    run_cli(cli, "ingest", "--index", cli_idx, "--batch", "llvm", "--quiet", llvm_slice)
    with ndd.Index.open(py_idx, readonly=True) as ix:
        for t in ("0.8", "0.5"):
            mine = py_pairs_lines(ix.pairs(t))
            assert mine == cli_pairs(cli, cli_idx, t) == cli_pairs(cli, py_idx, t)
        assert len(py_pairs_lines(ix.pairs(0.8))) > 30
        assert list(ix.clusters().items()) == list(cli_clusters(cli, cli_idx).items())
        key, html = docs[len(docs) // 2]
        f = llvm_slice / key
        ans = json.loads(run_cli(cli, "query", "--json", "--index", cli_idx, f).stdout)
        mine = ix.query(html, name=str(f))
        assert [(h.key, h.resemblance, h.containment, h.cluster) for h in mine] == [
            (h["key"], h["resemblance"], h["containment"], h["cluster"]) for h in ans["hits"]
        ]
        assert mine[0].key == key


def test_runs_equal_to_the_cli(gen_indexes, cli, tmp_path):
    """`Index.runs` (TREC runs, Nikkhoo's measures) gives the CLI's `runs --json` report, and
    its dedup_run writes the CLI's files. The runs rank the index's own keys: two topics, two
    runs, ranked by hand from pairs the index holds, plus one docno it does not hold."""
    py_idx, _, _, _ = gen_indexes
    with ndd.Index.open(py_idx, readonly=True) as ix:
        pairs = [p for p in ix.pairs(0.5)][:12]
    assert len(pairs) >= 6

    keys = list(dict.fromkeys(k for a, b, _ in pairs for k in (a, b)))  # each once, in order
    run_a = tmp_path / "a.run"
    run_b = tmp_path / "b.run"
    lines_a, lines_b = [], []
    for topic, part in (("1", keys[: len(keys) // 2]), ("2", keys[len(keys) // 2 :])):
        for i, k in enumerate(part):
            lines_a.append(f"{topic} Q0 {k} {i + 1} {100 - i} runA")
        for i, k in enumerate(reversed(part)):
            lines_b.append(f"{topic} Q0 {k} {i + 1} {100 - i} runB")
    lines_b.append("2 Q0 not-in-the-index 99 1 runB")
    run_a.write_text("\n".join(lines_a) + "\n")
    run_b.write_text("\n".join(lines_b) + "\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"1 0 {k} 1\n" for k in keys[:6]))
    out = run_cli(
        cli, "runs", "--index", py_idx, "--json", "--top", "5,10", "--threshold", "0.6",
        "--qrels", qrels, "--dedup-run", tmp_path / "cli-dedup", run_a, run_b,
    )
    want = json.loads(out.stdout)
    with ndd.Index.open(py_idx, readonly=True) as ix:
        got = ix.runs([run_a, run_b], qrels=qrels, threshold=0.6, top=[5, 10],
                      dedup_run=tmp_path / "py-dedup")
    assert got.pop("seconds") >= 0 and want.pop("seconds") >= 0  # timings differ, all else not
    assert got == want
    assert got["unresolved"]["count"] == 1
    assert any(r["redundant"] > 0 for r in got["run_topics"])
    for f in ("a.run", "b.run"):
        assert (tmp_path / "py-dedup" / f).read_text() == (tmp_path / "cli-dedup" / f).read_text()
    # `mem` bounds the topics' inverted indexes (as `runs --mem`): the least budget (1 MiB, in
    # bytes or as a size) gives the same report; a smaller one is refused.
    out_mem = run_cli(
        cli, "runs", "--index", py_idx, "--json", "--top", "5,10", "--threshold", "0.6",
        "--qrels", qrels, "--mem", "1MiB", run_a, run_b,
    )
    want_mem = json.loads(out_mem.stdout)
    want_mem.pop("seconds")
    with ndd.Index.open(py_idx, readonly=True) as ix:
        for mem in ("1MiB", 1 << 20):
            got = ix.runs([run_a, run_b], qrels=qrels, threshold=0.6, top=[5, 10], mem=mem)
            got.pop("seconds")
            assert got == want_mem == want
        with pytest.raises((ValueError, ndd.Error), match="mem"):
            ix.runs([run_a, run_b], mem=1000)
    with ndd.Index.open(py_idx, readonly=True) as ix, pytest.raises(ndd.Error, match="missing.run"):
        ix.runs([tmp_path / "missing.run"])
