"""The client's snapshot updated in place of rebuilt (index/bm25.py, lexical.update_snapshot):
the same scores as bm25s computes, and the same snapshot as a full rebuild of the same papers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ragqa.index import lexical
from ragqa.index.bm25 import TermMatrix
from ragqa.sources import read_sources
from ragqa.sources.paper import Paper

from .conftest import SEEDS

QUERIES = ["full-duplex speech", "graph neural networks", "reinforcement learning agents",
           "diffusion models for images", "spiking neural network", "benchmark dataset"]


@pytest.fixture(scope="module")
def seeds() -> list[Paper]:
    return read_sources(sorted(SEEDS.iterdir())).papers


def _documents(papers: list[Paper]) -> list[list[str]]:
    return [lexical.document_terms(p)[1] for p in papers]


def test_scores_are_those_bm25s_computes(seeds):
    import bm25s

    documents = _documents(seeds) + [[]]  # an empty document too
    theirs = bm25s.BM25(k1=1.2, b=0.75)
    theirs.index(documents, show_progress=False)
    ours = TermMatrix.from_documents(documents).bm25()
    for query in QUERIES:
        words = lexical.terms(query, query=True)
        np.testing.assert_allclose(ours.get_scores(words), theirs.get_scores(words), atol=1e-5)
        assert ours.get_scores(words).max() > 0


def test_rows_taken_appended_and_compacted_keep_each_papers_terms(seeds, tmp_path):
    documents = _documents(seeds)
    matrix = TermMatrix.from_documents(documents[:20])
    order = np.array([19, 3, 7, 0])
    edited = matrix.take(order).append(documents[20:23]).compacted()
    edited.save(tmp_path)
    loaded = TermMatrix.load(tmp_path)
    expected = [documents[i] for i in order] + documents[20:23]
    for row, document in enumerate(expected):
        span = slice(loaded.indptr[row], loaded.indptr[row + 1])
        held = {loaded.vocabulary[t]: int(c) for t, c in zip(loaded.term_ids[span],
                                                              loaded.counts[span], strict=True)}
        assert held == {t: document.count(t) for t in set(document)}
    # Words only the dropped rows used are gone from the vocabulary.
    assert set(loaded.vocabulary) == {t for d in expected for t in d}


def _marks(papers: list[Paper]) -> list[tuple[str, str]]:
    return [(p.paper_id, lexical.paper_mark(p.content_hash, p.source, p.line)) for p in papers]


def test_an_updated_snapshot_is_the_snapshot_of_its_papers(seeds, tmp_path):
    first, later = seeds[:24], seeds[24:]
    fp = lexical.fingerprint(_marks(first))
    lexical.write_snapshot(tmp_path / "followed", first, fp)
    base = lexical.open_current(tmp_path / "followed")
    removed = {first[0].paper_id, first[10].paper_id, first[-1].paper_id}
    replaced = replace(first[5], text=first[5].text + " Also new.")
    removed.add(replaced.paper_id)
    added = [*later, replaced]
    new_fp = lexical.fingerprint_moved(fp, [m for m in _marks(first) if m[0] in removed],
                                       _marks(added))
    lexical.update_snapshot(base, removed, added, new_fp)
    base.close()
    final = [p for p in first if p.paper_id not in removed] + added
    assert new_fp == lexical.fingerprint(_marks(final))
    lexical.write_snapshot(tmp_path / "rebuilt", final, new_fp)

    followed = lexical.open_current(tmp_path / "followed")
    rebuilt = lexical.open_current(tmp_path / "rebuilt")
    assert followed.size == rebuilt.size == len(final)
    assert followed.paper(replaced.paper_id).text.endswith("Also new.")
    assert followed.paper(first[0].paper_id) is None
    assert followed.marks() == rebuilt.marks()
    for query in QUERIES:
        ours = {followed.paper_ids_by_index([i])[0]: score
                for i, score in followed.search(query, 50)}
        theirs = {rebuilt.paper_ids_by_index([i])[0]: score
                  for i, score in rebuilt.search(query, 50)}
        assert ours.keys() == theirs.keys()
        assert all(abs(ours[pid] - theirs[pid]) < 1e-4 for pid in ours)
    # Rows and the paper table agree: each row's paper is the one BM25 scores there.
    for row in range(followed.size):
        paper = followed.papers_by_index([row])[0]
        assert followed.index_of(paper.paper_id) == row
