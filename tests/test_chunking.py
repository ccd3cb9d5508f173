"""Chunking and embedding for ingest speed (issue 18): every input inside MiniLM's window, the
overlap a setting (none by default: every sentence read once); an index chunked another way
keeps working and is not re-embedded; the embedder's side-by-side runs give the vectors of one
run at a time."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from ragqa.config import load_settings
from ragqa.index.ingest import embedding_input, make_chunker
from ragqa.models.encoders import LocalMiniLM, _cores, make_encoder
from ragqa.sources.paper import Paper

TOPICS = ["message passing on molecules", "speech recognition in noise", "sparse attention",
          "reinforcement learning from feedback", "protein structure", "retrieval for QA"]
TEXT = " ".join(f"Sentence {i} reports result {i * 7} on {TOPICS[i % len(TOPICS)]}."
                for i in range(70))
TITLE = ("A rather long title about graph neural networks, transformers and the many ways "
         "they are combined")


@pytest.fixture(scope="module")
def encoder() -> LocalMiniLM:
    return LocalMiniLM()


def _settings(tmp_path: Path, **env: str):
    return load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/nonexistent", **env})


def _inputs(encoder, settings, paper: Paper) -> tuple[list[str], list[str]]:
    chunks = make_chunker(encoder, settings)(paper)
    return chunks, [embedding_input(paper, chunk) for chunk in chunks]


def test_inputs_fit_the_window_and_overlap_is_a_setting(encoder, tmp_path):
    paper = Paper("p", TITLE, TEXT, "f.jsonl#1")
    settings = _settings(tmp_path)
    chunks, inputs = _inputs(encoder, settings, paper)
    assert len(chunks) >= 3 and inputs == [f"{TITLE}. {chunk}" for chunk in chunks]
    assert max(encoder.count_tokens(text) for text in inputs) <= settings.chunk_tokens
    assert " ".join(chunks) == TEXT  # no overlap by default: the sentences, in order, once
    chunks, inputs = _inputs(encoder, _settings(tmp_path, RAGQA_CHUNK_OVERLAP="30"), paper)
    first_of_second = chunks[1].split(". ", 1)[0] + "."
    assert first_of_second in chunks[0]  # overlap repeats the last sentences
    assert max(encoder.count_tokens(text) for text in inputs) <= settings.chunk_tokens


def test_derived_title_and_short_abstract(encoder, tmp_path):
    settings = _settings(tmp_path)
    derived = Paper("p", TEXT[:60], TEXT, "f.txt#1", title_derived=True)
    chunks, inputs = _inputs(encoder, settings, derived)
    assert len(chunks) > 1 and inputs == chunks  # a derived title is never prefixed
    short = Paper("q", TITLE, "One sentence on sparse attention.", "f.jsonl#2")
    assert _inputs(encoder, settings, short)[1] == [f"{TITLE}. One sentence on sparse attention."]


def test_side_by_side_runs_give_the_vectors_of_one_run_at_a_time():
    texts = [f"{TITLE}. {TEXT[: 40 * (i + 1)]}" for i in range(24)] + ["x"]
    side_by_side, one_at_a_time = LocalMiniLM(), LocalMiniLM(workers=1)
    assert side_by_side.workers == _cores() and one_at_a_time.workers == 1

    def embed_threads() -> int:
        return sum(t.name.startswith("ragqa-embed") for t in threading.enumerate())

    threads = embed_threads()
    np.testing.assert_allclose(side_by_side.embed(texts), one_at_a_time.embed(texts), atol=1e-5)
    # The side-by-side encoder started one thread per core (none on a single core).
    assert embed_threads() - threads == (side_by_side.workers if side_by_side.workers > 1 else 0)


def test_embed_threads_setting_runs_one_at_a_time(tmp_path):
    assert make_encoder(_settings(tmp_path, RAGQA_EMBED_THREADS="1")).workers == 1
    assert make_encoder(_settings(tmp_path)).workers == _cores()


def test_index_chunked_another_way_keeps_working(ragqa, tmp_path):
    """An index built with other chunking (here the old default, 30 tokens of overlap) is not
    re-embedded by an ingest of the same file, and still answers."""
    source = tmp_path / "long.jsonl"
    rows = [{"id": f"p{i}", "title": f"{topic} at scale", "abstract": " ".join(
        f"Sentence {n} reports result {n * 7} on {topic}." for n in range(60))}
        for i, topic in enumerate(TOPICS[:3])]
    source.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    old = ragqa("ingest", str(source), "--quiet", "--json", RAGQA_CHUNK_OVERLAP="30")
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout)["chunks"] > 3
    again = ragqa("ingest", str(source), "--quiet", "--json")
    report = json.loads(again.stdout)
    assert (report["chunks"], report["unchanged"], report["added"]) == (0, 3, 0)
    found = ragqa("search", "speech recognition in noise at scale", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"][0]["paper_id"] == "p1"
