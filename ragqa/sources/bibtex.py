"""BibTeX and biblatex (`.bib` from JabRef, Mendeley, Zotero, DBLP, the ACL Anthology) through
bibtexparser v2: `@string` macros, `month = jan`, crossrefs, LaTeX escapes (`{\\"o}`, `\\&`,
`{Braces}`).

An entry with a real `abstract` is a paper: its id what the entry says identifies it (arXiv id
from `eprint`, an OpenReview forum, a DOI), else its title, abstract and year hashed; venue from
`booktitle`, `journaltitle` or `journal` (a well-known series by its short name, ragqa/sources/
venues.py), year from `year` or `date`, link from `url` or `doi`. The entry's own fields are kept
(`bibtex_fields`) so that an export writes them back. Real libraries are untidy, and none of
that stops a file: entries without an abstract or with a placeholder one, a key used twice, an
empty key (`@article{,`, as Mendeley writes), a field repeated (Web of Science) are read through
and counted (`Tally`). Only a block bibtexparser cannot parse at all is bad input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from ragqa.errors import CorpusError
from ragqa.sources.latex import has_latex, latex_to_text, quiet_logger
from ragqa.sources.paper import (
    MetaValue,
    Paper,
    Tally,
    arxiv_id,
    arxiv_of_doi,
    bounded_fields,
    derive_title,
    doi_of,
    entry_id,
    identified_id,
    openreview_id,
    text_id,
)
from ragqa.sources.venues import venue_and_label

# Fields that are the entry's own and an export writes back (the abstract is the paper's text);
# biblatex's own ones too (`date`, `journaltitle`, `eprinttype`, …).
KEPT_FIELDS = ("title", "author", "editor", "booktitle", "journal", "year", "month", "volume",
               "number", "pages", "publisher", "address", "organization", "school",
               "institution", "series", "edition", "doi", "url", "eprint", "archiveprefix",
               "primaryclass", "isbn", "issn", "note", "howpublished", "language", "date",
               "journaltitle", "eprinttype", "eprintclass", "issue", "urldate", "keywords",
               "subtitle", "booksubtitle", "location", "langid", "pagetotal", "venue")
_INHERITED = ("booktitle", "year", "month", "editor", "publisher", "address", "organization",
              "series", "volume", "journal", "journaltitle", "date")
VENUE_ARXIV = "arXiv"  # the venue of an arXiv preprint, as the arXiv snapshot's reader names it
_ARXIV_IN_TEXT = re.compile(r"\barxiv[:\s]*(?:abs/)?(\d{4}\.\d{4,5}(?:v\d+)?)", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_YEAR = re.compile(r"\b(\d{4})\b")


def to_text(value: str) -> str:
    """A BibTeX value is LaTeX even without a backslash: "{LLM} Agents" reads "LLM Agents".
    Zotero keeps an arXiv abstract's own LaTeX as text and Better BibTeX escapes it
    (`\\textbackslash emph\\{sequential\\}`): what reads as LaTeX again is read once more."""
    text = latex_to_text(value) if value.strip() else ""
    return latex_to_text(text) if "\\" in text and has_latex(text) else text


_DOI_URL = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", re.IGNORECASE)


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
    crossref = fields.get("crossref", "").strip().lower()
    parent = by_key.get(crossref) if crossref else None
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
    """From `year`, else biblatex's `date` ("2020-05-01", "2020/2021")."""
    match = _YEAR.search(to_text(fields.get("year", "") or fields.get("date", "")))
    return int(match.group(1)) if match else None


def _arxiv(fields: dict[str, str]) -> str | None:
    """The arXiv id an entry names: `eprint` with `archiveprefix`/`eprinttype` arXiv (or an
    eprint that can only be one), else "arXiv:2301.00001" in its journal or note (Google
    Scholar writes `journal = {arXiv preprint arXiv:2301.00001}`)."""
    eprint = fields.get("eprint", "").strip()
    kind = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip().lower()
    if eprint and kind in ("arxiv", ""):
        found = arxiv_id(eprint)
        if found:
            return found
    if found := arxiv_of_doi(fields.get("doi", "")):
        return found
    for name in ("journal", "journaltitle", "note", "howpublished", "url"):
        match = _ARXIV_IN_TEXT.search(fields.get(name, "")) or (
            re.search(r"arxiv\.org/(?:abs|pdf)/([\w./-]+?)(?:\.pdf)?$", fields.get(name, ""))
            if name == "url" else None)
        if match and arxiv_id(match.group(1)):
            return arxiv_id(match.group(1))
    return None


_PLACEHOLDER = re.compile(
    r"^\W*(?:(?:abstract\s+)?(?:not\s+available|unavailable|not\s+provided|missing)"
    r"|no\s+abstract(?:\s+(?:is\s+)?available)?(?:\s+for\s+this\s+(?:item|article))?"
    r"|without\s+(?:an\s+)?abstract"
    r"|n/?a|none|null|tbd|tba|to\s+be\s+(?:announced|added)|abstract|no\s+summary)\W*$",
    re.IGNORECASE)
# An "abstract" of fewer words and characters is a placeholder ("Abstract here", Mendeley's
# "Other Research Unit"), not a paper's text; an export that lost its spaces is still one.
PLACEHOLDER_WORDS, PLACEHOLDER_CHARS = 4, 40


def is_placeholder(abstract: str) -> bool:
    """"Not Available", "[No abstract available]", "N/A": what a library writes for none."""
    return bool(_PLACEHOLDER.match(abstract)) or (
        len(abstract.split()) < PLACEHOLDER_WORDS and len(abstract) < PLACEHOLDER_CHARS)


def _parse(text: str):
    """bibtexparser's library of the text, with the entries it set aside for quirks that are
    normal in real libraries (a key twice, an empty key, a field twice) taken back in: each with
    the Tally that names its quirk. Entries stay in file order."""
    import bibtexparser
    from bibtexparser.library import Library
    from bibtexparser.model import DuplicateBlockKeyBlock, DuplicateFieldKeyBlock

    # It logs each block it cannot parse; ragqa reports them itself, with file and line.
    with quiet_logger("bibtexparser"):
        library = bibtexparser.parse_string(text)
    rescued, quirks, failed = [], {}, []
    for block in library.failed_blocks:
        if isinstance(block, DuplicateBlockKeyBlock | DuplicateFieldKeyBlock):
            entry = block.ignore_error_block
            if isinstance(block, DuplicateFieldKeyBlock):
                entry = _first_values(entry)
                quirks[entry.start_line] = "repeated_field"
            else:
                quirks[entry.start_line] = "empty_key" if not entry.key.strip() else \
                    "duplicate_key"
            rescued.append(entry)
        else:
            failed.append(block)
    # The parser's middleware ({braces} off, @string macros in) never ran on them; one at a
    # time, as a library refuses two entries of one key.
    stack = bibtexparser.middlewares.parsestack.default_parse_stack()
    for i, entry in enumerate(rescued):
        again = Library([*library.strings, entry])
        for middleware in stack:
            again = middleware.transform(again)
        rescued[i] = again.entries[0]
    entries = sorted([*library.entries, *rescued], key=lambda e: e.start_line)
    for entry in entries:
        if entry.start_line not in quirks and not entry.key.strip():
            quirks[entry.start_line] = "empty_key"  # the first of them parses as any entry
    return entries, quirks, failed


def _first_values(entry):
    """An entry with each repeated field's first value only (Web of Science repeats
    `Author-Email`)."""
    from bibtexparser.model import Entry

    seen: set[str] = set()
    fields = []
    for item in entry.fields:
        if item.key.lower() not in seen:
            seen.add(item.key.lower())
            fields.append(item)
    return Entry(entry.entry_type, entry.key, fields, start_line=entry.start_line,
                 raw=entry.raw)


def _failure(path: Path, block) -> CorpusError:
    """What bibtexparser said of a block it could not parse, with the block's start."""
    error = getattr(block, "error", None)
    reason = getattr(error, "abort_reason", None) or str(error or "") or "cannot be parsed"
    head = " ".join(block.raw.split())[:60]
    return CorpusError(path, block.start_line + 1,
                       f"malformed BibTeX entry {head!r}: {' '.join(str(reason).split())}")


Item = Paper | CorpusError | Tally | None


def read_bibtex(path: Path, text: str,
                admit: Callable[[str, int | None, list[str]], bool] | None = None
                ) -> Iterator[Item]:
    """Every entry of a .bib: a Paper for each with a real abstract, a Tally for what is read
    but no paper (no abstract, a placeholder) or read through a quirk, a CorpusError for text
    bibtexparser cannot parse at all, None for what `admit` turns down."""
    try:
        entries, quirks, failed = _parse(text)
    except Exception as exc:  # noqa: BLE001 - a parser failure is bad input, not a crash
        yield CorpusError(path, None, f"malformed BibTeX: {str(exc)[:200]}")
        return
    for block in failed:
        yield _failure(path, block)
    by_key = {e.key.lower(): _fields(e) for e in entries if e.key.strip()}
    for position, entry in enumerate(entries, start=1):
        line = entry.start_line + 1
        if entry.start_line in quirks:
            yield Tally(quirks[entry.start_line], line, entry.key)
        fields, cut = bounded_fields(_with_crossref(_fields(entry), by_key))
        item = _entry_paper(path, entry, position, fields, admit)
        if cut and isinstance(item, Paper):
            yield Tally("cut", line, entry.key)
        yield item


def _entry_paper(path: Path, entry, position: int, fields: dict[str, str],
                 admit: Callable[[str, int | None, list[str]], bool] | None) -> Item:
    line = entry.start_line + 1
    raw_abstract = fields.get("abstract", "")
    if not raw_abstract.strip():
        return Tally("without_abstract", line, entry.key)
    text = to_text(raw_abstract)
    if is_placeholder(text):
        return Tally("placeholder_abstract", line, entry.key)
    arxiv = _arxiv(fields)
    label = to_text(fields.get("booktitle") or fields.get("journaltitle")
                    or fields.get("journal") or "")
    if arxiv and (not label or re.match(r"arxiv\b|corr$", label, re.IGNORECASE)):
        venue, full_label = VENUE_ARXIV, label  # a preprint: "arXiv preprint …", DBLP's "CoRR"
    else:
        venue, full_label = venue_and_label(label)
    year = _year(fields)
    if admit is not None and not admit(venue, year, []):
        return None
    title = to_text(fields.get("title", ""))
    own = {k: " ".join(v.split()) for k, v in fields.items() if k in KEPT_FIELDS}
    extra: dict[str, MetaValue] = {
        "source_format": "bibtex", "bibtex_type": entry.entry_type.lower(),
        "bibtex_key": entry.key, "bibtex_fields": json.dumps(own, ensure_ascii=False)}
    if full_label:
        extra["venue_label"] = full_label
    doi = doi_of(fields.get("doi", ""))
    if doi:
        extra["doi"] = doi
    if arxiv:
        extra["arxiv_id"] = arxiv
    keywords = to_text(fields.get("keywords", ""))
    if keywords:
        extra["keywords"] = keywords
    # `ragqa_id`: written by ragqa's export for a paper no field identifies (ragqa/sources/
    # export.py), so that the export reads back as the same papers.
    known = to_text(fields.get("ragqa_id", "")) or identified_id(
        arxiv=arxiv or "", doi=doi or "", openreview=openreview_id(fields.get("url", "")) or "")
    return Paper(
        paper_id=known or entry_id(title, text, year), title=title or derive_title(text),
        text=text, source=f"{path.name}#{position}", authors="; ".join(person_names(
            fields.get("author", ""))), venue=venue, year=year, url=_url(fields),
        title_derived=not title, line=line, extra=extra,
        # ragqa before 0.x: an entry's id was its abstract's hash (index/ingest.py keeps it)
        former_ids=(text_id(raw_abstract),))
