"""Type stubs of ndd_index (the native classes live in ndd_index._native)."""

import datetime
import pathlib
import os
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

from ._errors import (
    ClosedIndexError as ClosedIndexError,
    CorruptionError as CorruptionError,
    DocumentError as DocumentError,
    Error as Error,
    IndexExistsError as IndexExistsError,
    InvalidArgumentError as InvalidArgumentError,
    LockedError as LockedError,
    NotAnIndexError as NotAnIndexError,
    OptionError as OptionError,
    StorageError as StorageError,
)

__version__: str

StrPath = Union[str, os.PathLike[str]]
Text = Union[str, bytes]
Size = Union[int, str]
ThresholdLike = Union[float, str]
Docs = Union[
    StrPath,
    Iterable[StrPath],
    Iterable[tuple[str, Text]],
    Mapping[str, Text],
]

class Match:
    """A query hit: key, resemblance (the method's similarity), containment (shingle),
    cluster (the hit's cluster id); unpacks as (key, resemblance, containment, cluster)."""

    key: str
    resemblance: float
    containment: float | None
    cluster: int | None
    doc: int
    method: str
    shared: int | None
    hamming: int | None
    agree: int | None
    def __iter__(self) -> Iterator[Any]: ...
    def as_dict(self) -> dict[str, Any]: ...

class IngestReport:
    """One dict per input document (key, status, doc, exact_duplicate_of, near_duplicate,
    cluster; error for a rejected one) and the run's summary."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    def __iter__(self) -> Iterator[dict[str, Any]]: ...
    @property
    def summary(self) -> dict[str, Any]: ...
    @property
    def errors(self) -> list[dict[str, Any]]: ...
    @property
    def compaction(self) -> dict[str, Any] | None: ...

class Pairs:
    """A stream of (key_a, key_b, resemblance), key_a <= key_b, in the CLI's order."""

    def __iter__(self) -> Pairs: ...
    def __next__(self) -> tuple[str, str, float]: ...
    def to_list(self) -> list[tuple[str, str, float]]: ...
    def to_arrow(self) -> Any:
        """The remaining pairs as a pyarrow.Table (key_a, key_b, resemblance)."""
    @property
    def stats(self) -> dict[str, Any] | None: ...

class Index:
    """A near-duplicate index on disk; a context manager."""

    @staticmethod
    def create(
        path: StrPath,
        *,
        shingle_words: int | None = None,
        shingle_chars: int | None = None,
        sample: str | None = None,
        size_groups: str | None = None,
        cluster_threshold: ThresholdLike | None = None,
        methods: str | list[str] | None = None,
        simhash_k: int | None = None,
        simhash_blocks: int | None = None,
        minhash: int | None = None,
        supershingle: int | None = None,
        b_agree: int | None = None,
        imatch_filter: str | None = None,
        simhash_weight: str | None = None,
        max_df: int | None = None,
        imatch_lexicon: StrPath | None = None,
        site: str | None = None,
        extract: str | None = None,
        exist_ok: bool = False,
    ) -> Index:
        """A new index (defaults: shingle_words=5, sample="all", cluster_threshold=0.8,
        methods="simhash"), open for writing."""
    @staticmethod
    def open(path: StrPath, readonly: bool = False) -> Index: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def options(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def refresh(self) -> None: ...
    def __enter__(self) -> Index: ...
    def __exit__(self, *args: object) -> bool: ...
    def ingest(
        self,
        docs: Docs,
        *,
        batch: str | None = None,
        strict: bool = False,
        mem: Size | None = None,
        matching: str = "auto",
        format: str | None = None,
        encoding: str = "utf-8",
        jsonl_id: str = "id",
        jsonl_text: str = "text",
        jsonl_html: str = "html",
        max_doc_bytes: Size | None = None,
        compact: bool = True,
    ) -> IngestReport: ...
    def add(
        self,
        docs: Docs,
        *,
        batch: str | None = None,
        strict: bool = False,
        fold_docs: int = 1024,
        fold_bytes: Size | None = None,
        format: str | None = None,
        encoding: str = "utf-8",
        jsonl_id: str = "id",
        jsonl_text: str = "text",
        jsonl_html: str = "html",
        max_doc_bytes: Size | None = None,
    ) -> IngestReport: ...
    def query(
        self,
        html: Text,
        *,
        threshold: ThresholdLike | None = None,
        top: int = 10,
        method: str = "shingle",
        max_df: int | None = None,
        name: str | None = None,
        format: str | None = None,
        encoding: str = "utf-8",
    ) -> list[Match]: ...
    def query_many(
        self,
        htmls: Iterable[Text],
        *,
        threshold: ThresholdLike | None = None,
        top: int = 10,
        method: str = "shingle",
        max_df: int | None = None,
        names: list[str] | None = None,
        format: str | None = None,
        encoding: str = "utf-8",
    ) -> list[list[Match]]: ...
    def pairs(
        self,
        threshold: ThresholdLike | None = None,
        *,
        method: str = "shingle",
        max_df: int | None = None,
        mem: Size | None = None,
        matching: str = "auto",
    ) -> Pairs: ...
    def clusters(
        self, threshold: ThresholdLike | None = None, *, method: str = "shingle"
    ) -> dict[int, list[str]]: ...
    def cluster_of(self, key: str) -> int: ...
    def members(self, cluster: int) -> list[str]: ...
    def document(self, key: str) -> dict[str, Any] | None: ...
    def __contains__(self, key: str) -> bool: ...
    def __len__(self) -> int: ...
    def delete(self, keys: str | Iterable[str]) -> dict[str, Any]: ...
    def delete_batch(self, name: str) -> dict[str, Any]: ...
    def delete_older_than(
        self, date: str | int | datetime.date | datetime.datetime
    ) -> dict[str, Any]: ...
    def compact(self, full: bool = False) -> dict[str, Any]: ...
    def verify(self) -> dict[str, Any]: ...
    def stats(self) -> dict[str, Any]: ...
    def runs(
        self,
        runs: Sequence[str | os.PathLike[str]],
        *,
        qrels: str | os.PathLike[str] | None = None,
        threshold: float | None = None,
        top: Sequence[int] | None = None,
        strict: bool = False,
        dedup_run: str | os.PathLike[str] | None = None,
        mem: int | str | None = None,
    ) -> dict[str, Any]: ...
    def fingerprint(
        self, html: Text, *, format: str | None = None, encoding: str = "utf-8"
    ) -> dict[str, Any]: ...

def canonicalize(
    html: Text, *, format: str | None = None, encoding: str = "utf-8", extract: str = "body"
) -> str: ...
def fingerprint(
    html: Text,
    *,
    shingle_words: int | None = None,
    shingle_chars: int | None = None,
    sample: str | None = None,
    size_groups: str | None = None,
    format: str | None = None,
    encoding: str = "utf-8",
    extract: str | None = None,
) -> dict[str, Any]: ...
