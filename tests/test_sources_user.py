"""The user's whole path with real sources: an arXiv slice, an OpenReview export and a
Zotero-style .bib ingested into ONE collection; questions across them; filters by category,
venue and year; BibTeX out of a summary, an answer and a chat that parses back; linked
Markdown; `papers --format` and the JSON Lines round trip."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import bibtexparser
import pytest

from ragqa.sources import read_sources

FIXTURES = Path(__file__).parent / "fixtures" / "sources"
SOURCES = [FIXTURES / "arxiv_slice.jsonl", FIXTURES / "openreview_notes.json",
           FIXTURES / "zotero.bib"]
CS_CL = {"2305.01234", "2401.09999", "2303.07777"}
KEY = re.compile(r"^[a-z0-9]+\d{4}[a-z0-9]+[a-z]?$|^[a-z]+nd[a-z0-9]+[a-z]?$")


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def mixed(ragqa):
    report = _json(ragqa("ingest", *map(str, SOURCES), "--quiet", "--json"))
    assert (report["added"], report["without_abstract"], report["skipped_bad"]) == (12, 3, 0)
    return ragqa


def _ids(result) -> set[str]:
    return {r["paper_id"] for r in _json(result)["results"]}


def test_one_collection_answers_across_arxiv_openreview_and_bibtex(mixed, tmp_path):
    papers = {p["paper_id"]: p for p in _json(mixed("papers", "--json"))["papers"]}
    formats = {p["extra"]["source_format"] for p in papers.values()}
    assert formats == {"arxiv", "openreview", "bibtex"}
    answer = _json(mixed("ask", "Which papers do full-duplex speech?", "--json"))
    cited = {c["paper_id"] for c in answer["citations"]}
    assert {"2305.01234", "aBcD123xyz"} <= cited  # an arXiv paper and an OpenReview note
    speech = _ids(mixed("search", "speech", "--no-cut", "-k", "20", "--json"))
    assert any(papers[pid]["extra"]["source_format"] == "bibtex" for pid in speech)

    # --category: dense (Chroma's where) and BM25 (the snapshot) both keep only cs.CL papers,
    # and all of them, whatever the query
    for query in ("speech", "language models", "graph neural networks", "retrieval"):
        got = _ids(mixed("search", query, "--no-cut", "-k", "20", "--category", "cs.CL",
                         "--json"))
        assert got == CS_CL, query
    assert _ids(mixed("search", "speech", "--no-cut", "--category", "CS.cl", "--json")) == CS_CL
    assert _ids(mixed("search", "lattice", "--no-cut", "--category", "hep-lat", "--json")) == {
        "hep-th/9901001"}
    assert not _ids(mixed("search", "speech", "--no-cut", "--category", "q-bio.NC", "--json"))
    # venue and year, across formats
    assert _ids(mixed("search", "speech", "--no-cut", "--venue", "ICLR", "--year", "2024",
                      "--json")) == {"aBcD123xyz", "QrSt456uvw"}
    year_2023 = _ids(mixed("search", "models", "--no-cut", "-k", "20", "--year", "2023",
                           "--json"))
    assert year_2023 == {pid for pid, p in papers.items() if p["year"] == 2023}
    assert {papers[pid]["extra"]["source_format"] for pid in year_2023} == {
        "arxiv", "openreview", "bibtex"}
    answer = _json(mixed("ask", "How much lower is the latency of DuplexLM?", "--category",
                         "cs.CL", "--json"))
    assert answer["citations"][0]["paper_id"] == "2305.01234"
    assert {c["paper_id"] for c in answer["citations"]} <= CS_CL


def test_a_summary_writes_bibtex_that_parses_back_and_markdown_with_links(mixed, tmp_path):
    bib, markdown = tmp_path / "refs.bib", tmp_path / "summary.md"
    summary = _json(mixed("summarize", "speech", "--bib", str(bib), "--out", str(markdown),
                          "--json"))
    references = summary["references"]
    assert len(references) >= 3
    library = bibtexparser.parse_file(str(bib))
    assert not library.failed_blocks
    assert len(library.entries) == len(references)
    keys = [e.key for e in library.entries]
    assert len(set(keys)) == len(keys) and all(KEY.match(k) for k in keys), keys
    by_key = {e.key: e for e in library.entries}
    if "lovelace2023fullduplex" in by_key:  # the arXiv paper: eprint, class, link
        entry = by_key["lovelace2023fullduplex"]
        assert entry["eprint"] == "2305.01234" and entry["primaryclass"] == "cs.CL"
    if "muller2024prosodyaware" in by_key:  # the .bib entry keeps its own fields
        entry = by_key["muller2024prosodyaware"]
        assert entry["pages"] == "1201--1215" and entry["doi"] == "10.18653/v1/2024.acl-long.65"
    # read back by ragqa: the same titles and texts as the summary's papers
    back = {p.title: p for p in read_sources([bib]).papers}
    papers = {p["paper_id"]: p for p in _json(mixed("papers", "--json"))["papers"]}
    for reference in references:
        paper = papers[reference["paper_id"]]
        assert back[paper["title"]].text == paper["text"]
    text = markdown.read_text()
    linked = [p for p in (papers[r["paper_id"]] for r in references) if p["url"]]
    assert linked and all(f"]({p['url']})" in text for p in linked)
    # filtered summaries
    iclr = _json(mixed("summarize", "--all", "--venue", "ICLR", "--json"))
    assert {r["paper_id"] for r in iclr["references"]} <= {"aBcD123xyz", "QrSt456uvw"}
    cl = _json(mixed("summarize", "--all", "--category", "cs.CL", "--json"))
    assert {r["paper_id"] for r in cl["references"]} <= CS_CL


def test_ask_and_chat_write_bibtex_and_the_transcript_links_references(mixed, tmp_path):
    bib = tmp_path / "ask.bib"
    answer = _json(mixed("ask", "Which papers do full-duplex speech?", "--bib", str(bib),
                         "--json"))
    entries = bibtexparser.parse_file(str(bib)).entries
    assert len(entries) == len(answer["citations"]) >= 2
    chat_bib, saved, on_exit = tmp_path / "chat.bib", tmp_path / "chat.md", tmp_path / "end.bib"
    result = mixed("chat", "--bib", str(on_exit), input=(
        f"Which papers do full-duplex speech?\n/bib {chat_bib}\n/save {saved}\n/quit\n"))
    assert result.exit_code == 0, result.output
    assert f"papers to {chat_bib}" in " ".join(result.stdout.split())
    chat_entries = bibtexparser.parse_file(str(chat_bib)).entries
    assert chat_entries and not bibtexparser.parse_file(str(chat_bib)).failed_blocks
    assert on_exit.read_text() == chat_bib.read_text()
    transcript = saved.read_text()
    assert "](https://arxiv.org/abs/2305.01234)" in transcript
    assert "](https://openreview.net/forum?id=aBcD123xyz)" in transcript
    result = mixed("ask", "speech", "--bib", str(tmp_path / "no" / "such.bib"))
    assert result.exit_code == 2 and "--bib" in result.stderr


def test_papers_export_formats_and_the_jsonl_round_trip(mixed, ragqa, tmp_path):
    held = {p["paper_id"]: p for p in _json(mixed("papers", "--json"))["papers"]}
    exported = mixed("papers", "--format", "jsonl")
    assert exported.exit_code == 0, exported.output
    path = tmp_path / "export.jsonl"
    path.write_text(exported.stdout)
    _json(ragqa("ingest", str(path), "-c", "copy", "--quiet", "--json"))
    copy = {p["paper_id"]: p for p in _json(ragqa("papers", "-c", "copy", "--json"))["papers"]}
    assert copy.keys() == held.keys()
    for pid, paper in held.items():
        assert (copy[pid]["text"], copy[pid]["title"], copy[pid]["year"], copy[pid]["venue"],
                copy[pid]["url"]) == (paper["text"], paper["title"], paper["year"],
                                      paper["venue"], paper["url"]), pid
    # the copy filters by category too
    assert _ids(ragqa("search", "speech", "-c", "copy", "--no-cut", "-k", "20", "--category",
                      "cs.CL", "--json")) == CS_CL
    rows = list(csv.DictReader(io.StringIO(mixed("papers", "--format", "csv").stdout)))
    assert {r["id"] for r in rows} == held.keys()
    assert next(r for r in rows if r["id"] == "2305.01234")["categories"] == "cs.CL cs.SD eess.AS"
    bibtex = mixed("papers", "--format", "bibtex").stdout
    library = bibtexparser.parse_string(bibtex)
    assert not library.failed_blocks and len(library.entries) == len(held)
    result = mixed("papers", "--format", "yaml")
    assert result.exit_code == 2 and "--format" in result.stderr


def test_the_seeds_round_trip_through_jsonl_with_the_same_ids_and_texts(seeded, ragqa,
                                                                       tmp_path):
    held = {p["paper_id"]: p for p in _json(seeded("papers", "--json"))["papers"]}
    path = tmp_path / "seeds.jsonl"
    path.write_text(seeded("papers", "--format", "jsonl").stdout)
    _json(ragqa("ingest", str(path), "-c", "seeds-copy", "--quiet", "--json"))
    copy = {p["paper_id"]: p for p in _json(ragqa("papers", "-c", "seeds-copy",
                                                  "--json"))["papers"]}
    assert copy.keys() == held.keys() and len(copy) == 29
    assert all(copy[pid]["text"] == held[pid]["text"] for pid in held)
    assert all(copy[pid]["title"] == held[pid]["title"] for pid in held)
