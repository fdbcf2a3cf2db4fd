"""Exceptions of ndd_index. Every one is an ``ndd_index.Error``; the message is the library's
(the text ``ndd-index`` prints after ``error:``). The native module raises them by name."""

from __future__ import annotations


class Error(Exception):
    """Base class of every ndd_index error."""


class CorruptionError(Error):
    """Stored bytes are damaged (checksum, magic, structure), or ``verify()`` found problems
    (then ``report`` holds its report dict and ``problems`` the count)."""


class LockedError(Error):
    """Another process (or Index object) holds the index's writer lock; ``holder`` names it."""


class OptionError(Error, ValueError):
    """A creation option is invalid, or disagrees with the one stored in the index
    (``option``, ``stored`` and ``given`` are then set)."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument value (threshold out of range, unknown method, key that is not valid
    UTF-8, index opened read-only, ...)."""


class DocumentError(Error, ValueError):
    """A document could not be read or canonicalized (``strict=True`` ingests, binary
    input); ``key`` and ``reason`` name it."""


class NotAnIndexError(Error, FileNotFoundError):
    """There is no index at the path."""


class IndexExistsError(Error, FileExistsError):
    """``Index.create`` found an index at the path already (pass ``exist_ok=True``)."""


class ClosedIndexError(Error, ValueError):
    """The Index was closed."""


class StorageError(Error, OSError):
    """An operating-system or RocksDB error on a named file."""


for _cls in (Error, CorruptionError, LockedError, OptionError, InvalidArgumentError, DocumentError,
             NotAnIndexError, IndexExistsError, ClosedIndexError, StorageError):
    _cls.__module__ = "ndd_index"  # shown as ndd_index.LockedError in tracebacks
del _cls

__all__ = [
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
]
