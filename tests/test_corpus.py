"""Source files -> Paper records: the seeds, JSONL (plain and gzipped), CSV, encodings, ids,
derived titles, code links, and every kind of bad input (exit code 2, one line, nothing written).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragqa.errors import CorpusError
from ragqa.sources import read_sources
from ragqa.sources.paper import Paper, derive_title, text_id

from .conftest import SEEDS
from .helpers.corpus import (
    ABSTRACT_1,
    ABSTRACT_2,
    ABSTRACT_3,
    _assert_failed_cleanly,
    _collection_exists,
    _jsonl,
    _write,
)

SEED_A = "000_5a03819fc22e34a3.txt"  # header "ICML 2026 Papers", 10 abstracts
SEED_B = "001_f2883c612296ae37.txt"  # header "ICML 2026 论文列表", 19 abstracts
SEED_COUNTS = {SEED_A: (10, "ICML 2026 Papers"), SEED_B: (19, "ICML 2026 论文列表")}


def _seed_papers(*names: str) -> list[Paper]:
    return read_sources([SEEDS / n for n in (names or sorted(SEED_COUNTS))]).papers


def _by_title(papers: list[Paper]) -> dict[str, Paper]:
    return {p.title: p for p in papers}


# ================================================================ the seeds


@pytest.mark.parametrize("name", sorted(SEED_COUNTS))
def test_seed_file_parses_to_its_abstracts_and_the_header_is_no_paper(name):
    count, label = SEED_COUNTS[name]
    papers = _seed_papers(name)
    assert len(papers) == count
    assert [p.source for p in papers] == [f"{name}#{i}" for i in range(1, count + 1)]
    for paper in papers:
        assert label not in paper.text and paper.title != label
        assert (paper.venue, paper.year) == ("ICML", 2026)
        assert paper.extra["venue_label"] == label
        assert paper.title_derived and len(paper.text) > 200


def test_seed_ids_are_stable_unique_and_hash_the_normalised_text():
    first, second = _seed_papers(), _seed_papers()
    assert len(first) == 29
    assert [p.paper_id for p in first] == [p.paper_id for p in second]
    assert len({p.paper_id for p in first}) == 29
    for paper in first:
        assert paper.paper_id == text_id(_source_block(
            (SEEDS / paper.source.split("#")[0]).read_bytes(), paper.line))
    # Nothing but the text decides the id: not the file, nor the position in it.
    assert text_id("  " + first[0].text.upper() + "\n") == first[0].paper_id


def _source_block(data: bytes, line: int) -> str:
    """The abstract as the file writes it: its lines from `line` to the next blank one (byte-
    order marks dropped before line breaks are read, as plain.read_text does: a CR, a BOM and an LF
    are one break)."""
    lines = data.decode("utf-8").replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n")
    block = []
    for text in lines.split("\n")[line - 1:]:
        if not text.strip():
            break
        block.append(text.strip())
    return " ".join(block)


def test_latex_and_markdown_become_text_but_ids_hash_the_source_text():
    """One converter for every format; the id stays the hash of what the source wrote, so the
    ids of collections and judged sets built before it stay valid."""
    papers = _by_title(_seed_papers())
    egg = papers["EGG"]
    assert "EGG, an Expert-Guided Agent Framework for Kernel Generation" in egg.text
    assert "2.13× average speedup" in egg.text
    assert "$" not in egg.text and "\\" not in egg.text
    assert egg.paper_id == "fa30d4a05047d236"  # as before the converter
    dvpd = papers["DVPD"]
    assert "DVPD, an extremely lightweight Dual-View Predictive Diffusion" in dvpd.text
    assert all("$\\" not in p.text and "**" not in p.text for p in papers.values())


def test_same_abstract_with_other_whitespace_and_format_gets_the_same_id(tmp_path):
    words = ABSTRACT_1.split(" ")
    wrapped = "\n".join(" \t".join(words[i : i + 6]) for i in range(0, len(words), 6))
    one_line = _write(tmp_path / "one.txt", ABSTRACT_1 + "\n\n" + ABSTRACT_2 + "\n")
    reflowed = _write(tmp_path / "reflowed.txt", "\n" + wrapped + "\n\n\n" + ABSTRACT_3 + "\n")
    as_jsonl = _write(tmp_path / "as.jsonl", _jsonl({"abstract": "  " + ABSTRACT_1 + "  "}))
    ids = [read_sources([path]).papers[0].paper_id for path in (one_line, reflowed, as_jsonl)]
    assert ids[0] == ids[1] == ids[2] == text_id(ABSTRACT_1)
    assert len({p.paper_id for p in read_sources([one_line]).papers}) == 2


def test_a_file_without_header_has_no_venue(tmp_path):
    path = _write(tmp_path / "plain.txt", ABSTRACT_1 + "\n\n" + ABSTRACT_2 + "\n")
    papers = read_sources([path]).papers
    assert [p.source for p in papers] == ["plain.txt#1", "plain.txt#2"]
    assert all((p.venue, p.year) == ("", None) and "venue_label" not in p.extra for p in papers)


@pytest.mark.parametrize("header, venue, year", [
    ("ICML 2026 Papers", "ICML", 2026),
    ("ICML 2026 论文列表", "ICML", 2026),
    ("NeurIPS 2025 Accepted Papers", "NeurIPS", 2025),
])
def test_header_line_becomes_the_venue_label(tmp_path, header, venue, year):
    path = _write(tmp_path / "h.txt", f"{header}\n\n{ABSTRACT_1}\n\n{ABSTRACT_2}\n")
    papers = read_sources([path]).papers
    assert len(papers) == 2
    assert all((p.venue, p.year, p.extra["venue_label"]) == (venue, year, header) for p in papers)


def test_a_header_alone_is_never_a_paper(tmp_path):
    path = _write(tmp_path / "only_header.txt", "NeurIPS 2025 Accepted Papers\n")
    with pytest.raises(CorpusError):
        read_sources([path])


# ================================================================ derived titles and code links


@pytest.mark.parametrize("title", [
    "Moshi-RAG", "τ-Voice", "DVPD", "EGG", "TableAgent-Bench", "AG-REPA", "Hibiki-Zero",
])
def test_seed_titles_name_the_system(title):
    assert title in _by_title(_seed_papers())


def test_seed_titles_carry_no_markup_and_are_short():
    for paper in _seed_papers():
        assert paper.title
        for mark in ("**", "$", "\\textbf", "\\", "{", "}", "`"):
            assert mark not in paper.title, paper.title
        assert len(paper.title.split()) <= 11, paper.title


def test_an_abstract_that_names_no_system_gets_its_contribution_or_subject():
    titles = {p.paper_id: p.title for p in _seed_papers(SEED_A) + _seed_papers(SEED_B)}
    # "This work introduces a low-overhead compatibility certificate for learned operator
    # pairs, together with ..."
    assert titles["108d4c2dbed42200"] == ("Low-overhead compatibility certificate for learned "
                                          "operator pairs")
    # "To address this challenge, we propose a goal-oriented clarification framework that ..."
    assert titles["f5a44d24026af0f0"] == "Goal-oriented clarification framework"
    # No "we propose": the subject of the first sentence ("... (RFT) has shown promise ...").
    assert titles["da852d605e028524"] == "Reinforcement fine-tuning (RFT)"
    assert titles["cb72da50ed75cc62"] == "Predictive coding (PC)"
    assert all(len(t) <= 80 and not t.endswith(".") for t in titles.values())


@pytest.mark.parametrize(("text", "title"), [
    ("Models forget. We propose a simple replay buffer that stores gradients, and show gains.",
     "Simple replay buffer"),
    ("Here we present an efficient sampler for discrete diffusion models; it is exact.",
     "Efficient sampler for discrete diffusion models"),
    ("Sparse attention has become popular for long inputs, but it loses accuracy.",
     "Sparse attention"),
    ("Learning to rank documents with very long and noisy user interaction histories across many "
     "sessions remains an open problem for search engines.", None),
])
def test_a_derived_title_is_a_phrase_never_a_whole_sentence(text, title):
    derived = derive_title(text)
    if title:
        assert derived == title
    assert len(derived) <= 81 and len(derived.split()) <= 11, derived


@pytest.mark.parametrize("text, title", [
    ("In this work, we propose **DVPD**, an extremely lightweight model for speech.", "DVPD"),
    ("We propose $\\textbf{EGG}$, an $\\underline{E}$xpert-guided kernel generator.", "EGG"),
    ("Voice agents are hard to evaluate. We introduce τ-Voice, a benchmark for them.", "τ-Voice"),
    ("We present a method called ZipRerank that reranks documents quickly.", "ZipRerank"),
    ("Models drift. We present Training-Free Orchestration (LLM-Orch), a framework.", "LLM-Orch"),
])
def test_derive_title_finds_the_named_system_without_marks(text, title):
    assert derive_title(text) == title


@pytest.mark.parametrize("text", [
    "Graph neural networks for molecular property prediction with Cartesian tensors.",
    "Conditionally positive definite kernels are defined with respect to a space of "
    "polynomials, and we study how they behave under many different transformations at once.",
    "**Bold** claims about $\\textbf{robust}$ training need careful and repeated evaluation on "
    "many benchmarks.",
])
def test_derive_title_falls_back_to_a_short_plain_lead_phrase(text):
    title = derive_title(text)
    assert title and len(title.split()) <= 11
    assert not any(mark in title for mark in ("**", "$", "\\textbf"))
    assert title.split()[0] in text.replace("**", "")


@pytest.mark.parametrize("text, name", [
    ("We propose $\\texttt{CodeR}$, a repository-level code retrieval approach.", "CodeR"),
    ("We present *SparseFlow*, a sparse attention method for video diffusion.", "SparseFlow"),
    ("We present __Orca__, a system for serving LLMs with low latency.", "Orca"),
    ("We introduce \\emph{\\textbf{Aria}}, a multimodal assistant for robots.", "Aria"),
    pytest.param("We introduce \\textsc{Lumen}, a benchmark for long-context reasoning.",
                 "Lumen", id="textsc"),
    pytest.param("We propose \\textsf{FastKV}, a cache compression method for long inputs.",
                 "FastKV", id="textsf"),
    pytest.param("We introduce \\textbf{\\textsc{Aria}}, a multimodal assistant for robots.",
                 "Aria", id="nested-textsc"),
    pytest.param("We propose $\\mathcal{M}$-Net, a network for structured prediction.",
                 "-Net", id="mathcal-name"),
    pytest.param("$\\mathcal{O}(n)$ attention is possible with kernels, and we show how to "
                 "learn them well.", "attention", id="mathcal-lead"),
])
def test_derived_titles_carry_no_latex_commands(text, name):
    title = derive_title(text)
    assert name in title
    assert not any(mark in title for mark in ("\\", "{", "}", "$", "*", "__", "`")), title


def test_a_derived_title_is_never_empty():
    assert derive_title("... and we show that transformers can learn to sort long lists.")


def test_derive_title_is_fast_on_an_unclosed_parenthesis():
    def too_slow(*_args):
        raise TimeoutError("derive_title took longer than 2 s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        title = derive_title("We propose (" + "A" * 3000 + " for efficient inference.")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert title


@pytest.mark.parametrize("title, urls", [
    ("DVPD", ["https://github.com/ke12345213/dvpd_demo"]),
    ("A²SG", ["https://github.com/KIST-NCL/A2SG.git"]),
    ("AudioChat", ["https://audiochat-icml-2026.github.io/"]),
    ("ZipRerank", ["https://anonymous.4open.science/r/ZipRerank"]),
    ("Hibiki-Zero", [
        "https://huggingface.co/spaces/kyutai/hibiki-zero-samples",
        "https://huggingface.co/kyutai/hibiki-zero-3b-pytorch-bf16",
        "https://github.com/kyutai-labs/hibiki-zero",
        "https://huggingface.co/datasets/kyutai/Audio-NTREX-4L",
    ]),
    pytest.param("CPO", ["https://github.com/visitworld123/CPO"]),
])
def test_seed_code_links_are_extracted_without_trailing_punctuation(title, urls):
    paper = _by_title(_seed_papers())[title]
    assert paper.code_urls == urls
    assert paper.extra["code_urls"] == " ".join(urls)
    assert paper.url == urls[0]


def test_abstracts_without_links_have_no_code_urls():
    papers = _by_title(_seed_papers())
    for title in ("Moshi-RAG", "τ-Voice", "EGG", "TableAgent-Bench"):
        assert "code_urls" not in papers[title].extra and papers[title].code_urls == []


_LINK = "https://github.com/org/repo"
_WRAPPED_LINKS = [
    pytest.param(f"Code is at {_LINK}.", id="period"),
    pytest.param(f"Code is at {_LINK}, with data.", id="comma"),
    pytest.param(f"Code is at {_LINK}; data too.", id="semicolon"),
    pytest.param(f"Code is at: {_LINK}:", id="colon"),
    pytest.param(f"Code is public ({_LINK}).", id="parentheses"),
    pytest.param(f"See the [code]({_LINK}).", id="markdown-link"),
    pytest.param(f"Code is at {_LINK}...", id="ellipsis"),
]
for _case, _text in [("exclamation", f"Code is at {_LINK}!"),
                     ("question-mark", f"Is the code at {_LINK}?"),
                     ("markdown-bold", f"Code is at **{_LINK}**."),
                     ("markdown-italics", f"Code is at _{_LINK}_."),
                     ("backticks", f"Code is at `{_LINK}`."),
                     ("curly-quotes", f"Code is at “{_LINK}”."),
                     ("ideographic-full-stop", f"代码见 {_LINK}。")]:
    _WRAPPED_LINKS.append(pytest.param(_text, id=_case))


@pytest.mark.parametrize("sentence", _WRAPPED_LINKS)
def test_code_links_lose_trailing_punctuation_and_marks(tmp_path, sentence):
    path = _write(tmp_path / "links.txt", f"{ABSTRACT_3} {sentence}\n")
    assert read_sources([path]).papers[0].code_urls == [_LINK]


# ================================================================ JSONL and CSV


@pytest.mark.parametrize("name", ["papers.jsonl", "papers.jsonl.gz", "papers.ndjson"])
def test_jsonl_records_map_to_papers(tmp_path, name):
    text = _jsonl(
        {"id": 42, "title": "Moshi-RAG: **retrieval** for full-duplex speech",
         "abstract": ABSTRACT_1, "authors": ["Ada Lovelace", "Alan Turing"],
         "venue": "NeurIPS", "year": 2025, "url": "https://example.org/42",
         "track": "oral", "score": 1.5, "tags": ["speech", "rag"], "accepted": True,
         "nested": {"a": 1}, "dropped": None},
        {"_id": "doc-7", "title": "TableAgent-Bench", "text": ABSTRACT_2,
         "authors": "Grace Hopper; Barbara Liskov", "year": "2024"},
    ) + "\n" + _jsonl({"abstract": ABSTRACT_3, "year": 2023.0})
    data = text.encode("utf-8")
    path = _write(tmp_path / name, gzip.compress(data) if name.endswith(".gz") else data)
    first, second, third = read_sources([path]).papers
    assert first.paper_id == "42"
    assert first.title == "Moshi-RAG: retrieval for full-duplex speech"
    assert (first.text, first.authors) == (ABSTRACT_1, "Ada Lovelace; Alan Turing")
    assert (first.venue, first.year, first.url) == ("NeurIPS", 2025, "https://example.org/42")
    assert first.source == f"{name}#1" and not first.title_derived
    assert first.extra == {"track": "oral", "score": 1.5, "tags": "speech; rag",
                           "accepted": True, "nested": '{"a": 1}'}
    assert (second.paper_id, second.title, second.text) == ("doc-7", "TableAgent-Bench", ABSTRACT_2)
    assert (second.authors, second.year, second.venue) == ("Grace Hopper; Barbara Liskov", 2024, "")
    assert second.source == f"{name}#2"
    # No id of its own: the hash of its text; no title: a derived one. Blank lines don't count.
    assert third.paper_id == text_id(ABSTRACT_3) and third.source == f"{name}#3"
    assert third.title_derived and third.title and third.year == 2023


def test_an_abstract_listed_twice_is_one_paper_counted_once_more(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text(f"{ABSTRACT_1}\n\n{ABSTRACT_2}\n\n{ABSTRACT_1}\n")
    report = read_sources([path])
    assert [p.source for p in report.papers] == ["dup.txt#1", "dup.txt#2"]
    assert report.tallies == {"duplicate": 1} and report.records_read == 3


def test_int_id_and_string_id_of_the_same_value_are_duplicates(tmp_path):
    path = _write(tmp_path / "ids.jsonl", _jsonl({"id": 7, "abstract": ABSTRACT_1},
                                                 {"_id": "7", "abstract": ABSTRACT_2}))
    with pytest.raises(CorpusError, match=r"ids\.jsonl:2: .*duplicate"):
        read_sources([path])


@pytest.mark.parametrize("text_column", ["abstract", "text", "Abstract"])
def test_csv_rows_map_to_papers(tmp_path, text_column):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "title", text_column, "authors", "venue", "year", "url", "track"])
    writer.writerow(["p1", "Moshi-RAG", ABSTRACT_1, "Ada Lovelace; Alan Turing", "ICLR", "2026",
                     "https://example.org/p1", "oral"])
    writer.writerow(["", "", ABSTRACT_2, "", "", "", "", "poster"])
    path = _write(tmp_path / "papers.csv", buffer.getvalue())
    first, second = read_sources([path]).papers
    assert (first.paper_id, first.title, first.text) == ("p1", "Moshi-RAG", ABSTRACT_1)
    assert (first.authors, first.venue, first.year) == ("Ada Lovelace; Alan Turing", "ICLR", 2026)
    assert (first.url, first.source, first.extra) == ("https://example.org/p1", "papers.csv#1",
                                                      {"track": "oral"})
    assert second.paper_id == text_id(ABSTRACT_2) and second.source == "papers.csv#2"
    assert second.title == "TableAgent-Bench" and second.title_derived and second.year is None


def test_csv_error_names_the_line_where_a_multiline_record_starts(tmp_path):
    path = _write(tmp_path / "multi.csv",
                  f'abstract,year\n"{ABSTRACT_1}\nsecond line\nthird line",soon\n')
    with pytest.raises(CorpusError) as caught:
        read_sources([path])
    assert caught.value.line == 2


# ================================================================ encodings and line endings


def _expected_from_plain(tmp_path: Path, name: str, text: str) -> list[tuple]:
    plain = read_sources([_write(tmp_path / f"plain{Path(name).suffix}", text)]).papers
    return [(p.paper_id, p.title, p.text, p.venue, p.year, p.extra) for p in plain]


_SEEDS_TEXT = f"ICML 2026 论文列表\n\n{ABSTRACT_1}\n\n{ABSTRACT_2}\n\n{ABSTRACT_3}\n"
_JSONL_TEXT = _jsonl({"id": "a", "title": "Ä title", "abstract": ABSTRACT_1, "year": 2026},
                     {"abstract": ABSTRACT_2 + " Über café."})
_CSV_TEXT = f'id,title,abstract,year\na,Ä title,"{ABSTRACT_1}",2026\nb,,"{ABSTRACT_2} café",\n'

_ENCODERS: dict[str, Callable[[str], bytes]] = {
    "utf-8-bom": lambda t: codecs.BOM_UTF8 + t.encode("utf-8"),
    "utf-16-le-bom": lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"),
    "utf-16-be-bom": lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"),
    "crlf": lambda t: t.replace("\n", "\r\n").encode("utf-8"),
    "cr": lambda t: t.replace("\n", "\r").encode("utf-8"),
    "utf-16-crlf": lambda t: codecs.BOM_UTF16_LE + t.replace("\n", "\r\n").encode("utf-16-le"),
}


@pytest.mark.parametrize("encoding", sorted(_ENCODERS))
@pytest.mark.parametrize("name, text", [
    ("seeds.txt", _SEEDS_TEXT), ("records.jsonl", _JSONL_TEXT), ("records.csv", _CSV_TEXT),
])
def test_boms_utf16_and_line_endings_read_like_plain_utf8(tmp_path, encoding, name, text):
    expected = _expected_from_plain(tmp_path, name, text)
    path = _write(tmp_path / name, _ENCODERS[encoding](text))
    papers = read_sources([path]).papers
    assert [(p.paper_id, p.title, p.text, p.venue, p.year, p.extra) for p in papers] == expected
    assert all("\ufeff" not in p.text + p.title + p.paper_id and "\r" not in p.text
               for p in papers)


def test_crlf_seed_files_parse_like_the_originals(tmp_path):
    for name in SEED_COUNTS:
        data = (SEEDS / name).read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        copy = read_sources([_write(tmp_path / name, data)]).papers
        original = _seed_papers(name)
        assert [(p.paper_id, p.title, p.source, p.extra) for p in copy] == [
            (p.paper_id, p.title, p.source, p.extra) for p in original]


# ================================================================ bad input, through the CLI

_GOOD_LINE = json.dumps({"id": "ok", "abstract": ABSTRACT_1})


def _gzip_with_corrupt_body() -> bytes:
    data = gzip.compress(_jsonl(*({"abstract": f"{ABSTRACT_1} {i}"} for i in range(50))).encode())
    return data[:20] + bytes(b ^ 0xFF for b in data[20:60]) + data[60:]


def _csv_with_unclosed_quote() -> str:
    rows = "".join(f"{ABSTRACT_2} {i}\n" for i in range(2000))  # swallowed by the open quote
    return f'abstract\n"{ABSTRACT_1}"\n"{ABSTRACT_3} unclosed\n{rows}'


_BAD_INPUTS = [
    # (name written, content, what the one error line must contain)
    pytest.param("empty.txt", b"", "empty.txt", id="empty-file"),
    pytest.param("blank.txt", b" \n\t\n   \r\n\n", "blank.txt", id="whitespace-only"),
    pytest.param("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01" + b"x" * 100,
                 "image.txt", id="binary-nul-bytes"),
    pytest.param("latin1.txt", f"{ABSTRACT_1}\n\n{ABSTRACT_2} caf\xe9.\n".encode("latin-1"),
                 "latin1.txt:3", id="undecodable-latin1"),
    pytest.param("bad.jsonl", f'{_GOOD_LINE}\n{{"id": "b", "abstract": "{ABSTRACT_2}"}}\n'
                 f'{{"id": "c", "abstract": oops}}\n', "bad.jsonl:3", id="malformed-json-line"),
    pytest.param("notext.jsonl", _jsonl({"id": "ok", "abstract": ABSTRACT_1},
                                        {"id": "t", "authors": "Ada Lovelace", "year": 2026}),
                 "notext.jsonl:2", id="record-without-text"),
    pytest.param("empty_text.jsonl", _jsonl({"id": "e", "abstract": "   ", "text": ""}),
                 "empty_text.jsonl:1", id="record-with-blank-text"),
    pytest.param("array.jsonl", f"{_GOOD_LINE}\n[1, 2, 3]\n", "array.jsonl:2",
                 id="json-line-not-an-object"),
    pytest.param("string.jsonl", f'{_GOOD_LINE}\n\n"just a string"\n', "string.jsonl:3",
                 id="json-line-is-a-string"),
    pytest.param("dup.jsonl", _jsonl({"id": "x", "abstract": ABSTRACT_1},
                                     {"id": "x", "abstract": ABSTRACT_2}),
                 "dup.jsonl:2", id="duplicate-id-jsonl"),
    pytest.param("dup.csv", f'id,abstract\nx,"{ABSTRACT_1}"\nx,"{ABSTRACT_2}"\n', "dup.csv:3",
                 id="duplicate-id-csv"),
    pytest.param("year.jsonl", _jsonl({"id": "y", "abstract": ABSTRACT_1, "year": "twenty"}),
                 "year.jsonl:1", id="year-word"),
    pytest.param("year.jsonl", f'{_GOOD_LINE}\n'
                 + _jsonl({"id": "y", "abstract": ABSTRACT_2, "year": [2026]}),
                 "year.jsonl:2", id="year-list"),
    pytest.param("year.jsonl", _jsonl({"id": "y", "abstract": ABSTRACT_1, "year": True}),
                 "year.jsonl:1", id="year-bool"),
    pytest.param("year.jsonl", _jsonl({"id": "y", "abstract": ABSTRACT_1, "year": 2025.5}),
                 "year.jsonl:1", id="year-fraction"),
    pytest.param("year.csv", f'abstract,year\n"{ABSTRACT_1}",2026\n"{ABSTRACT_2}",MMXXV\n',
                 "year.csv:3", id="year-csv"),
    pytest.param("notext.csv", "title,year\nA title,2026\n", "notext.csv:1",
                 id="csv-without-text-column"),
    pytest.param("short.txt", f"{ABSTRACT_1}\n\ntoo short\n", "short.txt:3",
                 id="seeds-block-too-short"),
    pytest.param("paper.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "paper.pdf",
                 id="unknown-extension"),
    pytest.param("notgzip.jsonl.gz", _jsonl({"abstract": ABSTRACT_1}), "notgzip.jsonl.gz",
                 id="gz-that-is-not-gzip"),
    pytest.param("corrupt.jsonl.gz", _gzip_with_corrupt_body(), "corrupt.jsonl.gz",
                 id="gz-with-corrupt-body"),
    pytest.param("unclosed.csv", _csv_with_unclosed_quote(), "unclosed.csv",
                 id="csv-unclosed-quote"),
]


@pytest.mark.parametrize("name, content, where", _BAD_INPUTS)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(ragqa, home, tmp_path, name,
                                                            content, where):
    path = _write(tmp_path / name, content)
    result = ragqa("ingest", str(path), "--quiet")
    _assert_failed_cleanly(result, home, where)


def test_a_missing_path_exits_2_and_writes_nothing(ragqa, home, tmp_path):
    result = ragqa("ingest", str(tmp_path / "nowhere" / "papers.jsonl"), "--quiet")
    _assert_failed_cleanly(result, home, str(tmp_path / "nowhere" / "papers.jsonl"))


def test_a_folder_without_supported_files_exits_2(ragqa, home, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    _write(folder / "notes.pdf", b"%PDF-1.7")
    _assert_failed_cleanly(ragqa("ingest", str(folder), "--quiet"), home, "docs")


@pytest.mark.parametrize("second, where", [
    (_jsonl({"id": "ok", "abstract": ABSTRACT_2}), "b.jsonl:1"),  # the id of a.jsonl again
    (f'{json.dumps({"id": "fine", "abstract": ABSTRACT_2})}\n{{"broken": \n', "b.jsonl:2"),
])
def test_a_bad_second_file_fails_before_the_good_first_is_written(ragqa, home, tmp_path, second,
                                                                  where):
    first = _write(tmp_path / "a.jsonl", _jsonl({"id": "ok", "abstract": ABSTRACT_1}))
    bad = _write(tmp_path / "b.jsonl", second)
    result = ragqa("ingest", str(first), str(bad), "--quiet")
    _assert_failed_cleanly(result, home, where)


def test_a_bad_file_inside_a_folder_fails_the_whole_folder(ragqa, home, seeds_copy):
    _write(seeds_copy / "002_bad.jsonl", f"{_GOOD_LINE}\nnot json at all\n")
    _assert_failed_cleanly(ragqa("ingest", str(seeds_copy), "--quiet"), home, "002_bad.jsonl:2")


# ================================================================ --skip-bad


def _three_good_two_bad(tmp_path: Path) -> Path:
    return _write(tmp_path / "mixed.jsonl", "".join([
        _jsonl({"id": "p1", "abstract": ABSTRACT_1}),
        "{this is not json\n",
        _jsonl({"id": "p2", "abstract": ABSTRACT_2}),
        _jsonl({"id": "p3", "abstract": ABSTRACT_3}),
        _jsonl({"id": "p4", "authors": "No Text"}),
    ]))


def test_skip_bad_ingests_the_good_records_and_reports_the_rest(ragqa, home, tmp_path):
    path = _three_good_two_bad(tmp_path)
    result = ragqa("ingest", str(path), "--skip-bad", "--quiet")
    assert result.exit_code == 0, result.output
    assert "Skipped 2" in result.stderr
    assert _collection_exists(home)
    listing = ragqa("papers", "--json")
    assert listing.exit_code == 0, listing.output
    papers = json.loads(listing.stdout)
    assert papers["count"] == 3
    assert {p["paper_id"] for p in papers["papers"]} == {"p1", "p2", "p3"}


def test_skip_bad_json_report_counts_and_locates_the_skipped(ragqa, tmp_path):
    path = _three_good_two_bad(tmp_path)
    result = ragqa("ingest", str(path), "--skip-bad", "--quiet", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["added"], report["skipped_bad"]) == (3, 2)
    assert any("mixed.jsonl:2" in m for m in report["skipped_messages"])
    assert any("mixed.jsonl:5" in m for m in report["skipped_messages"])


def test_skip_bad_in_the_api_keeps_the_errors(tmp_path):
    report = read_sources([_three_good_two_bad(tmp_path)], skip_bad=True)
    assert [p.paper_id for p in report.papers] == ["p1", "p2", "p3"]
    assert [(e.line, Path(e.path).name) for e in report.skipped] == [(2, "mixed.jsonl"),
                                                                     (5, "mixed.jsonl")]


def test_without_skip_bad_the_api_raises_the_first_error(tmp_path):
    with pytest.raises(CorpusError) as caught:
        read_sources([_three_good_two_bad(tmp_path)])
    assert caught.value.line == 2 and str(caught.value).startswith(
        f"{tmp_path / 'mixed.jsonl'}:2: ")


# ================================================================ property: the seeds reader

_FRAGMENTS = st.sampled_from([
    "We propose ", "we introduce ", "This paper presents ", " called ", "**", "$\\textbf{",
    "}$", "$", "(", ")", "(ABC)", "A$^2$SG", "τ-", "Net", "-Bench", "https://github.com/a/b",
    ". ", ", ", ": ", "ICML 2026 Papers", "论文列表", "\t", "  ", "\r\n", "\n", "\r", "\u00a0",
    "\ufeff", "\u2028", "é", "…",
])
_BLOCK = st.lists(
    st.one_of(_FRAGMENTS, st.text(st.characters(blacklist_categories=("Cs",)), max_size=25)),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_BLOCK, max_size=6), separator=st.sampled_from(["\n\n", "\r\n\r\n",
                                                                       "\n \n\t\n"]))
def test_seeds_reader_raises_only_corpus_errors_and_ids_are_stable(blocks, separator):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.txt"
        path.write_bytes(separator.join(blocks).encode("utf-8"))
        try:
            first = read_sources([path])
        except CorpusError as exc:
            assert exc.path == str(path)
            with pytest.raises(CorpusError):
                read_sources([path])
            return
        second = read_sources([path])
        data = path.read_bytes()
    assert [p.paper_id for p in first.papers] == [p.paper_id for p in second.papers]
    # Positions in the file, in order; an abstract read twice is one paper, so one may be
    # missing (the second time it was read: counted as a duplicate).
    positions = [int(p.source.removeprefix("fuzz.txt#")) for p in first.papers]
    assert positions == sorted(set(positions)) and positions[:1] in ([], [1])
    assert len({p.paper_id for p in first.papers}) == len(first.papers)
    for paper in first.papers:
        assert paper.paper_id == text_id(_source_block(data, paper.line)) and paper.text.strip()
        assert isinstance(paper.title, str)
