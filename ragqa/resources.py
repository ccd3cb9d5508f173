"""Files that ship with ragqa: the bundled seeds, the default prompts, the data files
(ragqa/data: reference backgrounds, the ML glossary) and the vendored tokenizer.

In a wheel they are package data (ragqa/seeds, ragqa/prompts); in a source checkout they sit at
the top of the repository, where pyproject.toml maps them from.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).parent
DATA_DIR = _PACKAGE / "data"
TOKENIZER_FILE = _PACKAGE / "tokenizer" / "tokenizer.json"


def bundled_dir(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir() and any(candidate.glob("*.txt")):
            return candidate
    raise FileNotFoundError(f"the bundled {name}/ folder is missing from this installation")


def seed_files() -> list[Path]:
    return sorted(bundled_dir("seeds").glob("*.txt"))
