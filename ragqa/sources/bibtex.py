"""BibTeX (`.bib` from Zotero, DBLP, the ACL Anthology) through bibtexparser v2: `@string`
macros, `month = jan`, crossrefs, LaTeX escapes (`{\\"o}`, `\\&`, `{Braces}`).

An entry with an `abstract` is a paper: venue from `booktitle` or `journal`, year from `year`,
link from `url` or `doi`; the entry's own fields are kept (`bibtex_fields`) so that an export
writes them back. An entry without an abstract is no error: it is skipped and counted.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ragqa.errors import CorpusError
from ragqa.sources.latex import latex_to_text
from ragqa.sources.paper import MetaValue, Paper, derive_title, text_id

# Fields that are the entry's own and an export writes back (the abstract is the paper's text).
KEPT_FIELDS = ("title", "author", "editor", "booktitle", "journal", "year", "month", "volume",
               "number", "pages", "publisher", "address", "organization", "school",
               "institution", "series", "edition", "doi", "url", "eprint", "archiveprefix",
               "primaryclass", "isbn", "issn", "note", "howpublished", "language")
_INHERITED = ("booktitle", "year", "month", "editor", "publisher", "address", "organization",
              "series", "volume", "journal")
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_YEAR = re.compile(r"\b(\d{4})\b")


def to_text(value: str) -> str:
    """A BibTeX value is LaTeX even without a backslash: "{LLM} Agents" reads "LLM Agents"."""
    return latex_to_text(value) if value.strip() else ""


_DOI_URL = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", re.IGNORECASE)


class NoAbstract:
    """An entry read but not a paper (no abstract): counted, never an error."""

    def __init__(self, key: str, line: int) -> None:
        self.key, self.line = key, line


def _split_top(value: str) -> list[str]:
    """Names split at " and " outside braces ("{Barnes and Noble}" is one name)."""
    names, depth, start = [], 0, 0
    for match in re.finditer(r"[{}]|\s+and\s+", value, re.IGNORECASE):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            names.append(value[start:match.start()])
            start = match.end()
    names.append(value[start:])
    return [n.strip() for n in names if n.strip()]


def person_names(value: str) -> list[str]:
    """"Müller, Hans and Doe, J." -> ["Hans Müller", "J. Doe"]."""
    out = []
    for name in _split_top(value):
        parts = [p.strip() for p in name.split(",")]
        if len(parts) == 2:  # Last, First
            name = f"{parts[1]} {parts[0]}"
        elif len(parts) >= 3:  # Last, Jr, First
            name = f"{parts[2]} {parts[0]} {parts[1]}"
        out.append(to_text(name))
    return [n for n in out if n]


def _fields(entry) -> dict[str, str]:
    return {f.key.lower(): str(f.value) for f in entry.fields}


def _with_crossref(fields: dict[str, str], by_key: dict[str, dict[str, str]]) -> dict[str, str]:
    parent = by_key.get(fields.get("crossref", "").strip().lower())
    if not parent:
        return fields
    merged = dict(fields)
    for name in _INHERITED:
        if name not in merged and name in parent:
            merged[name] = parent[name]
    if "booktitle" not in merged and "title" in parent and "journal" not in merged:
        merged["booktitle"] = parent["title"]
    return merged


def _url(fields: dict[str, str]) -> str:
    url = fields.get("url", "").strip()
    if url:
        return url.split()[0]
    doi = _DOI_URL.sub("", fields.get("doi", "").strip())
    return f"https://doi.org/{doi}" if doi else ""


def _year(fields: dict[str, str]) -> int | None:
    match = _YEAR.search(to_text(fields.get("year", "")))
    return int(match.group(1)) if match else None


def read_bibtex(path: Path, text: str,
                admit: Callable[[str, int | None, list[str]], bool] | None = None
                ) -> Iterator[Paper | CorpusError | NoAbstract | None]:
    import bibtexparser
    from bibtexparser.model import DuplicateBlockKeyBlock

    # It logs each block it cannot parse; ragqa reports them itself, with file and line.
    logging.getLogger("bibtexparser").setLevel(logging.CRITICAL)
    try:
        library = bibtexparser.parse_string(text)
    except Exception as exc:  # noqa: BLE001 - a parser failure is bad input, not a crash
        yield CorpusError(path, None, f"malformed BibTeX: {str(exc)[:200]}")
        return
    for block in library.failed_blocks:
        what = ("duplicate entry key" if isinstance(block, DuplicateBlockKeyBlock)
                else "malformed BibTeX entry")
        head = " ".join(block.raw.split())[:60]
        yield CorpusError(path, block.start_line + 1, f"{what}: {head!r}")
    entries = sorted(library.entries, key=lambda e: e.start_line)
    by_key = {e.key.lower(): _fields(e) for e in entries}
    for position, entry in enumerate(entries, start=1):
        line = entry.start_line + 1
        fields = _with_crossref(_fields(entry), by_key)
        raw_abstract = fields.get("abstract", "")
        if not raw_abstract.strip():
            yield NoAbstract(entry.key, line)
            continue
        venue = to_text(fields.get("booktitle") or fields.get("journal") or "")
        year = _year(fields)
        if admit is not None and not admit(venue, year, []):
            yield None
            continue
        text = to_text(raw_abstract)
        title = to_text(fields.get("title", ""))
        own = {k: " ".join(v.split()) for k, v in fields.items() if k in KEPT_FIELDS}
        extra: dict[str, MetaValue] = {
            "source_format": "bibtex", "bibtex_type": entry.entry_type.lower(),
            "bibtex_key": entry.key, "bibtex_fields": json.dumps(own, ensure_ascii=False)}
        doi = _DOI_URL.sub("", fields.get("doi", "").strip())
        if doi:
            extra["doi"] = doi
        keywords = to_text(fields.get("keywords", ""))
        if keywords:
            extra["keywords"] = keywords
        yield Paper(
            paper_id=text_id(raw_abstract), title=title or derive_title(text), text=text,
            source=f"{path.name}#{position}", authors="; ".join(person_names(
                fields.get("author", ""))), venue=venue, year=year, url=_url(fields),
            title_derived=not title, line=line, extra=extra)
