"""arXiv's OAI metadata snapshot (one JSON object a line, as Kaggle's
`arxiv-metadata-oai-snapshot.json`): `id`, `title`, `abstract`, `authors`, `authors_parsed`,
`categories`, `journal-ref`, `doi`, `versions`, `update_date`.

Titles and abstracts are hard-wrapped and written in LaTeX; the paper id is the arXiv id, the
year the first version's, the link the abstract page.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragqa.sources.latex import to_text
from ragqa.sources.paper import MetaValue, Paper, derive_title
from ragqa.sources.select import split_categories

VENUE = "arXiv"
_YEAR = re.compile(r"\b(19[89]\d|20\d\d)\b")
_OLD_STYLE_ID = re.compile(r"(?:^|/)(\d{2})(\d{2})\d{3}")  # hep-th/9901001: 1999
_NEW_STYLE_ID = re.compile(r"^(\d{2})(\d{2})\.\d{4,5}")  # 0704.0001: 2007


def is_arxiv(record: dict) -> bool:
    return "authors_parsed" in record or isinstance(record.get("versions"), list)


def _text(record: dict, name: str) -> str:
    value = record.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} must be text, not {type(value).__name__}")
    return value


def first_year(record: dict) -> int | None:
    """The first version's year ("Mon, 2 Apr 2007 19:18:42 GMT"), else `update_date`'s, else
    the one the id encodes."""
    versions = record.get("versions")
    if isinstance(versions, list) and versions:
        first = versions[0]
        created = first.get("created") if isinstance(first, dict) else None
        match = _YEAR.search(created) if isinstance(created, str) else None
        if match:
            return int(match.group(1))
    update = record.get("update_date")
    match = _YEAR.search(update) if isinstance(update, str) else None
    if match:
        return int(match.group(1))
    arxiv_id = record.get("id") if isinstance(record.get("id"), str) else ""
    found = _NEW_STYLE_ID.match(arxiv_id) or _OLD_STYLE_ID.search(arxiv_id)
    if found:
        yy = int(found.group(1))
        return 1900 + yy if yy >= 91 else 2000 + yy
    return None


def _authors(record: dict) -> str:
    """"First Last; First Last" from `authors_parsed` ([last, first, suffix]), else `authors`."""
    parsed = record.get("authors_parsed")
    if isinstance(parsed, list) and parsed:
        names = []
        for item in parsed:
            if not isinstance(item, list) or not all(isinstance(p, str) for p in item):
                raise ValueError("field 'authors_parsed' must list [last, first, suffix] names")
            last, first, suffix = (list(item) + ["", "", ""])[:3]
            names.append(" ".join(p for p in (first, last, suffix) if p.strip()))
        return to_text("; ".join(n for n in names if n))
    return to_text(_text(record, "authors").replace(" and ", ", ").replace(", ", "; "))


def paper_from_arxiv(record: dict, source: str, line: int,
                     admit: Callable[[str, int | None, list[str]], bool] | None = None
                     ) -> Paper | None:
    """One snapshot line -> Paper, or None when `admit` turns it down (decided before the LaTeX
    is converted). ValueError says what is wrong with the record."""
    arxiv_id = _text(record, "id").strip()
    if not arxiv_id or any(ord(ch) < 32 for ch in arxiv_id):
        raise ValueError("arXiv record needs a text 'id' (such as \"2301.00001\")")
    raw_abstract = _text(record, "abstract")
    if not raw_abstract.strip():
        raise ValueError("record has no text (an empty or missing 'abstract' field)")
    categories = split_categories(_text(record, "categories"))
    year = first_year(record)
    if admit is not None and not admit(VENUE, year, categories):
        return None
    extra: dict[str, MetaValue] = {"source_format": "arxiv"}
    if categories:
        extra["categories"] = " ".join(categories)
    for name, key in (("journal-ref", "journal_ref"), ("doi", "doi"), ("comments", "comments"),
                      ("report-no", "report_no"), ("license", "license")):
        value = _text(record, name).strip()
        if value:
            extra[key] = " ".join(value.split())
    text = to_text(raw_abstract)
    title = to_text(_text(record, "title"))
    return Paper(
        paper_id=arxiv_id, title=title or derive_title(text), text=text, source=source,
        authors=_authors(record), venue=VENUE, year=year,
        url=f"https://arxiv.org/abs/{arxiv_id}", title_derived=not title, line=line,
        extra=extra,
    )



