"""ragqa: question answering over collections of ML-paper abstracts, with verified citations.

The Python API (docs/python-api.md) is `ragqa.open()`, which returns a `ragqa.Collection`; it and
the typed results are imported on first use, so that `import ragqa` (and `ragqa --help`) stays
light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragqa.version import __version__

if TYPE_CHECKING:
    from ragqa.api import Chat, Collection
    from ragqa.api import open as open

# Not `open`: `from ragqa import *` must not hide the builtin (`ragqa.open` is the way in).
__all__ = ["Chat", "Collection", "__version__"]
_API = ("Chat", "Collection", "open")


def __getattr__(name: str) -> Any:
    if name in _API:
        from ragqa import api

        return getattr(api, name)
    raise AttributeError(f"module 'ragqa' has no attribute {name!r}")
