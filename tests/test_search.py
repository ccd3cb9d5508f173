"""Search over the seeds through the CLI: the right papers, the relevance cut, JSON, batch,
filters, papers/show, and the automatic first ingest."""

from __future__ import annotations

import json

from ragqa.sources import read_sources

from .conftest import FULL_DUPLEX, SEEDS
from .helpers import DOUBTED


def _search(ragqa, *args: str) -> dict:
    result = ragqa("search", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_full_duplex_question_lists_moshi_rag_and_tau_voice_first(seeded):
    results = _search(seeded, FULL_DUPLEX)["results"]
    assert {r["title"] for r in results[:2]} == {"Moshi-RAG", "τ-Voice"}
    for r in results[:2]:
        assert "full-duplex" in r["best_sentence"].lower()
    core = [r for r in results if r["tier"] == "core"]  # the tail is folded, less certain
    assert all(r["title"] not in {"CEITNet", "A²SG", "TableAgent-Bench"} for r in core)


def test_first_query_on_empty_index_ingests_the_seeds_with_a_notice(ragqa):
    result = ragqa("search", FULL_DUPLEX)
    assert result.exit_code == 0, result.output
    assert "ingesting the bundled" in result.stderr
    assert "Moshi-RAG" in result.stdout and "τ-Voice" in result.stdout
    again = ragqa("search", FULL_DUPLEX)
    assert "ingesting" not in again.stderr


def test_question_no_paper_covers_returns_none(seeded):
    payload = _search(seeded, "Which papers are about protein folding?")
    assert payload["results"] == [] and payload["total_papers"] == 29
    text = seeded("search", "Which papers are about protein folding?")
    assert text.exit_code == 0 and "No paper in this collection (29 papers) matches" in text.stdout


def test_a_doubted_topic_lists_no_core_and_folds_its_papers(seeded):
    payload = _search(seeded, DOUBTED)
    assert payload["results"] and {r["tier"] for r in payload["results"]} == {"tail"}
    text = " ".join(seeded("search", DOUBTED).stdout.split())
    assert "No paper in this collection (29 papers) is clearly about" in text
    assert f"{len(payload['results'])} more, less certain" in text


def test_which_papers_question_returns_every_matching_paper(seeded):
    titles = {r["title"] for r in _search(seeded, "spiking neural networks")["results"]}
    assert {"A²SG", "DiceFormer"} <= titles  # the two SNN papers
    cartesian = {r["title"] for r in _search(seeded, "Cartesian tensors")["results"]}
    assert {"TACE-v1-OAM-M", "CEITNet"} <= cartesian


def test_json_schema_of_search(seeded):
    payload = _search(seeded, FULL_DUPLEX)
    assert set(payload) >= {"query", "collection", "total_papers", "results"}
    first = payload["results"][0]
    assert set(first) >= {"rank", "paper_id", "title", "source", "score", "best_sentence"}
    assert first["source"].startswith("000_5a03819fc22e34a3.txt#")
    assert [r["rank"] for r in payload["results"]] == list(range(1, len(payload["results"]) + 1))


def test_no_cut_and_k(seeded):
    assert len(_search(seeded, FULL_DUPLEX, "--no-cut", "-k", "7")["results"]) == 7
    assert len(_search(seeded, FULL_DUPLEX, "-k", "1")["results"]) == 1


def test_batch_mode(seeded, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": "a", "text": FULL_DUPLEX}) + "\n\n"
                       + json.dumps({"_id": "b", "text": "Cartesian tensors"}) + "\n",
                       encoding="utf-8")
    result = seeded("search", "--batch", str(queries), "--json", "-k", "5")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["_id"] for line in lines] == ["a", "b"]
    assert all(len(line["results"]) == 5 for line in lines)
    assert set(lines[0]["results"][0]) == {"paper_id", "title", "source", "score"}
    assert lines[1]["results"][0]["title"] in {"TACE-v1-OAM-M", "CEITNet"}


def test_batch_bad_line_is_usage_error(seeded, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "a", "text": "x"}\nnot json\n', encoding="utf-8")
    result = seeded("search", "--batch", str(queries))
    assert result.exit_code == 2 and "q.jsonl:2" in result.stderr


def test_filters(seeded, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x1", "title": "Full-duplex speech dialogue in 2019",
                                 "abstract": "We study full-duplex speech dialogue systems that "
                                 "listen and speak at the same time.", "venue": "Interspeech",
                                 "year": 2019}) + "\n", encoding="utf-8")
    assert seeded("ingest", str(other), "--quiet").exit_code == 0
    everything = {r["paper_id"] for r in _search(seeded, FULL_DUPLEX)["results"]}
    assert "x1" in everything
    icml = _search(seeded, FULL_DUPLEX, "--venue", "icml")["results"]
    assert icml and "x1" not in {r["paper_id"] for r in icml}
    only_2019 = _search(seeded, FULL_DUPLEX, "--year", "2019")["results"]
    assert [r["paper_id"] for r in only_2019] == ["x1"]


def test_papers_and_show(seeded):
    listing = json.loads(seeded("papers", "--json").stdout)
    assert listing["count"] == 29 and len(listing["papers"]) == 29
    dvpd = next(p for p in listing["papers"] if p["title"] == "DVPD")
    expected = next(p for p in read_sources([SEEDS]).papers if p.title == "DVPD")
    assert (dvpd["paper_id"], dvpd["text"]) == (expected.paper_id, expected.text)
    assert dvpd["code_urls"] == ["https://github.com/ke12345213/dvpd_demo"]
    assert all({"paper_id", "title", "source", "text"} <= set(p) for p in listing["papers"])
    shown = json.loads(seeded("show", dvpd["paper_id"][:8], "--json").stdout)
    assert shown == dvpd
    text = seeded("show", dvpd["paper_id"])
    assert text.exit_code == 0 and "DVPD" in text.stdout
    missing = seeded("show", "nope")
    assert missing.exit_code == 2 and "no paper with id" in missing.stderr


def test_empty_question_and_bad_collection_are_usage_errors(seeded):
    assert seeded("search", "  ").exit_code == 2
    result = seeded("search", "x", "--collection", "../etc")
    assert result.exit_code == 2 and "collection name" in result.stderr
