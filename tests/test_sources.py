"""Real sources: arXiv metadata snapshot lines, OpenReview API v2 notes (a JSON array or JSON
lines), BibTeX; LaTeX to text; seeds headers in more forms; --where/--limit selection.

The fixtures in tests/fixtures/sources/ were written by hand after each format's public
documentation (nothing downloaded); the papers in them are invented."""

from __future__ import annotations

import json
from pathlib import Path

import bibtexparser
import pytest

from ragqa.errors import CorpusError
from ragqa.sources import read_sources
from ragqa.sources.latex import to_text
from ragqa.sources.select import Selection

FIXTURES = Path(__file__).parent / "fixtures" / "sources"


def _papers(name: str, **options):
    return read_sources([FIXTURES / name], **options).papers


# ================================================================ arXiv

def test_arxiv_snapshot_lines_become_papers_with_their_own_ids_years_and_categories():
    papers = {p.paper_id: p for p in _papers("arxiv_slice.jsonl")}
    assert list(papers) == ["2305.01234", "2210.04567", "2401.09999", "hep-th/9901001",
                            "2303.07777"]
    duplex = papers["2305.01234"]
    # hard-wrapped and LaTeX-laden title and abstract read as text
    assert duplex.title == "Full-Duplex Spoken Dialogue with Streaming Speech Language Models"
    assert "listens and speaks at the same time" in duplex.text
    assert "a 2× lower latency" in duplex.text and "≈ 90%" in duplex.text
    assert "Switchboard" in duplex.text and "\\" not in duplex.text and "$" not in duplex.text
    assert duplex.authors == "Ada Lovelace; Charles Babbage; Mary Somerville"
    assert (duplex.venue, duplex.year) == ("arXiv", 2023)  # the first version's year, not v2's
    assert duplex.url == "https://arxiv.org/abs/2305.01234"
    assert duplex.extra["categories"] == "cs.CL cs.SD eess.AS"
    assert not duplex.title_derived
    moe = papers["2210.04567"]
    assert moe.extra["doi"] == "10.5555/jmlr.2023.123"
    assert moe.extra["journal_ref"].startswith("Journal of Machine Learning Research")
    assert "O(1) capacity rule" in moe.text and "k ≥ 2" in moe.text
    assert papers["2401.09999"].authors == "Grace Hopper; Kurt Gödel"
    assert papers["hep-th/9901001"].year == 1999
    assert papers["2303.07777"].source == "arxiv_slice.jsonl#5"


def test_a_bad_arxiv_line_stops_the_read_at_its_line_or_is_skipped_and_counted():
    with pytest.raises(CorpusError) as caught:
        read_sources([FIXTURES / "arxiv_bad.jsonl"])
    assert str(caught.value).startswith(f"{FIXTURES / 'arxiv_bad.jsonl'}:3: malformed JSON")
    report = read_sources([FIXTURES / "arxiv_bad.jsonl"], skip_bad=True)
    assert [p.paper_id for p in report.papers] == ["2305.01234", "2210.04567"]
    assert [(e.line, "no text" in e.message) for e in report.skipped] == [(3, False), (4, True)]


# ================================================================ OpenReview

@pytest.mark.parametrize("name", ["openreview_notes.json", "openreview_notes.jsonl"])
def test_openreview_notes_as_an_array_or_lines_take_venue_and_year_from_venue(name):
    papers = _papers(name)
    assert [p.paper_id for p in papers] == ["aBcD123xyz", "QrSt456uvw", "NeUr789abc"]
    agent = papers[0]
    assert agent.title == "Listening While Speaking: Full-Duplex Speech Agents"
    assert "We propose EchoAgent, a full-duplex speech agent that plans" in agent.text
    assert "40%" in agent.text and "**" not in agent.text
    assert (agent.venue, agent.year) == ("ICLR", 2024)
    assert agent.extra["venue_label"] == "ICLR 2024 poster"
    assert agent.url == "https://openreview.net/forum?id=aBcD123xyz"
    assert agent.authors == "Hedy Lamarr; Nikola Tesla"
    assert agent.extra["keywords"] == "speech; dialogue; full-duplex"
    assert (papers[2].venue, papers[2].year) == ("NeurIPS", 2023)
    assert "3.1× speedup" in papers[2].text


def test_an_array_element_reports_the_line_it_starts_on():
    papers = _papers("openreview_notes.json")
    lines = (FIXTURES / "openreview_notes.json").read_text().split("\n")
    for paper in papers:
        assert lines[paper.line - 1].strip() == "{", (paper.line, lines[paper.line - 1])
    with pytest.raises(CorpusError) as caught:
        read_sources([FIXTURES / "openreview_bad.json"])
    assert caught.value.line and "malformed JSON" in caught.value.message


def test_a_note_without_venue_takes_venueid_or_its_publication_date(tmp_path):
    notes = [
        {"id": "n1", "content": {"title": {"value": "T"}, "abstract": {"value": "An abstract "
         "about graph transformers and their limits."}, "venueid": {"value":
         "ICML.cc/2025/Conference"}}},
        {"id": "n2", "pdate": 1700000000000, "content": {"title": {"value": "U"}, "abstract":
         {"value": "Another abstract about reinforcement learning from feedback."}}},
        {"id": "n3", "content": {"title": "Old API v1 note", "abstract": "API v1 notes keep "
         "their fields as plain strings, and they read the same way.", "venue": "ICLR 2019"}},
    ]
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(notes))
    got = [(p.venue, p.year, p.title) for p in read_sources([path]).papers]
    assert got == [("ICML", 2025, "T"), ("", 2023, "U"), ("ICLR", 2019, "Old API v1 note")]


# ================================================================ BibTeX

def test_bibtex_entries_with_abstracts_become_papers_and_the_rest_are_counted():
    report = read_sources([FIXTURES / "zotero.bib"])
    assert report.without_abstract == 3  # the entry without one, the @proceedings, the @book
    assert not report.skipped
    papers = {p.extra["bibtex_key"]: p for p in report.papers}
    assert list(papers) == ["mueller2024prosody", "chen2023tables", "kim2023diffusion",
                            "lee2024agents"]
    prosody = papers["mueller2024prosody"]
    assert prosody.title == "Prosody-Aware Speech Translation with Schönberg Adapters"
    assert prosody.authors == "Jürgen Müller; Siobhán O'Neil; Anna van der Berg"
    # The booktitle (an @string macro) is the venue's label; the venue its short name.
    assert prosody.venue == "ACL"
    assert prosody.extra["venue_label"].startswith("Proceedings of the 62nd Annual Meeting")
    assert prosody.paper_id == "10.18653/v1/2024.acl-long.65"  # its DOI identifies it
    assert prosody.year == 2024 and prosody.url == "https://aclanthology.org/2024.acl-long.65"
    assert "speech & text" in prosody.text and "18%" in prosody.text
    assert json.loads(prosody.extra["bibtex_fields"])["month"] == "aug"
    tables = papers["chen2023tables"]
    assert tables.authors == "Li Chen; María García"
    assert tables.venue == "TACL"
    assert tables.extra["venue_label"] == \
        "Transactions of the Association for Computational Linguistics"
    assert tables.year == 2023
    kim = papers["kim2023diffusion"]  # booktitle and year from its crossref
    assert kim.venue == "NeurIPS"
    assert kim.extra["venue_label"] == \
        "Advances in Neural Information Processing Systems 36 (NeurIPS 2023)"
    assert kim.year == 2023 and kim.title == "Diffusion Models for Speech Enhancement at 16 kHz"
    lee = papers["lee2024agents"]
    assert lee.title == "LLM Agents for Kernel Generation" and "1.8× speedup" in lee.text


def test_a_malformed_bibtex_entry_names_its_line_and_skip_bad_keeps_the_others():
    with pytest.raises(CorpusError) as caught:
        read_sources([FIXTURES / "bad.bib"])
    assert caught.value.line == 9 and "malformed BibTeX" in caught.value.message
    report = read_sources([FIXTURES / "bad.bib"], skip_bad=True)
    assert [p.title for p in report.papers] == ["A Good Entry", "After the Break"]
    assert len(report.skipped) == 1


def test_a_duplicate_bibtex_key_is_read_through_and_counted(tmp_path):
    entry = "@article{same, title={T}, year={2020}, abstract={An abstract of enough words.}}\n"
    path = tmp_path / "dup.bib"
    path.write_text(entry + "\n" + entry.replace("{T}", "{U}"))
    report = read_sources([path])
    assert [p.title for p in report.papers] == ["T", "U"]  # two papers: titles differ
    assert report.tallies == {"duplicate_key": 1}


def test_the_bibtex_fixture_is_valid_for_the_parser_itself():
    library = bibtexparser.parse_file(str(FIXTURES / "zotero.bib"))
    assert not library.failed_blocks and len(library.entries) == 7


# ================================================================ LaTeX and Markdown

@pytest.mark.parametrize(("raw", "text"), [
    ("$\\textbf{EGG}$ runs", "EGG runs"),
    ("$\\underline{E}$xpert", "Expert"),
    ("a $2.13\\times$ speedup", "a 2.13× speedup"),
    ("Schr{\\\"o}dinger \\& {Braces}", "Schrödinger & Braces"),
    ("50% of runs, 7\\% of tokens", "50% of runs, 7% of tokens"),  # a bare % is no comment
    ("about ~5 points", "about ~5 points"),
    ("see~\\cite{vaswani2017} for $\\mathcal{F}$", "see for F"),
    ("A* search, **bold**, *em*, _kept_ and `code`", "A* search, bold, em, _kept_ and code"),
    ("[code](https://github.com/a/b) is out", "code is out"),
    ("R$^2$ and $\\mathcal{W}_2$", "R² and W₂"),
    ("an unclosed {brace and \\frac{a", "an unclosed {brace and \\frac{a"),
    # found on the SciFact and mlconf corpora: money is no math, as pandoc reads "$"
    ("$37,000/QALY of $81,000/QALY", "$37,000/QALY of $81,000/QALY"),
    ("US$22 at $1060 ($20,209 versus $27,587)", "US$22 at $1060 ($20,209 versus $27,587)"),
    ("cost $5 for $x$", "cost $5 for x"),
    # a macro nobody defined reads as its name (an arXiv author's own "\\XQM")
    ("\\choose 2 and \\timestamp-free", "choose 2 and timestamp-free"),
    ("\\ygyan{usually} works", "usually works"),  # an author's own markup macro
    ("code\\footnote{https://github.com/a/b}.", "code (https://github.com/a/b)."),
])
def test_one_converter_reads_latex_and_markdown_as_text(raw, text):
    assert to_text(raw) == text
    assert to_text(to_text(raw)) == to_text(raw)


# ================================================================ seeds headers

@pytest.mark.parametrize(("header", "venue", "year"), [
    ("NeurIPS 2025 Accepted Papers", "NeurIPS", 2025),
    ("ACL 2024 论文", "ACL", 2024),
    ("ICLR 2026 (oral)", "ICLR", 2026),
    ("Accepted papers at EMNLP 2023", "EMNLP", 2023),
    ("NeurIPS'25 papers", "NeurIPS", 2025),
])
def test_seeds_headers_in_more_forms_name_venue_and_year(tmp_path, header, venue, year):
    path = tmp_path / "list.txt"
    path.write_text(f"{header}\n\nWe propose a method for header parsing that reads venues and "
                    "years.\n\nA second abstract about something else entirely, for the test.\n")
    papers = read_sources([path]).papers
    assert [(p.venue, p.year) for p in papers] == [(venue, year)] * 2
    assert papers[0].extra["venue_label"] == header


# ================================================================ selection

def test_where_and_limit_keep_a_slice_and_count_what_was_read():
    def read(where, limit=None):
        report = read_sources([FIXTURES / "arxiv_slice.jsonl"],
                              selection=Selection.parse(where, limit))
        return report.records_read, [p.paper_id for p in report.papers]

    assert read(["category=cs.CL"]) == (5, ["2305.01234", "2401.09999", "2303.07777"])
    assert read(["category=cs.CL", "year>=2024"]) == (5, ["2401.09999"])
    assert read(["category=cs.LG,hep-th"]) == (5, ["2210.04567", "hep-th/9901001"])
    assert read(["year<2000"]) == (5, ["hep-th/9901001"])
    assert read(["category!=cs.CL", "year=2022"]) == (5, ["2210.04567"])
    assert read([], limit=2) == (2, ["2305.01234", "2210.04567"])  # stops reading at the limit
    assert read(["venue=ICLR"]) == (5, [])


def test_where_filters_every_format_by_venue_and_year():
    paths = [FIXTURES / "openreview_notes.json", FIXTURES / "zotero.bib"]
    report = read_sources(paths, selection=Selection.parse(["venue=iclr"]))
    assert [p.paper_id for p in report.papers] == ["aBcD123xyz", "QrSt456uvw"]
    report = read_sources(paths, selection=Selection.parse(["year=2023"]))
    assert [p.title for p in report.papers] == [
        "Speculative Decoding with Draft Trees", "Table Reasoning with Program-of-Thought",
        "Diffusion Models for Speech Enhancement at 16 kHz"]


@pytest.mark.parametrize("bad", ["category", "author=x", "year>=soon", "venue>ICLR", "=cs.CL"])
def test_a_bad_where_says_what_is_accepted(bad):
    with pytest.raises(ValueError, match="--where"):
        Selection.parse([bad])


def test_an_openreview_api_response_and_an_array_with_blank_lines_read_with_true_lines(
        tmp_path):
    notes = json.loads((FIXTURES / "openreview_notes.json").read_text())
    wrapped = tmp_path / "response.json"
    wrapped.write_text(json.dumps({"notes": notes, "count": 3}, indent=2))
    spaced = tmp_path / "spaced.json"
    spaced.write_text("[\n\n" + ",\n\n".join(json.dumps(n) for n in notes) + "\n]\n")
    for path in (wrapped, spaced):
        papers = read_sources([path]).papers
        assert [p.paper_id for p in papers] == ["aBcD123xyz", "QrSt456uvw", "NeUr789abc"]
        lines = path.read_text().split("\n")
        assert all(lines[p.line - 1].lstrip().startswith("{") for p in papers)
    assert [p.line for p in read_sources([spaced]).papers] == [3, 5, 7]
