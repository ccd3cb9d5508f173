"""What keeps a served search cheap: one BLAS and one onnxruntime thread per request, and the
Chroma reads a Retriever keeps (vectors and chunk texts by paper, never answers by question),
which must give the same answers as a fresh Retriever and go when an ingest changes a paper."""

from __future__ import annotations

import json

import numpy as np
import pytest

QUESTIONS = [
    "Which papers do full-duplex speech?",
    "spiking neural networks",
    "Which papers study table question answering with agents?",
    "Does reinforcement learning improve reasoning in language models?",
    "What does TableAgent-Bench evaluate?",
]


@pytest.fixture
def core(seeded, home, monkeypatch):
    from ragqa.app import App

    monkeypatch.setenv("RAGQA_HOME", str(home))
    return App.open()


def test_a_served_app_runs_blas_and_the_embedder_on_one_thread(core):
    from threadpoolctl import threadpool_info

    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)
    encoder = core.retriever().store.encoder
    assert encoder._session.get_session_options().intra_op_num_threads == 1


def test_ragqa_embed_threads_still_decides(seeded, home, monkeypatch):
    from ragqa.app import App

    monkeypatch.setenv("RAGQA_HOME", str(home))
    monkeypatch.setenv("RAGQA_EMBED_THREADS", "2")
    encoder = App.open().retriever().store.encoder
    assert encoder._session.get_session_options().intra_op_num_threads == 2


def test_kept_vectors_and_chunk_texts_are_what_chroma_holds(core):
    retriever = core.retriever()
    index = retriever.lexical
    rows = [3, 0, 7, 3, index.size - 1]
    first = retriever.paper_vectors(rows[:2])  # some kept, then the rest read
    both = retriever.paper_vectors(rows)
    distinct = sorted(set(rows))
    read = retriever.store.paper_vectors(index.paper_ids_by_index(distinct))
    expected = read[[distinct.index(r) for r in rows]]
    assert np.array_equal(first, expected[:2]) and np.array_equal(both, expected)
    assert both.dtype == np.float32 and both.shape == (5, 384)
    chunk_ids = [f"{pid}::0" for pid in index.paper_ids_by_index([1, 2])]
    assert retriever.chunk_texts(chunk_ids[:1]) == retriever.store.documents(chunk_ids[:1])
    assert retriever.chunk_texts(chunk_ids * 2) == retriever.store.documents(chunk_ids)


def test_a_warm_search_answers_as_a_fresh_retriever_does(core):
    from ragqa.app import search, search_json
    from ragqa.retrieve import Retriever

    warm = [core.search(q) for q in QUESTIONS + QUESTIONS]  # the second round reads no Chroma
    store = core.retriever().store
    fresh = [search_json(search(Retriever(store), q), core.name) for q in QUESTIONS]
    assert warm == fresh + fresh
    assert any(answer["results"] for answer in fresh)


def test_a_paper_an_ingest_changes_is_read_again(core, seeded, tmp_path):
    source = tmp_path / "changing.jsonl"

    def ingest(text: str) -> None:
        source.write_text(json.dumps({"id": "perf-1", "title": "Octopus Locomotion By Waves",
                                      "text": text}) + "\n", encoding="utf-8")
        assert seeded("ingest", str(source), "--quiet").exit_code == 0

    ingest("Octopus arms move by travelling waves of muscle contraction in coral reefs.")
    before = core.retriever()
    row = before.lexical.index_of("perf-1")
    old = before.paper_vectors([row])[0]
    assert before.chunk_texts(["perf-1::0"])["perf-1::0"].startswith("Octopus arms")
    ingest("Graph neural networks predict molecular properties from atom features.")
    after = core.retriever()
    assert after is not before
    new = after.paper_vectors([after.lexical.index_of("perf-1")])[0]
    assert not np.allclose(old, new)
    assert np.array_equal(new, after.store.paper_vectors(["perf-1"])[0])
    assert after.chunk_texts(["perf-1::0"])["perf-1::0"].startswith("Graph neural")
    found = core.search("Which papers predict molecular properties with graph networks?")
    assert "perf-1" in [r["paper_id"] for r in found["results"]]


def test_what_is_kept_is_bounded_and_answers_stay_whole(core, monkeypatch):
    from ragqa import lexical, retrieve

    monkeypatch.setattr(retrieve, "MAX_KEPT_CHUNKS", 1)
    monkeypatch.setattr(lexical, "MAX_KEPT_TERMS", 1)
    retriever = core.retriever()
    index = retriever.lexical
    chunk_ids = [f"{pid}::0" for pid in index.paper_ids_by_index([0, 1, 2, 3])]
    for start in range(3):  # each call past the bound starts again, and still answers all
        assert retriever.chunk_texts(chunk_ids[start:]) == \
            retriever.store.documents(chunk_ids[start:])
        assert len(retriever._chunk_texts) <= len(chunk_ids)
    rows = [0, 1, 2, 3]
    words = [lexical.terms(lexical.paper_document(p)) for p in index.papers_by_index(rows)]
    for start in range(3):
        assert index._terms_of_rows(rows[start:]) == words[start:]
    assert len(index._row_terms) <= len(rows)
