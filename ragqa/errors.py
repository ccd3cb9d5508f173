"""The errors ragqa raises on purpose, and how every face reports them.

Two kinds, one rule each:
- `UserError`: the request or its input is wrong (a bad option, file, setting, id). Retrying the
  same thing fails again. Exit code 2; HTTP 400, or 404/413/422 for the subclasses that say so.
- `ServiceError`: something ragqa depends on failed (Chroma, a model file, the LLM, the disk, a
  lock held too long). The same request may succeed later. Exit code 1; HTTP 503.

Anything else that escapes is a bug: exit code 1 and "internal error: <type>", HTTP 500. The CLI,
the HTTP server and MCP map errors with `exit_code`, `http_status` and `error_message` below,
and nowhere else.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ragqa.text import safe


class RagqaError(Exception):
    """An error ragqa raises on purpose, with a message meant for the user."""

    exit_code = 1
    http_status = 500


class UserError(RagqaError, ValueError):
    """Bad arguments or input (exit code 2; HTTP 400)."""

    exit_code = 2
    http_status = 400


class NotFound(UserError):
    """No such paper, session or collection (HTTP 404)."""

    http_status = 404


class TooLarge(UserError):
    """A request body or field over its limit (HTTP 413)."""

    http_status = 413


class InvalidField(UserError):
    """A request field of the wrong type or out of its bounds (HTTP 422)."""

    http_status = 422


class MissingExtra(UserError):
    """An optional part of ragqa that this install lacks (HTTP 501): `pip install 'ragqa[x]'`."""

    http_status = 501


def require_extra(module: str, extra: str, what: str) -> None:
    """MissingExtra unless `module` (of the extra `extra`) can be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(f"{what} needs ragqa's {extra!r} extra: pip install 'ragqa[{extra}]'")


class ConfigError(UserError):
    """A setting has a value ragqa cannot use."""


class CorpusError(UserError):
    """Bad input, located at a file and line."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


class IndexMismatchError(UserError):
    """The collection was built by another embedder than the one configured."""


class ServiceError(RagqaError, RuntimeError):
    """A service or resource ragqa depends on failed (exit code 1; HTTP 503)."""

    exit_code = 1
    http_status = 503


class StoreError(ServiceError):
    """Chroma cannot be reached or refused an operation."""


class SnapshotError(ServiceError):
    """The BM25 snapshot cannot be written (a full disk, a read-only folder)."""


class LockTimeout(ServiceError):
    """Another ingest of the same collection held its lock for longer than RAGQA_LOCK_TIMEOUT."""


class EmbeddingError(ServiceError):
    """The embedder failed: its files are missing or not the pinned ones, or its server
    failed."""


class RerankError(ServiceError):
    """The cross-encoder's files are missing or not the pinned ones."""


class GlossaryError(ServiceError):
    """The Chinese-English dictionary is missing or not the pinned file."""


class LLMError(ServiceError):
    """The configured LLM failed (unreachable, refused, timed out, or answered nothing)."""


class DiskFullError(ServiceError):
    """A write failed, or was refused before it started, because the disk is full: ENOSPC or
    EDQUOT, SQLite's "database or disk is full", or Chroma's errors that wrap them. One line
    that says so, where (`path`, or `server` for a Chroma server's disk), how much is free,
    what state the data is in (`state`, "" if nothing needs saying) and what to do (`advice`).
    `damaged`: the failed write may have left Chroma's files half-written (see
    index/store.py), so no "intact" may be claimed."""

    def __init__(self, path: Path | str | None = None, free: int | None = None, *,
                 server: str = "", needed: int | None = None, state: str = "",
                 advice: str = "free space and try again", damaged: bool = False) -> None:
        self.path, self.free, self.server, self.needed = path, free, server, needed
        self.state, self.advice, self.damaged = state, advice, damaged
        if server:
            where = f" on the Chroma server at {server}"
        elif path is not None:
            room = f"{format_bytes(free)} free" if free is not None else "no space left"
            needs = f", and this write needs about {format_bytes(needed)}" if needed else ""
            where = f" ({room} on the disk holding {path}{needs})"
        else:
            where = ""
        super().__init__("; ".join(part for part in (f"the disk is full{where}", state, advice)
                                   if part))

    def with_state(self, state: str, advice: str) -> DiskFullError:
        """The same disk, with what a caller knows of the data (an ingest: its collection)."""
        return DiskFullError(self.path, self.free, server=self.server, needed=self.needed,
                             state=state, advice=advice, damaged=self.damaged)


# What a full disk says through libraries that do not keep the OSError: SQLite (code 13), and
# Chroma's Rust core (its io errors end in "(os error 28)").
_DISK_FULL_TEXTS = ("database or disk is full", "no space left on device", "disk quota exceeded",
                    "(os error 28)", "(os error 122)")
# numpy's `tofile` (np.save, and bm25s's files through it) reports a short write as an OSError
# without errno: "506880 requested and 11232 written". Only a full disk cuts a file write short.
_SHORT_WRITE = re.compile(r"^\d+ requested and \d+ written$")


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk (or the user's quota) is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if isinstance(exc, OSError) and exc.errno is None and _SHORT_WRITE.match(str(exc)):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _DISK_FULL_TEXTS)


def free_bytes(path: Path | str) -> int | None:
    """Bytes an unprivileged process may still write on the disk holding `path` (or its
    nearest existing parent); None if that cannot be told."""
    place = Path(path)
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        stat = os.statvfs(place)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def format_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def disk_full_error(exc: BaseException, path: Path | str | None = None) -> DiskFullError | None:
    """`exc` as a DiskFullError if it says the disk is full, else None. `path`: where the write
    went, when `exc` does not say (an OSError names its file)."""
    if isinstance(exc, DiskFullError):
        return exc
    if not is_disk_full(exc):
        return None
    path = path if path is not None else getattr(exc, "filename", None)
    return DiskFullError(path, free_bytes(path) if path is not None else None)


def exit_code(exc: BaseException) -> int | None:
    """2 for bad input or usage, 1 for a runtime failure, None for a bug. A bare OSError (a
    file that cannot be written) is a runtime failure too."""
    if isinstance(exc, RagqaError):
        return exc.exit_code
    if isinstance(exc, OSError) or is_disk_full(exc):  # SQLite's full disk is no OSError
        return 1
    return None


def http_status(exc: BaseException) -> int:
    """The HTTP status of an error raised by an operation (the CLI's exit codes, over HTTP)."""
    if not isinstance(exc, RagqaError) and is_disk_full(exc):
        return DiskFullError.http_status
    return exc.http_status if isinstance(exc, RagqaError) else 500


def error_message(exc: BaseException) -> str:
    """One line, no traceback; a bug says only its type (its message may hold anything)."""
    exc = disk_full_error(exc) or exc  # a full disk anywhere says so, and where
    if http_status(exc) == 500:
        return f"internal error: {type(exc).__name__}"
    return " ".join(safe(str(exc)).split())[:500] or type(exc).__name__
