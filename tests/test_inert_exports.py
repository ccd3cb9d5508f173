"""Exports carry no live HTML: papers whose title, authors or abstract hold tags, scripts or
`javascript:` links, ingested for real, come out of every Markdown ragqa writes (summaries,
chat transcripts, the page's download is the summary's) and of the BibTeX export inert."""

from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import unquote

import bibtexparser
import pytest

from ragqa.sources.latex import latex_to_text

HOSTILE = [
    {"id": "evil-1", "title": "Spiking <img src=x onerror=alert(1)> networks <script>alert(1)"
     "</script>", "authors": "Mallory <svg onload=alert(2)>", "url": "javascript:alert(3)",
     "abstract": "We train spiking neural networks for event cameras with surrogate gradients. "
     "See [our code](javascript:alert(4)) and <iframe src=https://evil.example></iframe>. "
     "Spiking networks reach 92% accuracy on event data."},
    {"id": "evil-2", "title": "Event cameras and spiking neurons [x](data:text/html,boom)",
     "url": "https://example.org/paper",
     "abstract": "Spiking neurons process event camera streams. ![pixel](javascript:alert(5)) "
     "Our spiking model halves the energy of event-based recognition."},
]
FILLER = [{"id": f"fill-{i}", "title": f"A study of {t}",
           "abstract": f"We study {t} with new methods and report strong results on benchmarks."}
          for i, t in enumerate(["protein folding", "traffic forecasting", "machine translation",
                                 "image segmentation", "robot grasping", "music generation",
                                 "code generation", "tabular learning", "weather forecasting",
                                 "recommender systems"])]
LIVE = re.compile(r"<(?:img|script|svg|iframe)|\]\((?:javascript|data):|\]\(\s*<?javascript",
                  re.IGNORECASE)


@pytest.fixture
def hostile(ragqa, tmp_path):
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in HOSTILE + FILLER), encoding="utf-8")
    assert ragqa("ingest", str(source), "--quiet").exit_code == 0
    return ragqa


def test_the_summary_markdown_is_inert(hostile, tmp_path):
    out = tmp_path / "summary.md"
    result = hostile("summarize", "spiking neural networks for event cameras", "--out", str(out),
                     "--llm", "none")
    assert result.exit_code == 0, result.output
    markdown = out.read_text(encoding="utf-8")
    assert "Spiking" in markdown and "&lt;script" in markdown  # shown, as text
    assert not LIVE.search(markdown), LIVE.search(markdown)
    assert "](https://example.org/paper)" in markdown  # a web page is still a link


def test_the_chat_transcript_is_inert(hostile, tmp_path):
    saved = tmp_path / "chat.md"
    result = hostile("chat", "--llm", "none", input="Which papers train spiking networks on "
                     f"event cameras?\n/save {saved}\n")
    assert result.exit_code == 0, result.output
    transcript = saved.read_text(encoding="utf-8")
    assert "evil-1" in transcript and not LIVE.search(transcript), LIVE.search(transcript)


def test_the_bibtex_export_links_only_web_pages(hostile):
    bib = hostile("papers", "--format", "bibtex").stdout
    assert "javascript:" not in bib.split("abstract")[0]  # no url field from a record's script
    assert not re.search(r"url\s*=\s*\{javascript", bib, re.IGNORECASE)
    assert re.search(r"url\s*=\s*\{https://example.org/paper\}", bib)


# ---------------------------------------------------------------- BibTeX and CSV injection
# Records whose fields would end their BibTeX entry and open another, or make the rest of the
# file unparseable, and cells a spreadsheet would run (issue "Trust, round two", item 3): read
# by `ragqa ingest` from a .jsonl and a .bib, exported by `ragqa papers --format` and
# `summarize --bib`, parsed back by bibtexparser and the csv module.

SPIKING = "Spiking neural networks learn from event cameras with surrogate gradients."
ARXIV_ID = "2401.00001},note={pwned}}@misc{evil3,title={Injected}"
ARXIV_CATEGORY = "cs.LG}}@misc{evil4"
BIB_RECORDS = [
    {"id": "url-closes-entry", "title": "A URL that closes its entry", "abstract": SPIKING,
     "url": "https://x.org/a},note={pwned}}@misc{evil1,title={Injected}"},
    {"id": "doi-opens-entry", "title": "A DOI that opens an entry", "abstract": SPIKING,
     "doi": "10.1000/x}, note = {pwned}}\n@misc{evil2, title = {Injected}"},
    {"id": "lone-brace", "title": "A lone brace", "doi": "10.1000/{", "abstract": SPIKING},
    {"id": ARXIV_ID, "title": "An arXiv id that closes its entry", "abstract": SPIKING,
     "authors_parsed": [["Doe", "Jane", ""]], "categories": ARXIV_CATEGORY,
     "versions": [{"version": "v1", "created": "Mon, 1 Jan 2024 00:00:00 GMT"}]},
    {"id": "claims-bibtex", "title": "Fields a record names", "abstract": SPIKING,
     "source_format": "bibtex", "bibtex_type": "misc{evil5,",
     "bibtex_fields": json.dumps({"title": "Fields a record names", "x},pwned={y": "z",
                                  "note": "a\n@misc(evil6, title={Injected})"})},
]
# BibTeX counts the escaped brace, bibtexparser does not: written as it is, `}` ends the note.
BIB_FILE = ('@article{own, title = {Escaped braces in a note}, note = "\\{}, evil = {x}",\n'
            f"  abstract = {{{SPIKING}}}}}\n")
# title -> the text each field must read back as (identifiers and URLs percent-decoded)
BIB_EXPECTED = {
    "A URL that closes its entry": {"url": BIB_RECORDS[0]["url"]},
    "A DOI that opens an entry": {"doi": BIB_RECORDS[1]["doi"]},
    "A lone brace": {"doi": "10.1000/{"},
    "An arXiv id that closes its entry": {"eprint": ARXIV_ID, "primaryclass": ARXIV_CATEGORY,
                                          "url": f"https://arxiv.org/abs/{ARXIV_ID}"},
    "Fields a record names": {"note": "a @misc(evil6, title=Injected)"},
    "Escaped braces in a note": {"note": "{, evil = x"},
}


@pytest.fixture
def injected(ragqa, tmp_path):
    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in BIB_RECORDS),
                                          encoding="utf-8")
    (folder / "library.bib").write_text(BIB_FILE, encoding="utf-8")
    result = ragqa("ingest", str(folder), "--quiet")
    assert result.exit_code == 0, result.output
    return ragqa


def _assert_bib_reads_back(bib: str, titles: set[str]) -> None:
    """One entry per paper, no other, no failed block; every field reads back as its text."""
    library = bibtexparser.parse_string(bib)
    assert not library.failed_blocks, [b.error for b in library.failed_blocks]
    entries = {latex_to_text(e.fields_dict["title"].value): e for e in library.entries}
    assert set(entries) == titles and len(library.entries) == len(titles), list(entries)
    for title, entry in entries.items():
        fields = {f.key: f.value for f in entry.fields}
        assert not {"pwned", "evil"} & set(fields) and entry.entry_type in {
            "misc", "article"}, (title, fields)
        assert latex_to_text(fields["abstract"]) == SPIKING, title
        for name, text in BIB_EXPECTED[title].items():
            value = unquote(fields[name]) if name in {"url", "doi", "eprint", "primaryclass"} \
                else " ".join(latex_to_text(fields[name]).split())
            assert value == text, (title, name, fields[name])


def test_no_field_of_a_record_can_end_its_bibtex_entry_or_start_another(injected, tmp_path):
    _assert_bib_reads_back(injected("papers", "--format", "bibtex").stdout, set(BIB_EXPECTED))
    # The summary's --bib is the same writer, over the papers the summary cites.
    bib = tmp_path / "summary.bib"
    summary = injected("summarize", "spiking networks for event cameras", "--llm", "none",
                       "--json", "--bib", str(bib))
    assert summary.exit_code == 0, summary.output
    cited = {r["title"] for r in json.loads(summary.stdout)["references"]}
    assert cited & set(BIB_EXPECTED), cited
    _assert_bib_reads_back(bib.read_text(encoding="utf-8"), cited)


FORMULAS = [
    {"id": "-formula-id", "title": '=HYPERLINK("https://evil.example","Click")',
     "abstract": "+cmd|' /C calc'!A0 spiking networks on event cameras.",
     "authors": "@SUM(1+1)", "venue": "-2+3", "doi": "\t=1+1", "categories": "\r=1+1"},
    {"id": "quoted-formula", "title": "'=already quoted", "abstract": SPIKING},
    {"id": "plain", "title": "A plain title", "abstract": SPIKING, "authors": "Jane Doe"},
]


def test_no_csv_cell_starts_a_formula_and_the_csv_reads_back_as_the_papers(ragqa, tmp_path):
    source = tmp_path / "formulas.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in FORMULAS), encoding="utf-8")
    assert ragqa("ingest", str(source), "--quiet").exit_code == 0
    exported = ragqa("papers", "--format", "csv").stdout
    header, *rows = list(csv.reader(io.StringIO(exported)))
    cells = {row[header.index("id")]: dict(zip(header, row, strict=True)) for row in rows}
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    formula = cells["'-formula-id"]
    assert formula["title"] == "'" + FORMULAS[0]["title"]  # shown as the text, not run
    assert (formula["abstract"], formula["authors"], formula["venue"], formula["doi"]) == (
        "'" + FORMULAS[0]["abstract"], "'@SUM(1+1)", "'-2+3", "'\t=1+1")
    assert cells["quoted-formula"]["title"] == "''=already quoted"
    assert cells["plain"]["title"] == "A plain title"
    # ragqa reads its CSV back as the same papers
    (tmp_path / "out.csv").write_text(exported, encoding="utf-8")
    assert ragqa("ingest", str(tmp_path / "out.csv"), "-c", "again", "--quiet").exit_code == 0

    def papers(*args: str) -> list:
        listed = json.loads(ragqa("papers", "--json", *args).stdout)["papers"]
        return sorted((p["paper_id"], p["title"], p["text"], p["authors"], p["venue"])
                      for p in listed)

    assert papers("-c", "again") == papers()
