"""What keeps a served search cheap: one BLAS and one onnxruntime thread per request, the
Chroma reads a Retriever keeps (vectors by paper, never answers by question), which must give
the same answers as a fresh Retriever and go when an ingest changes a paper, and the sentences'
terms the snapshot keeps, which must choose the sentences that stemming each abstract again
would."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pytest

from ragqa.requests import SearchRequest

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


def test_kept_vectors_are_what_chroma_holds(core):
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


def test_a_warm_search_answers_as_a_fresh_retriever_does(core):
    from ragqa.app import search, search_json
    from ragqa.retrieval.retriever import Retriever

    # the second round reads no Chroma
    warm = [core.search(SearchRequest(q)) for q in QUESTIONS + QUESTIONS]
    store = core.retriever().store
    fresh = [search_json(search(Retriever(store), SearchRequest(q)), core.name) for q in QUESTIONS]
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
    assert before.lexical.papers_by_index([row])[0].text.startswith("Octopus arms")
    ingest("Graph neural networks predict molecular properties from atom features.")
    after = core.retriever()
    assert after is not before
    new = after.paper_vectors([after.lexical.index_of("perf-1")])[0]
    assert not np.allclose(old, new)
    assert np.array_equal(new, after.store.paper_vectors(["perf-1"])[0])
    assert after.lexical.papers_by_index([after.lexical.index_of("perf-1")])[0].text \
        .startswith("Graph neural")
    found = core.search(SearchRequest(
        "Which papers predict molecular properties with graph networks?"))
    assert "perf-1" in [r["paper_id"] for r in found["results"]]


def test_what_is_kept_is_bounded_and_answers_stay_whole(core, monkeypatch):
    from ragqa.index import lexical

    monkeypatch.setattr(lexical, "MAX_KEPT_TERMS", 1)
    index = core.retriever().lexical
    rows = [0, 1, 2, 3]
    words = [lexical.terms(lexical.paper_document(p)) for p in index.papers_by_index(rows)]
    for start in range(3):
        assert index._terms_of_rows(rows[start:]) == words[start:]
    assert len(index._row_terms) <= len(rows)


def test_the_snapshot_keeps_each_sentences_terms_as_stemming_gives_them(core):
    from ragqa.index import lexical
    from ragqa.text import split_sentences

    index = core.retriever().lexical
    rows = list(range(index.size))
    papers = index.papers_by_index(rows)
    for paper, kept in zip(papers, index.sentence_terms(rows), strict=True):
        assert kept == [lexical.terms(s) for s in split_sentences(paper.text)]
        # the document's terms are its title's and its sentences', as BM25 indexed them
        assert lexical.document_terms(paper)[1] == lexical.terms(lexical.paper_document(paper))


def test_best_sentences_are_the_same_from_a_snapshot_that_keeps_no_sentence_terms(core, tmp_path):
    from ragqa.index.lexical import LexicalIndex

    index = core.retriever().lexical
    old = tmp_path / "old-snapshot"
    shutil.copytree(index.folder, old)
    with sqlite3.connect(old / "papers.sqlite") as db:  # as written before they were kept
        db.execute("ALTER TABLE papers DROP COLUMN sentence_terms")
    plain = LexicalIndex(old, index.fingerprint)
    assert plain.sentence_terms([0, 1]) == [None, None]
    retriever = core.retriever()
    found = [core.search(SearchRequest(q)) for q in QUESTIONS]
    retriever.lexical = plain
    try:
        assert core.retriever() is retriever and core.retriever().lexical is plain
        assert [core.search(SearchRequest(q)) for q in QUESTIONS] == found
    finally:
        retriever.lexical = index
        plain.close()


def test_sentences_another_splitter_cut_are_not_used_and_the_next_ingest_rebuilds(
        core, seeded, tmp_path):
    """issue 46: a snapshot records the splitter that cut its sentences; one cut by another
    (the regular expression before sentencex) is read as keeping none, and the next ingest
    writes a whole new snapshot rather than copying its rows."""
    from ragqa.index import lexical
    from ragqa.index.lexical import LexicalIndex
    from ragqa.text import sentence_splitter, split_sentences

    index = core.retriever().lexical
    assert lexical.splitter_of(index.folder) == sentence_splitter()
    (index.folder / lexical.SENTENCES).write_text("regex", encoding="utf-8")
    with sqlite3.connect(index.folder / "papers.sqlite") as db:  # what that splitter kept
        db.execute("UPDATE papers SET sentence_terms = 'stale'")
    assert not lexical.up_to_date(index.folder)
    stale = LexicalIndex(index.folder, index.fingerprint)
    try:
        assert stale.sentence_terms([0, 1]) == [None, None]
    finally:
        stale.close()
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"id": "split-1", "title": "Splitting",
                                  "text": "We follow Smith et al. (2020). See Fig. 3 here."})
                      + "\n", encoding="utf-8")
    assert seeded("ingest", str(source), "--quiet").exit_code == 0
    rebuilt = core.retriever().lexical
    assert rebuilt.folder != index.folder and lexical.up_to_date(rebuilt.folder)
    row = rebuilt.index_of("split-1")
    assert rebuilt.sentence_terms([row]) == [[lexical.terms(s) for s in split_sentences(
        "We follow Smith et al. (2020). See Fig. 3 here.")]]
    assert len(rebuilt.sentence_terms([row])[0]) == 2
    papers = rebuilt.papers_by_index([0, 1])
    assert rebuilt.sentence_terms([0, 1]) == [  # rebuilt, not copied
        [lexical.terms(s) for s in split_sentences(p.text)] for p in papers]


def test_a_best_sentence_may_come_from_any_chunk_of_a_long_abstract(core, seeded, tmp_path):
    filler = " ".join(f"Octopus arm segment {i} bends under load in shallow water." for i in
                      range(40))
    source = tmp_path / "long.jsonl"
    source.write_text(json.dumps({
        "id": "long-1", "title": "Octopus Arm Mechanics",
        "text": f"{filler} Finally we model sucker adhesion with a soft hydrogel robot gripper."
    }) + "\n", encoding="utf-8")
    assert seeded("ingest", str(source), "--quiet").exit_code == 0
    found = core.search(SearchRequest("hydrogel gripper sucker adhesion", k=10, cut=False))
    hit = next(r for r in found["results"] if r["paper_id"] == "long-1")
    assert hit["best_sentence"].startswith("Finally we model sucker adhesion")
