"""Papers out: BibTeX with stable keys, CSV, JSON Lines (which `ragqa ingest` reads back with
the same ids and texts), and the Markdown link of a reference.

A BibTeX key is the first author's surname, the year and the first word of the title, in
lower-case ASCII (`muller2024prosody`); papers whose keys clash get a, b, … in the order of
their ids, so the same papers always get the same keys. An entry read from a .bib keeps that
entry's own fields; an arXiv paper is a @misc with its eprint, an OpenReview paper an
@inproceedings of its venue.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import string
import unicodedata
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from ragqa.sources.latex import latex_to_text
from ragqa.sources.paper import Paper, entry_id, identified_id, openreview_id
from ragqa.sources.select import split_categories
from ragqa.text import inert_markdown_line, spreadsheet_cell, web_url

_SKIPPED_TITLE_WORDS = {"a", "an", "the", "on", "of", "in", "for", "to", "and", "towards"}
_ASCII_WORD = re.compile(r"[a-z0-9]+")
CSV_COLUMNS = ("id", "title", "abstract", "authors", "venue", "year", "url", "categories",
               "doi", "source")


# ---------------------------------------------------------------- keys

def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "".join(_ASCII_WORD.findall(folded.lower()))


def _surname(authors: str) -> str:
    first = authors.split(";")[0].strip()
    if "," in first:  # "Last, First"
        return first.split(",")[0]
    words = first.split()
    # "Anna van der Berg": the surname is what follows the given names' lower-case particles
    for i, word in enumerate(words[:-1]):
        if i and word[:1].islower():
            return " ".join(words[i:])
    return words[-1] if words else ""


def base_key(paper: Paper) -> str:
    surname = _ascii(_surname(paper.authors)) or "anon"
    words = [_ascii(w) for w in paper.title.split()]
    word = next((w for w in words if w and w not in _SKIPPED_TITLE_WORDS), "") or \
        next((w for w in words if w), "untitled")
    return f"{surname}{paper.year or 'nd'}{word}"


def bibtex_keys(papers: Sequence[Paper]) -> dict[str, str]:
    """paper id -> key; clashing keys get a, b, … in the order of the papers' ids."""
    by_base: dict[str, list[str]] = {}
    for paper in papers:
        by_base.setdefault(base_key(paper), []).append(paper.paper_id)
    keys = {}
    for base, ids in by_base.items():
        ids = sorted(set(ids))
        for i, pid in enumerate(ids):
            keys[pid] = base if len(ids) == 1 else base + _suffix(i)
    return keys


def _suffix(i: int) -> str:
    letters = string.ascii_lowercase
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


# ---------------------------------------------------------------- BibTeX

_PLAIN = frozenset(string.ascii_letters + string.digits + " .,;:!?'()/+=<>|@*\"[]-")
_LIGATURE = re.compile(r"([-'])(?=\1)")


@functools.lru_cache(maxsize=4096)
def _latex_char(char: str) -> str:
    """A character as LaTeX (`ü` -> `{\\"u}`, `&` -> `\\&`, `×` -> `{\\texttimes}`) when
    that reads back as the same character; else the character itself (LaTeX reads UTF-8)."""
    from pylatexenc.latexencode import unicode_to_latex

    # BibTeX counts every brace, escaped or not: a lone one is written as a command
    encoded = {"{": "\\textbraceleft{}", "}": "\\textbraceright{}",
               "^": "\\textasciicircum{}", "`": "\\textasciigrave{}"}.get(char) or \
        unicode_to_latex(char, non_ascii_only=False, unknown_char_warning=False)
    return encoded if latex_to_text(f"x{encoded}x") == f"x{char}x" else char


def _latex(text: str) -> str:
    """Plain text as a BibTeX value that reads back as the same text."""
    out = "".join(c if c in _PLAIN else _latex_char(c) for c in text)
    # LaTeX reads "--" as a dash and '' as a typographic quote: "{}" keeps each mark itself
    return _LIGATURE.sub(r"\1{}", out)


def _balanced(value: str, count_escaped: bool = True) -> bool:
    """Whether a value's braces pair up: as BibTeX counts them (escaped ones too), or as
    bibtexparser does (`count_escaped=False`: not a brace right after a backslash)."""
    depth = 0
    for i, char in enumerate(value):
        if char in "{}" and (count_escaped or value[i - 1:i] != "\\"):
            depth += 1 if char == "{" else -1
        if depth < 0:
            return False
    return depth == 0


def _bib_safe(value: str) -> bool:
    """Whether a value can stand inside {…} as it is: balanced for BibTeX and for bibtexparser,
    and no backslash last (bibtexparser would read the closing brace as an escaped one)."""
    return _balanced(value) and _balanced(value, count_escaped=False) and \
        not value.endswith("\\")


# Identifiers and addresses, which biblatex reads verbatim (a LaTeX escape would change them):
# what could end the value or the entry is percent-encoded instead (the same address).
_VERBATIM_FIELDS = frozenset({"url", "doi", "eprint", "primaryclass"})
_VERBATIM_UNSAFE = re.compile(r"[{}\\\s]")
# `@type{` or `@type(` at a line's start opens an entry for bibtexparser, even inside a value.
_LINE_START_AT = re.compile(r"(\n\s*)@")
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_:.+-]*")
_ENTRY_TYPE = re.compile(r"[a-z]+")


def _bib_value(name: str, value: object) -> str:
    """A field's value as it can be written inside {…}: it can neither end the field nor the
    entry, nor start another, whatever a record held (a record's URL that closes the entry and
    opens one of its own, a lone brace that would swallow the rest of the file)."""
    text = str(value)
    if name in _VERBATIM_FIELDS:
        return _VERBATIM_UNSAFE.sub(lambda m: quote(m.group(), safe=""), text.strip())
    if not _bib_safe(text):
        text = _latex(latex_to_text(text))  # the same text, its braces written as commands
    if not _bib_safe(text):  # never seen; kept so that the guarantee holds by construction
        text = re.sub(r"[{}\\]", "", text)
    return _LINE_START_AT.sub(r"\1{@}", text)


def _bib_fields(fields: dict[str, str]) -> dict[str, str]:
    """The fields that can be written: a name BibTeX reads as one (a record that claimed to come
    from a .bib may name fields anything), a value made safe, a `url` only to a web page."""
    safe = {name: _bib_value(name, value) for name, value in fields.items()
            if _FIELD_NAME.fullmatch(name)}
    if "url" in safe and not web_url(safe["url"]):
        del safe["url"]
    return safe


def _bib_authors(authors: str) -> str:
    return " and ".join(_latex(name.strip()) for name in authors.split(";") if name.strip())


def entry_fields(paper: Paper) -> tuple[str, dict[str, str]]:
    """(entry type, fields) for a paper; field values are BibTeX (LaTeX) text."""
    extra = paper.extra
    if extra.get("source_format") == "bibtex" and extra.get("bibtex_fields"):
        own = json.loads(str(extra["bibtex_fields"]))  # written as the .bib had them
        own = own if isinstance(own, dict) else {}
        fields = {str(k).lower(): str(v) for k, v in own.items() if k != "abstract"}
        fields["abstract"] = _latex(paper.text)
        kind = str(extra.get("bibtex_type") or "misc").lower()
        return kind if _ENTRY_TYPE.fullmatch(kind) else "misc", fields
    fields = {"title": _latex(paper.title)}
    if paper.authors:
        fields["author"] = _bib_authors(paper.authors)
    kind = "misc"
    if extra.get("source_format") == "arxiv":
        fields.update(eprint=paper.paper_id, archiveprefix="arXiv")
        categories = split_categories(extra.get("categories", ""))
        if categories:
            fields["primaryclass"] = categories[0]
        if extra.get("journal_ref"):
            fields["note"] = _latex(str(extra["journal_ref"]))
    elif paper.venue:
        label = str(extra.get("venue_label") or paper.venue)
        kind = "inproceedings"
        fields["booktitle"] = _latex(label)
    if paper.year:
        fields["year"] = str(paper.year)
    if extra.get("doi"):
        fields["doi"] = str(extra["doi"])
    if paper.url:  # only a web page's (a record's `javascript:` URL links nowhere)
        fields["url"] = paper.url
    fields["abstract"] = _latex(paper.text)
    return kind, fields


def _with_own_id(paper: Paper, fields: dict[str, str]) -> dict[str, str]:
    """The fields, with `ragqa_id` when the entry would read back under another id than the
    paper's (a seeds abstract's hash, a JSON Lines record's own id): ragqa reads it first, other
    tools ignore it."""
    named = identified_id(arxiv=fields.get("eprint", ""), doi=fields.get("doi", ""),
                          openreview=openreview_id(fields.get("url", "")) or "")
    if (named or entry_id(paper.title, paper.text, paper.year)) != paper.paper_id:
        fields["ragqa_id"] = _bib_value("ragqa_id", _latex(paper.paper_id))
    return fields


def to_bibtex(papers: Iterable[Paper]) -> str:
    """A .bib of these papers (each once), written by bibtexparser so that it parses back."""
    import bibtexparser
    from bibtexparser.library import Library
    from bibtexparser.model import Entry, Field

    unique = list({p.paper_id: p for p in papers}.values())
    keys = bibtex_keys(unique)
    library = Library()
    for paper in unique:
        kind, fields = entry_fields(paper)
        # made safe first: the id the entry reads back under is that of the fields as written
        fields = _with_own_id(paper, _bib_fields(fields))
        library.add(Entry(kind, keys[paper.paper_id],
                          [Field(name, value) for name, value in fields.items()]))
    return bibtexparser.write_string(library) if unique else ""


# ---------------------------------------------------------------- JSON Lines, CSV

def paper_record(paper: Paper) -> dict:
    """A JSON Lines record `ragqa ingest` reads back as the same paper (same id and text)."""
    record: dict = {"id": paper.paper_id, "title": paper.title, "abstract": paper.text,
                    "authors": paper.authors, "venue": paper.venue, "year": paper.year,
                    "url": paper.url}
    record.update({k: v for k, v in paper.extra.items() if k not in record})
    return {k: v for k, v in record.items() if v not in (None, "")}


def to_jsonl(papers: Iterable[Paper]) -> str:
    return "".join(json.dumps(paper_record(p), ensure_ascii=False) + "\n" for p in papers)


def to_csv(papers: Iterable[Paper]) -> str:
    """CSV of the papers, each cell safe to open in a spreadsheet (`spreadsheet_cell`: a title
    such as `=HYPERLINK(…)` is shown, not run); `ragqa ingest` reads it back as they were."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for paper in papers:
        record = paper_record(paper)
        writer.writerow([spreadsheet_cell(str(record.get(c, "")) if c != "source"
                                          else paper.source) for c in CSV_COLUMNS])
    return out.getvalue()


# ---------------------------------------------------------------- Markdown

# The characters a URL keeps as they are in a Markdown link's target: RFC 3986's, less the
# ones Markdown reads there (parentheses and angle brackets end or wrap it, a backslash escapes,
# quotes open a title, brackets and braces are markup); those are percent-encoded (the same
# address for a web server). So are `~` (`~~` strikes through, even across a link, in some
# renderers) and an `&` that would read as an entity (`&#106;`).
_URL_KEPT = "/:?#@!$&*+,;=%-._"
_URL_MARKUP = re.compile(r"~|&(?=#?\w+;)")


def reference_link(title: str, url: str) -> str:
    """`[Title](url)` when the paper has a web page (arXiv page, OpenReview forum, DOI), else
    the title; the title is inert Markdown (text only: it can end the link text no more than
    open a link of its own) and the URL an http(s) one, with every character that could end
    the link or change its target in a renderer percent-encoded."""
    text = inert_markdown_line(title)
    url = web_url(url)
    if not url:
        return text
    target = _URL_MARKUP.sub(lambda m: f"%{ord(m.group()):02X}", quote(url, safe=_URL_KEPT))
    return f"[{text}]({target})"
