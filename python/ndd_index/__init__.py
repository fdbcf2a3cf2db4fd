"""ndd_index: a persistent near-duplicate document index (Broder shingling with exact
resemblance, clusters kept across batches, deletes by key, batch or age).

    import ndd_index
    with ndd_index.Index.create("my.idx") as idx:
        report = idx.ingest([("a", "<p>one two three four five six</p>"),
                             ("b", "<p>one two three four five six</p>")], batch="day-1")
        print(report.summary["added"], list(idx.pairs(0.8)))

Everything runs in the Rust library (the same functions as the ``ndd-index`` CLI), without
the GIL. See README.md, section "Python".
"""

from ._errors import (
    ClosedIndexError,
    CorruptionError,
    DocumentError,
    Error,
    IndexExistsError,
    InvalidArgumentError,
    LockedError,
    NotAnIndexError,
    OptionError,
    StorageError,
)
from ._native import (
    IngestReport,
    Index,
    Match,
    Pairs,
    __version__,
    canonicalize,
    fingerprint,
)

__all__ = [
    "Index",
    "Match",
    "Pairs",
    "IngestReport",
    "canonicalize",
    "fingerprint",
    "Error",
    "CorruptionError",
    "LockedError",
    "OptionError",
    "InvalidArgumentError",
    "DocumentError",
    "NotAnIndexError",
    "IndexExistsError",
    "ClosedIndexError",
    "StorageError",
    "__version__",
]
