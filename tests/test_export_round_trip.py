"""Exports that read back as the same papers: every paper ragqa writes as BibTeX, JSON Lines or
CSV is read by `ragqa ingest` with the same id, title, text, authors, venue and year, whatever
LaTeX-special characters its title and text hold, and whichever source it came from (a JSON
Lines record, an arXiv snapshot line, an OpenReview note, a BibTeX entry)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragqa.sources import read_sources
from ragqa.sources.export import to_bibtex, to_csv, to_jsonl
from ragqa.sources.latex import to_text
from ragqa.sources.paper import Paper

BOUNDED = settings(max_examples=120, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Words of letters, digits and the characters LaTeX and BibTeX treat specially.
_SPECIAL = "\\{}$%&#_^~'\"`-@=,<>|*[]()!?:;./+"
_WORD = st.text(st.one_of(st.sampled_from(_SPECIAL), st.characters(
    whitelist_categories=("L", "N"), max_codepoint=0x2FFF)), min_size=1, max_size=10)
_PLAIN_WORD = st.text(st.characters(whitelist_categories=("L",), max_codepoint=0x24F),
                      min_size=2, max_size=9)


def _stable(min_words: int, max_words: int):
    """Text as a reader leaves it: what ragqa would store (its own reading is itself)."""
    return st.lists(_WORD, min_size=min_words, max_size=max_words).map(" ".join).map(
        to_text).filter(lambda t: len(t.split()) >= min_words and to_text(t) == t)


_TITLE = _stable(1, 8)
_TEXT = _stable(6, 40)
_AUTHORS = st.lists(st.tuples(_PLAIN_WORD, _PLAIN_WORD).map(" ".join), min_size=0,
                    max_size=3).map("; ".join)
_VENUE = st.sampled_from(["", "ICML", "NeurIPS", "ACL", "Nature", "Physical Review Letters"])
_YEAR = st.one_of(st.none(), st.integers(1990, 2030))


@st.composite
def papers(draw) -> Paper:
    """A paper as one of ragqa's readers makes it."""
    origin = draw(st.sampled_from(["jsonl", "arxiv", "openreview"]))
    title, text = draw(_TITLE), draw(_TEXT)
    authors, year = draw(_AUTHORS), draw(_YEAR)
    if origin == "arxiv":
        number = draw(st.integers(1, 99999))
        pid = f"{draw(st.integers(7, 25)):02d}{draw(st.integers(1, 12)):02d}.{number:05d}"
        return Paper(paper_id=pid, title=title, text=text, source="a.jsonl#1", authors=authors,
                     venue="arXiv", year=year, url=f"https://arxiv.org/abs/{pid}",
                     extra={"source_format": "arxiv", "categories": "cs.LG"})
    if origin == "openreview":
        pid = draw(st.text("abcdefghijkXYZ0123456789_-", min_size=8, max_size=10))
        return Paper(paper_id=pid, title=title, text=text, source="n.json#1", authors=authors,
                     venue="ICLR", year=year, url=f"https://openreview.net/forum?id={pid}",
                     extra={"source_format": "openreview", "venue_label": "ICLR 2024 poster"})
    pid = draw(st.text("abcdef0123456789", min_size=16, max_size=16))
    return Paper(paper_id=pid, title=title, text=text, source="r.jsonl#1", authors=authors,
                 venue=draw(_VENUE), year=year)


def _reread(name: str, data: str) -> list[Paper]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(data, encoding="utf-8")
        return read_sources([path]).papers


def _fields(paper: Paper) -> tuple:
    return (paper.paper_id, paper.title, paper.text, paper.authors, paper.venue, paper.year)


@BOUNDED
@given(paper=papers())
def test_a_bibtex_export_reads_back_as_the_same_paper_twice_over(paper):
    again = _reread("out.bib", to_bibtex([paper]))
    assert [_fields(p) for p in again] == [_fields(paper)]
    # Read from a .bib, written again from its own fields: still the same paper.
    twice = _reread("again.bib", to_bibtex(again))
    assert [_fields(p) for p in twice] == [_fields(paper)]


@BOUNDED
@given(paper=papers())
def test_json_lines_and_csv_exports_read_back_as_the_same_paper(paper):
    assume(paper.title)
    for name, data in (("out.jsonl", to_jsonl([paper])), ("out.csv", to_csv([paper]))):
        assert [_fields(p) for p in _reread(name, data)] == [_fields(paper)], name
