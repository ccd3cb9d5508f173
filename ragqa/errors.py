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


def exit_code(exc: BaseException) -> int | None:
    """2 for bad input or usage, 1 for a runtime failure, None for a bug. A bare OSError (a
    file that cannot be written) is a runtime failure too."""
    if isinstance(exc, RagqaError):
        return exc.exit_code
    if isinstance(exc, OSError):
        return 1
    return None


def http_status(exc: BaseException) -> int:
    """The HTTP status of an error raised by an operation (the CLI's exit codes, over HTTP)."""
    return exc.http_status if isinstance(exc, RagqaError) else 500


def error_message(exc: BaseException) -> str:
    """One line, no traceback; a bug says only its type (its message may hold anything)."""
    if http_status(exc) == 500:
        return f"internal error: {type(exc).__name__}"
    return " ".join(safe(str(exc)).split())[:500] or type(exc).__name__
