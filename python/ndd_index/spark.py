"""ndd_index.spark: the pairs and clusters of ``ndd-index`` from a Spark job.

    python -m ndd_index.spark dedup --master local[2] --threshold 0.8 --out OUT INPUT...

or, from a program that has a SparkSession::

    from ndd_index.spark import dedup
    res = dedup(spark, ["/data/crawl/"], threshold=0.8)
    res.pairs.show()      # key_a, key_b, resemblance (the CLI's `pairs` columns)
    res.clusters.show()   # cluster_key, key (representative = oldest document by input order)

The output is exactly what one index gives for the same inputs and creation options
(``ndd-index ingest`` then ``pairs --threshold T`` / ``clusters --threshold T``): every
document is read, canonicalized and fingerprinted by the Rust extension (the library's own
functions), candidate pairs come from a prefix filter whose prefix length and length bounds
are the library matcher's, and every candidate is verified by the library's exact comparison.

Stages (each a Spark operation; nothing holds the corpus on the driver or on one executor):

1. read + fingerprint, one task per input file (``mapInArrow``; Arrow batches out);
   a key seen again keeps its first occurrence in input order, as ingest does;
2. global document frequency of every feature, then each document's prefix: its
   ``|A| - m + 1`` rarest features (ties by feature value), m = the matcher's minimum overlap;
3. candidate pairs from shared prefix features, ids only, with the length bounds applied;
   a prefix group larger than ``group_cap`` is split into ``ceil(g / group_cap)`` buckets and
   every pair of buckets is joined in its own task (exact: each pair meets in exactly one);
4. exact verification of each candidate by the library (``Sample::verify``);
5. connected components by alternating large-star / small-star (Kiveris et al. 2014), the
   minimum input position as the label, so the representative is the oldest document;
6. with ``index=STAGING`` (``--index``): doc ids in input order (``first_doc`` on), the files
   read again for the raw documents of those ids, range-partitioned by id, and each partition
   written as one part of a staging (format-spec/staging.md) by the library: the segment
   ``ndd-index ingest`` writes for exactly those documents, plus their catalog records.
   ``ndd-index adopt --index DIR STAGING`` then publishes the staging into DIR in one step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

__all__ = ["dedup", "DedupResult", "list_inputs", "main"]

# Position of a document: (file index << 32) | (its item number within the file, rejected
# records counted too).
_FILE_SHIFT = 32

# Default documents per staged part (segment) with --index: fewer, larger segments than one
# per shuffle partition, as a nightly ingest writes one per batch.
_DOCS_PER_PART = 250_000

_DOC_SCHEMA = (
    "pos long, key string, n int, probes int, lo long, hi long, "
    "features array<long>, error string"
)


@dataclass
class DedupResult:
    """What :func:`dedup` computed. The DataFrames are lazy views over persisted stages."""

    pairs: Any  # DataFrame[key_a string, key_b string, resemblance string, a long, b long]
    clusters: Any  # DataFrame[cluster_key string, key string, label long, pos long]
    docs: Any  # DataFrame[pos long, key string, n int]
    errors: Any  # DataFrame[key string, reason string]
    stats: dict = field(default_factory=dict)


def _record_file(name: str) -> bool:
    """True for WARC and JSONL files (their records carry their own keys), as the CLI decides."""
    lower = name.lower()
    if lower.endswith(".gz"):
        lower = lower[:-3]
    return lower.endswith((".warc", ".jsonl", ".ndjson"))


def list_inputs(inputs: Iterable[str | os.PathLike]) -> list[tuple[str, str | None]]:
    """The files of ``inputs`` in the CLI's input order, as ``(path, key)``: a file named on
    the command line is keyed by its path as given (key None), a file found in a directory by
    its path relative to that directory (bytewise order, '/' separators, symbolic links to
    files followed, to directories not). Only names are listed, never contents."""
    out: list[tuple[str, str | None]] = []
    for inp in inputs:
        p = os.fspath(inp)
        if not os.path.isdir(p):
            out.append((p, None))  # missing files are reported by the reader, with their key
            continue
        files: list[tuple[bytes, str, str]] = []
        todo = [(p, "")]
        while todo:
            d, rel = todo.pop()
            with os.scandir(d) as it:
                for e in it:
                    rel2 = e.name if not rel else f"{rel}/{e.name}"
                    if e.is_dir(follow_symlinks=False):
                        todo.append((e.path, rel2))
                    elif e.is_file(follow_symlinks=True):
                        files.append((rel2.encode("utf-8", "surrogateescape"), e.path, rel2))
        files.sort()
        for _, path, rel in files:
            out.append((path, None if _record_file(rel) else rel))
    return out


def _tasks(files: list[tuple[str, str | None]], parallelism: int) -> list[list[tuple]]:
    """Groups the files into read tasks, in input order: a WARC or JSONL file is a task of its
    own; consecutive single-document files share a task up to a byte budget (the total over
    four tasks per core, at most 256 MiB) and a file count (the files over four tasks per core,
    at least 64), so a directory of small pages is not one task each."""
    sizes = []
    for path, _ in files:
        try:
            sizes.append(os.stat(path).st_size)
        except OSError:
            sizes.append(0)  # the reader reports it, with its key
    budget = max(1 << 16, min(256 << 20, sum(sizes) // max(1, 4 * parallelism)))
    # Also by count, for paths the driver cannot stat (sizes 0) and for many tiny files.
    most = max(64, -(-len(files) // max(1, 4 * parallelism)))
    tasks: list[list[tuple]] = []
    cur: list[tuple] = []
    used = 0
    for i, ((path, key), size) in enumerate(zip(files, sizes)):
        if key is None and _record_file(path):
            if cur:
                tasks.append(cur)
                cur, used = [], 0
            tasks.append([(i, path, key)])
            continue
        if cur and (used + size > budget or len(cur) >= most):
            tasks.append(cur)
            cur, used = [], 0
        cur.append((i, path, key))
        used += size
    if cur:
        tasks.append(cur)
    return tasks


def _plan_args(threshold, shingle_words, shingle_chars, sample, size_groups, extract=None) -> dict:
    return {
        "threshold": threshold if isinstance(threshold, str) else repr(float(threshold)),
        "shingle_words": shingle_words,
        "shingle_chars": shingle_chars,
        "sample": sample,
        "size_groups": size_groups,
        "extract": extract,
    }


def _fingerprint_task(plan_args: dict, read_args: dict):
    """mapInArrow body of stage 1: (file, path, key) rows -> one row per document."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        from ndd_index._native import SparkPlan

        plan = SparkPlan(**plan_args)
        for batch in batches:
            cols = batch.to_pydict()
            for fidx, path, key in zip(cols["file"], cols["path"], cols["key"]):
                for keys, feats, probes, lo, hi, errors, idx in plan.read_file(path, key, **read_args):
                    lens = np.fromiter((len(f) // 8 for f in feats), dtype=np.int64, count=len(feats))
                    offsets = np.zeros(len(feats) + 1, dtype=np.int32)
                    np.cumsum(lens, out=offsets[1:])
                    values = np.frombuffer(b"".join(feats), dtype="<i8")
                    # The item number in the file (rejected records count too), so that the
                    # staging's second read (`read_raw`) finds each document at the same pos.
                    pos = (fidx << _FILE_SHIFT) + np.asarray(idx, dtype=np.int64)
                    m = len(errors)
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array(np.concatenate([pos, np.full(m, -1, np.int64)])),
                            pa.array(list(keys) + [k for k, _ in errors], pa.string()),
                            pa.array(np.concatenate([lens, np.zeros(m, np.int64)]).astype(np.int32)),
                            pa.array(list(probes) + [0] * m, pa.int32()),
                            pa.array(list(lo) + [0] * m, pa.int64()),
                            pa.array(list(hi) + [0] * m, pa.int64()),
                            pa.ListArray.from_arrays(
                                pa.array(np.concatenate([offsets, np.full(m, offsets[-1], np.int32)])),
                                pa.array(values, pa.int64()),
                            ),
                            pa.array([None] * len(keys) + [r for _, r in errors], pa.string()),
                        ],
                        names=["pos", "key", "n", "probes", "lo", "hi", "features", "error"],
                    )

    return run


def _verify_task(plan_args: dict):
    """mapInArrow body of stage 4: candidate rows with both feature lists -> verified pairs."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from ndd_index._native import SparkPlan

        plan = SparkPlan(**plan_args)

        def blobs(col) -> list[bytes]:
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            off = col.offsets.to_numpy()
            vals = col.values.to_numpy(zero_copy_only=False).astype("<i8", copy=False)
            return [vals[off[i] : off[i + 1]].tobytes() for i in range(len(col))]

        for batch in batches:
            if batch.num_rows == 0:
                continue
            res = plan.verify(blobs(batch.column("fa")), blobs(batch.column("fb")))
            a = batch.column("a").to_pylist()
            b = batch.column("b").to_pylist()
            ka = batch.column("ka").to_pylist()
            kb = batch.column("kb").to_pylist()
            out = {"key_a": [], "key_b": [], "resemblance": [], "a": [], "b": []}
            for i, r in enumerate(res):
                if r is None:
                    continue
                x, y = (ka[i], kb[i]) if ka[i] <= kb[i] else (kb[i], ka[i])
                out["key_a"].append(x)
                out["key_b"].append(y)
                out["resemblance"].append(r)
                out["a"].append(a[i])
                out["b"].append(b[i])
            yield pa.RecordBatch.from_pydict(
                out,
                schema=pa.schema(
                    [
                        ("key_a", pa.string()),
                        ("key_b", pa.string()),
                        ("resemblance", pa.string()),
                        ("a", pa.int64()),
                        ("b", pa.int64()),
                    ]
                ),
            )

    return run


_RAW_SCHEMA = "pos long, rkey string, url string, data binary, html boolean, charset string"


def _raw_task(read_args: dict):
    """mapInArrow body of stage 6: (file, path, key) rows -> the raw documents, by pos."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from ndd_index._native import read_raw

        schema = pa.schema(
            [
                ("pos", pa.int64()),
                ("rkey", pa.string()),
                ("url", pa.string()),
                ("data", pa.binary()),
                ("html", pa.bool_()),
                ("charset", pa.string()),
            ]
        )
        jsonl = {k: v for k, v in read_args.items() if k.startswith("jsonl_")}
        for batch in batches:
            cols = batch.to_pydict()
            for fidx, path, key in zip(cols["file"], cols["path"], cols["key"]):
                for idx, keys, urls, data, html, charsets in read_raw(path, key, **jsonl):
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array([(fidx << _FILE_SHIFT) + i for i in idx], pa.int64()),
                            pa.array(keys, pa.string()),
                            pa.array(urls, pa.string()),
                            pa.array(data, pa.binary()),
                            pa.array(html, pa.bool_()),
                            pa.array(charsets, pa.string()),
                        ],
                        schema=schema,
                    )

    return run


def _stage_task(staging: str, options: str, mem_bytes: int):
    """mapInArrow body of stage 6: one partition's documents, in doc id order -> one part."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa
        from pyspark import TaskContext

        from ndd_index._native import StagedPart

        part = StagedPart(staging, TaskContext.get().partitionId(), options, mem_bytes)
        for batch in batches:
            c = batch.to_pydict()
            for doc, key, url, data, html, cs in zip(
                c["doc"], c["rkey"], c["url"], c["data"], c["html"], c["charset"]
            ):
                part.add(doc, key, url, data, html, cs)
        meta = part.finish()
        if meta is not None:
            yield pa.RecordBatch.from_pydict({"part": [meta]}, schema=pa.schema([("part", pa.string())]))

    return run


def _stage(spark, units, docs, stats: dict, *, staging: str, options: str, first_doc: int,
           parts: int, read_args: dict, mem_bytes: int) -> None:
    """Stage 6: writes the staging (see the module docs) and its manifest, last."""
    import uuid

    from ndd_index._native import write_staging

    # Doc ids in input order: a global sort of the positions, numbered by zipWithIndex
    # (which counts each partition, then numbers them in order; nothing on the driver).
    ids = spark.createDataFrame(
        docs.select("pos").orderBy("pos").rdd.map(lambda r: r[0]).zipWithIndex()
        .map(lambda t: (t[0], t[1] + first_doc)),
        "pos long, doc long",
    )
    # The files again, for the raw documents of the kept positions (a rejected or repeated
    # one finds no id), shuffled by id range: each partition holds consecutive ids.
    raw = units.mapInArrow(_raw_task(read_args), _RAW_SCHEMA)
    rows = (
        raw.join(ids, "pos")
        .repartitionByRange(parts, "doc")
        .sortWithinPartitions("doc")
        .select("doc", "rkey", "url", "data", "html", "charset")
    )
    conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(conf, None)
    spark.conf.set(conf, "64")  # raw documents: keep Arrow batches small
    try:
        metas = [r.part for r in rows.mapInArrow(_stage_task(staging, options, mem_bytes), "part string").collect()]
    finally:
        if before is None:
            spark.conf.unset(conf)
        else:
            spark.conf.set(conf, before)
    run = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
    write_staging(
        staging, options, metas, run=run, doc_lo=first_doc,
        doc_hi=first_doc + stats["documents"], errors=stats["errors"],
    )
    stats["staging"] = {
        "dir": staging,
        "run": run,
        "parts": len(metas),
        "doc_lo": first_doc,
        "doc_hi": first_doc + stats["documents"],
        "bytes": sum(json.loads(m)["bytes"] + json.loads(m)["records_bytes"] for m in metas),
    }


def _components(spark, edges, stats: dict):
    """Connected components of the undirected edges (x, y) (x != y) by alternating large-star
    and small-star until the edge set stops changing; returns (node, label) for every node of
    an edge, label = the smallest node of its component."""
    from pyspark.sql import functions as F

    e = edges.select(
        F.greatest("x", "y").alias("x"), F.least("x", "y").alias("y")
    ).distinct().localCheckpoint()
    rounds = 0
    while True:
        rounds += 1
        # Large-star: every node u links its larger neighbours to m(u) = min(u, N(u)).
        both = e.select(F.col("x").alias("u"), F.col("y").alias("v")).unionByName(
            e.select(F.col("y").alias("u"), F.col("x").alias("v"))
        )
        mins = both.groupBy("u").agg(F.min("v").alias("mv")).select(
            "u", F.least("u", "mv").alias("m")
        )
        large = (
            both.join(mins, "u")
            .where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("x"), F.col("m").alias("y"))
        )
        # Small-star: every node x links itself and its smaller neighbours to the smallest.
        smins = large.groupBy("x").agg(F.min("y").alias("m"))
        small = (
            large.join(smins, "x")
            .select(
                F.explode(F.array(F.col("x"), F.col("y"))).alias("x"), F.col("m").alias("y")
            )
            .where(F.col("x") != F.col("y"))
            .distinct()
            .localCheckpoint()
        )
        changed = small.exceptAll(e).unionByName(e.exceptAll(small)).limit(1).count()
        e = small
        if changed == 0:
            break
    stats["components_rounds"] = rounds
    roots = e.select(F.col("y").alias("node")).distinct().withColumn("label", F.col("node"))
    return e.select(F.col("x").alias("node"), F.col("y").alias("label")).unionByName(roots)


def dedup(
    spark,
    inputs: Iterable[str | os.PathLike],
    threshold: float | str = 0.8,
    *,
    shingle_words: int | None = None,
    shingle_chars: int | None = None,
    sample: str | None = None,
    size_groups: str | None = None,
    extract: str | None = None,
    jsonl_id: str = "id",
    jsonl_text: str = "text",
    jsonl_html: str = "html",
    group_cap: int = 2000,
    chunk: int = 1024,
    index: str | os.PathLike | None = None,
    first_doc: int = 0,
    index_parts: int | None = None,
    index_options: dict | None = None,
    index_mem: int = 256 << 20,
) -> DedupResult:
    """Every pair of ``inputs`` at resemblance >= ``threshold`` and their clusters (connected
    components), exactly as ``ndd-index ingest`` + ``pairs`` / ``clusters --threshold`` give
    them for the same creation options. Inputs are files or directories on a file system every
    executor sees at the same path. ``group_cap``: prefix groups larger than this are split
    across tasks (skew). Stages run (and are timed in ``stats``) as they are needed.

    ``index``: also write the corpus as a staging directory there (it must not exist, and be
    on a file system every executor sees), for ``ndd-index adopt --index DIR STAGING``: doc
    ids from ``first_doc`` (the next doc id of DIR; 0 for a new index), ``index_parts`` parts
    (default: one per 250,000 documents, at most spark.sql.shuffle.partitions), creation options of the index beyond the
    fingerprint ones in ``index_options`` (the keywords of ``Index.create``:
    cluster_threshold, methods, simhash_k, simhash_blocks, minhash, supershingle, b_agree,
    max_df), ``index_mem`` bytes of sort memory per part. ``extract``: "main" compares each
    HTML page's main content, as an index created with ``--extract main``."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType, IntegerType, StringType

    from ndd_index._native import SparkPlan

    if group_cap < 2:
        raise ValueError("group_cap must be at least 2")
    plan_args = _plan_args(threshold, shingle_words, shingle_chars, sample, size_groups, extract)
    SparkPlan(**plan_args)  # bad options fail here, on the driver, with the CLI's message
    staging = None
    if index is not None:
        from ndd_index._native import stage_options

        staging = os.path.abspath(os.fspath(index))
        if os.path.exists(staging):
            raise ValueError(f"index={staging}: the staging directory exists already")
        if first_doc < 0 or first_doc >= 1 << 32:
            raise ValueError("first_doc must be in 0..2^32")
        extra = dict(index_options or {})
        if extra.get("cluster_threshold") is not None:
            extra["cluster_threshold"] = str(extra["cluster_threshold"])
        if isinstance(extra.get("methods"), (list, tuple)):
            extra["methods"] = ",".join(extra["methods"])
        fp = {
            k: plan_args[k]
            for k in ("shingle_words", "shingle_chars", "sample", "size_groups", "extract")
        }
        staged_options = stage_options(**fp, **extra)
    read_args = {"chunk": chunk, "jsonl_id": jsonl_id, "jsonl_text": jsonl_text, "jsonl_html": jsonl_html}
    stats: dict = {"threshold": plan_args["threshold"], "group_cap": group_cap}
    timer = time.monotonic()

    def lap(name: str) -> None:
        nonlocal timer
        now = time.monotonic()
        stats.setdefault("seconds", {})[name] = round(now - timer, 3)
        timer = now

    disk = StorageLevel.MEMORY_AND_DISK

    # 1. read + fingerprint, one task per file.
    files = list_inputs(inputs)
    if not files:
        raise ValueError("no input files")
    if len(files) >= 1 << 31:
        raise ValueError("too many input files")
    stats["files"] = len(files)
    tasks = _tasks(files, spark.sparkContext.defaultParallelism)
    stats["read_tasks"] = len(tasks)
    units = spark.createDataFrame(
        spark.sparkContext.parallelize(tasks, numSlices=len(tasks)).flatMap(lambda t: t),
        StructType(
            [
                StructField("file", IntegerType(), False),
                StructField("path", StringType(), False),
                StructField("key", StringType(), True),
            ]
        ),
    )
    read = units.mapInArrow(_fingerprint_task(plan_args, read_args), _DOC_SCHEMA).persist(disk)
    bad = read.where(F.col("error").isNotNull()).select("key", F.col("error").alias("reason"))
    good = read.where(F.col("error").isNull()).drop("error")
    # A key repeated in the inputs keeps its first occurrence (ingest's rule).
    first = good.groupBy("key").agg(F.min("pos").alias("pos"))
    dup = (
        good.select("key", "pos")
        .join(first.withColumnRenamed("pos", "first"), "key")
        .where(F.col("pos") != F.col("first"))
        .select(
            "key",
            F.lit("duplicate key within the batch (the first occurrence was kept)").alias("reason"),
        )
    )
    docs = good.join(first, ["key", "pos"], "left_semi").persist(disk)
    errors = bad.unionByName(dup).persist(disk)
    c = docs.agg(F.count(F.lit(1)), F.sum("n")).first()
    stats["documents"], stats["features"] = int(c[0]), int(c[1] or 0)
    stats["errors"] = errors.count()
    lap("read_fingerprint")

    # 2. document frequencies, prefixes (rarest first, ties by feature value).
    exploded = docs.where(F.col("probes") > 0).select(
        "pos", "n", "probes", "lo", "hi", F.explode("features").alias("f")
    )
    df = exploded.groupBy("f").agg(F.count(F.lit(1)).alias("df"))
    w = Window.partitionBy("pos").orderBy("df", "f")
    prefix = (
        exploded.join(df, "f")
        .withColumn("rank", F.row_number().over(w))
        .where(F.col("rank") <= F.col("probes"))
        .select("f", "pos", "n", "lo", "hi")
        .persist(disk)
    )
    stats["prefix_records"] = prefix.count()
    lap("frequencies_prefixes")

    # 3. candidates: pairs of documents sharing a prefix feature, ids only. A large group of
    # g records is split into s = ceil(g / cap) buckets; bucket pair (i, j), i <= j, is one
    # join key, and each record goes to the s keys of its bucket.
    groups = prefix.groupBy("f").agg(F.count(F.lit(1)).alias("g"))
    salted = (
        prefix.join(groups, "f")
        .withColumn("s", F.ceil(F.col("g") / F.lit(group_cap)).cast("int"))
        .withColumn("bucket", F.pmod(F.xxhash64("pos"), F.col("s")).cast("int"))
        .withColumn("j", F.explode(F.sequence(F.lit(0), F.col("s") - 1)))
        .select(
            "f",
            "pos",
            "n",
            "lo",
            "hi",
            "bucket",
            F.least("bucket", "j").alias("b_lo"),
            F.greatest("bucket", "j").alias("b_hi"),
        )
    )
    big = groups.agg(F.count(F.when(F.col("g") > group_cap, 1)), F.max("g")).first()
    stats["split_groups"] = int(big[0] or 0)
    stats["largest_group"] = int(big[1] or 0)
    left = salted.alias("l")
    right = salted.alias("r")
    cand = (
        left.join(
            right,
            (F.col("l.f") == F.col("r.f"))
            & (F.col("l.b_lo") == F.col("r.b_lo"))
            & (F.col("l.b_hi") == F.col("r.b_hi"))
            & (F.col("l.pos") < F.col("r.pos"))
            & (
                ((F.col("l.bucket") == F.col("l.b_lo")) & (F.col("r.bucket") == F.col("l.b_hi")))
                | ((F.col("l.bucket") == F.col("l.b_hi")) & (F.col("r.bucket") == F.col("l.b_lo")))
            )
            & (F.col("r.n") >= F.col("l.lo"))
            & (F.col("r.n") <= F.col("l.hi")),
        )
        .select(F.col("l.pos").alias("a"), F.col("r.pos").alias("b"))
        .distinct()
        .persist(disk)
    )
    stats["candidates"] = cand.count()
    lap("candidates")

    # 4. exact verification by the library.
    feats = docs.select("pos", "key", "features")
    withf = (
        cand.join(feats.select(F.col("pos").alias("a"), F.col("key").alias("ka"), F.col("features").alias("fa")), "a")
        .join(feats.select(F.col("pos").alias("b"), F.col("key").alias("kb"), F.col("features").alias("fb")), "b")
        .select("a", "b", "ka", "kb", "fa", "fb")
    )
    pairs = withf.mapInArrow(
        _verify_task(plan_args),
        "key_a string, key_b string, resemblance string, a long, b long",
    ).persist(disk)
    stats["pairs"] = pairs.count()
    lap("verify")

    # 5. clusters: connected components of the pairs, labelled by the oldest document.
    comp = _components(spark, pairs.select(F.col("a").alias("x"), F.col("b").alias("y")), stats)
    keys = docs.select("pos", "key")
    clusters = (
        comp.join(keys.withColumnRenamed("pos", "node"), "node")
        .join(keys.select(F.col("pos").alias("label"), F.col("key").alias("cluster_key")), "label")
        .select("cluster_key", "key", "label", F.col("node").alias("pos"))
        .persist(disk)
    )
    c = clusters.agg(F.count(F.lit(1)), F.countDistinct("label")).first()
    stats["clustered_documents"], stats["clusters"] = int(c[0]), int(c[1])
    lap("components")

    # 6. the staging for `ndd-index adopt`.
    if staging is not None:
        _stage(
            spark, units, docs, stats, staging=staging, options=staged_options,
            first_doc=first_doc,
            parts=index_parts or max(1, min(int(spark.conf.get("spark.sql.shuffle.partitions")),
                                            -(-stats["documents"] // _DOCS_PER_PART))),
            read_args=read_args, mem_bytes=index_mem,
        )
        lap("staging")
    return DedupResult(
        pairs=pairs,
        clusters=clusters,
        docs=docs.select("pos", "key", "n"),
        errors=errors,
        stats=stats,
    )


def write(res: DedupResult, out: str) -> None:
    """OUT/pairs/ (``key_a<TAB>key_b<TAB>resemblance``, sorted), OUT/clusters/
    (``cluster_key<TAB>key``, sorted by the representative's position then key),
    OUT/errors/ (``key<TAB>reason``) as text part files, and OUT/summary.json."""
    from pyspark.sql import functions as F

    t = time.monotonic()
    (
        res.pairs.select(F.concat_ws("\t", "key_a", "key_b", "resemblance").alias("line"))
        .orderBy("line")
        .write.text(f"{out}/pairs")
    )
    (
        res.clusters.orderBy("label", "pos")
        .select(F.concat_ws("\t", "cluster_key", "key").alias("line"))
        .write.text(f"{out}/clusters")
    )
    res.errors.select(F.concat_ws("\t", "key", "reason").alias("line")).write.text(f"{out}/errors")
    res.stats.setdefault("seconds", {})["write"] = round(time.monotonic() - t, 3)
    if "://" in out and not out.startswith("file://"):
        spark = res.pairs.sparkSession
        spark.createDataFrame([(json.dumps(res.stats, indent=2),)], "value string").coalesce(
            1
        ).write.text(f"{out}/summary")
    else:
        Path(out.removeprefix("file://"), "summary.json").write_text(
            json.dumps(res.stats, indent=2) + "\n"
        )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ndd_index.spark", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dedup", help="pairs and clusters of INPUT... (files, directories, WARC, JSONL)")
    d.add_argument("--master", default=None, help="Spark master (default: spark-submit's, or local[*])")
    d.add_argument("--threshold", required=True, help="resemblance threshold T (0 < T <= 1)")
    d.add_argument("--out", required=True, help="output directory (must not exist)")
    d.add_argument("--shingle-words", type=int)
    d.add_argument("--shingle-chars", type=int)
    d.add_argument("--sample")
    d.add_argument("--size-groups")
    d.add_argument("--extract", choices=("body", "main"),
                   help="which text of an HTML page is compared (as ingest's --extract; default body)")
    d.add_argument("--max-df", type=int, help=argparse.SUPPRESS)
    d.add_argument("--jsonl-id", default="id")
    d.add_argument("--jsonl-text", default="text")
    d.add_argument("--jsonl-html", default="html")
    d.add_argument("--partitions", type=int, help="spark.sql.shuffle.partitions")
    d.add_argument("--group-cap", type=int, default=2000,
                   help="prefix groups larger than this are split across tasks (default 2000)")
    d.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    d.add_argument("--index", metavar="STAGING",
                   help="also write the corpus as ndd-index segments there, for "
                        "`ndd-index adopt --index DIR STAGING` (must not exist)")
    d.add_argument("--first-doc", type=int, default=0,
                   help="with --index: the first doc id (DIR's next doc id; default 0, a new index)")
    d.add_argument("--index-parts", type=int,
                   help="with --index: segments to write (default: one per 250,000 documents, "
                        "at most spark.sql.shuffle.partitions)")
    for opt in ("--cluster-threshold", "--methods"):
        d.add_argument(opt, help="with --index: creation option of the index (as ingest's)")
    for opt in ("--simhash-k", "--simhash-blocks", "--minhash", "--supershingle", "--b-agree"):
        d.add_argument(opt, type=int, help="with --index: creation option of the index (as ingest's)")
    d.add_argument("inputs", nargs="+", metavar="INPUT")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.max_df is not None:
        print("ndd_index.spark: --max-df is not supported: the job finds every pair exactly "
              "(hot features are split across tasks instead)", file=sys.stderr)
        return 2
    if args.shingle_words is not None and args.shingle_chars is not None:
        print("ndd_index.spark: --shingle-words and --shingle-chars exclude each other", file=sys.stderr)
        return 2
    out = args.out
    if "://" not in out and os.path.exists(out):
        print(f"ndd_index.spark: --out {out} already exists", file=sys.stderr)
        return 2
    index_options = {
        k: getattr(args, k)
        for k in ("cluster_threshold", "methods", "simhash_k", "simhash_blocks", "minhash",
                  "supershingle", "b_agree")
        if getattr(args, k) is not None
    }
    if args.index is None and index_options:
        print(f"ndd_index.spark: --{next(iter(index_options)).replace('_', '-')} needs --index",
              file=sys.stderr)
        return 2
    if args.index is not None:
        if os.path.exists(args.index):
            print(f"ndd_index.spark: --index {args.index} already exists", file=sys.stderr)
            return 2
        from ndd_index._native import stage_options

        try:
            stage_options(shingle_words=args.shingle_words, shingle_chars=args.shingle_chars,
                          sample=args.sample, size_groups=args.size_groups, extract=args.extract,
                          **index_options)
        except Exception as e:
            print(f"ndd_index.spark: {e}", file=sys.stderr)
            return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ndd_index._native import SparkPlan

    try:
        SparkPlan(**_plan_args(args.threshold, args.shingle_words, args.shingle_chars,
                               args.sample, args.size_groups, args.extract))
    except Exception as e:  # the library's option error, before Spark starts
        print(f"ndd_index.spark: {e}", file=sys.stderr)
        return 2
    b = SparkSession.builder.appName("ndd-index dedup").config(
        "spark.ui.showConsoleProgress", "false"
    )
    if args.master:
        b = b.master(args.master)
    if args.partitions:
        b = b.config("spark.sql.shuffle.partitions", str(args.partitions))
    ours = SparkSession.getActiveSession() is None
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        res = dedup(
            spark,
            args.inputs,
            args.threshold,
            shingle_words=args.shingle_words,
            shingle_chars=args.shingle_chars,
            sample=args.sample,
            size_groups=args.size_groups,
            extract=args.extract,
            jsonl_id=args.jsonl_id,
            jsonl_text=args.jsonl_text,
            jsonl_html=args.jsonl_html,
            group_cap=args.group_cap,
            index=args.index,
            first_doc=args.first_doc,
            index_parts=args.index_parts,
            index_options=index_options,
        )
        res.stats["shuffle_partitions"] = int(spark.conf.get("spark.sql.shuffle.partitions"))
        res.stats["master"] = spark.sparkContext.master
        write(res, out)
        if args.json:
            print(json.dumps(res.stats, indent=2))
        else:
            s = res.stats
            print(f"{s['documents']} documents ({s['errors']} errors), {s['candidates']} candidates, "
                  f"{s['pairs']} pairs, {s['clusters']} clusters -> {out}", file=sys.stderr)
            if "staging" in s:
                st = s["staging"]
                print(f"staging: {st['parts']} parts, doc ids {st['doc_lo']}..{st['doc_hi']} -> "
                      f"{st['dir']} (ndd-index adopt --index DIR {st['dir']})", file=sys.stderr)
    finally:
        if ours:  # a session the caller made (a notebook, a test) stays theirs
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
