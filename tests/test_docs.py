"""The documentation names only files that exist, its module map matches the tree, and the
README stays a short page for users."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PATH = re.compile(r"(?<![\w/.-])((?:ragqa|bench|tests|docs|prompts|seeds)/[\w./-]*[\w/])")


def named_paths(text: str) -> set[str]:
    return {m for m in PATH.findall(text) if not any(c in m for c in "*<>{")}


def test_every_path_the_docs_name_exists():
    missing = []
    for doc in DOCS:
        for path in sorted(named_paths(doc.read_text(encoding="utf-8"))):
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def test_the_module_map_matches_the_tree():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    mapped = {p for p in named_paths(text) if p.endswith(".py")}
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "ragqa").rglob("*.py")
               if p.parent.name != "tokenizer" and not (
                   p.name == "__init__.py" and p.parent.name in ("index", "retrieval",
                                                                 "answering", "faces"))}
    assert not sorted(modules - mapped), f"modules the map leaves out: {sorted(modules - mapped)}"


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    head = "\n".join(lines[:20])
    assert "pip install . && ragqa ask" in head
    assert "pip install '.[test]' && python -m pytest -q" in head
