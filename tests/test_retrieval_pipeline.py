"""The retrieval pipeline's parts on their own, without Chroma or a model: the background a z is
measured against, the candidate pool's similarities in either embedding space, the feedback
centre's leave-one-out column, the claims' decision for a follow-up, and what each query space
chooses. (The whole pipeline is covered end to end by test_search, test_lists and
test_multilingual.)"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ragqa.retrieval import spaces
from ragqa.retrieval.candidates import CandidatePool, Embedding, Probe, min_max
from ragqa.retrieval.decide import decide_claim
from ragqa.retrieval.fitted import (
    CHINESE_LIST_MODEL,
    CUT_FOR_CLAIMS,
    LIST_MODEL,
    MULTILINGUAL_LIST_MODEL,
    CutRule,
)
from ragqa.retrieval.signals import Background, background_of, leave_one_out
from ragqa.retrieval.spaces import EnglishSpace, MultilingualSpace
from ragqa.retrieval.types import Hit

RETRIEVAL = Path(__file__).resolve().parents[1] / "ragqa" / "retrieval"


def test_retrieval_imports_ragqa_at_module_top():
    """ragqa's own modules are imported at module top (under TYPE_CHECKING at most), so that
    the dependencies stay visible."""
    inside = []
    for path in sorted(RETRIEVAL.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    names = ([a.name for a in sub.names] if isinstance(sub, ast.Import)
                             else [sub.module or ""] if isinstance(sub, ast.ImportFrom) else [])
                    inside += [f"{path.name}:{sub.lineno} {n}" for n in names
                               if n.startswith("ragqa")]
    assert not inside


class _Snapshot:
    """The few LexicalIndex calls a CandidatePool makes: paper i is row i, id p<i>."""

    def __init__(self, size: int) -> None:
        self.size = size

    def index_of(self, pid: str) -> int | None:
        row = int(pid[1:])
        return row if row < self.size else None

    def paper_ids_by_index(self, rows) -> list[str]:
        return [f"p{int(r)}" for r in rows]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


VECTORS = _unit(np.random.default_rng(7).standard_normal((12, 8)))


def _pool(rows: list[int]) -> CandidatePool:
    pool = CandidatePool(_Snapshot(len(VECTORS)), lambda new: VECTORS[np.asarray(new)])
    pool.add_rows(rows)
    return pool


def test_background_of_too_few_papers_is_plain_cosine():
    centre, spread = background_of(VECTORS[:4], VECTORS[:3])
    assert np.array_equal(centre, np.zeros(3)) and np.array_equal(spread, np.full(3, 0.2))
    centre, spread = background_of(None, VECTORS[:2])
    assert centre.shape == spread.shape == (2,)


def test_background_z_is_robust_and_without_a_reference_the_collection_alone():
    queries = VECTORS[:2]
    sims = VECTORS @ queries.T
    centre = np.median(sims, axis=0)
    spread = np.maximum(1.4826 * np.median(np.abs(sims - centre), axis=0), 0.02)
    z = Background(VECTORS, "no-such-embedder", 12).z(sims, queries)
    assert np.allclose(z, (sims - centre) / spread)
    assert np.allclose(np.median(z, axis=0), 0.0, atol=1e-6)


def test_pool_similarity_in_another_space_takes_a_nearer_chunk():
    pool = _pool([3, 1, 4])
    other = _unit(np.random.default_rng(8).standard_normal((3, 8)))
    query = other[:1]
    plain = pool.similarity(query, [[]], other)
    assert np.allclose(plain[:, 0], other @ query[0])
    raised = pool.similarity(query, [[("c", "p1", 0.99), ("c", "p9", 1.0)]], other)
    assert raised[1, 0] == pytest.approx(0.99) and np.array_equal(raised[[0, 2]], plain[[0, 2]])
    assert np.allclose(pool.similarity(query, [[]]), pool.vectors @ query.T)


def test_a_probe_measures_the_feedback_centre_last_and_the_core_leave_one_out():
    pool = _pool([0, 1, 2, 5, 6])
    english = Embedding(None, Background(None, "", 12), lambda p: p.vectors)
    question = Probe(english, VECTORS[8:10], [[], []])
    centre = Probe(english, _unit(VECTORS[[0, 1]].mean(axis=0, keepdims=True)), [[]])
    joined = question.joined(centre)
    assert joined.vectors.shape == (3, 8) and len(joined.nearest) == 3
    core = np.array([0, 1])
    similarity, z = joined.measure(pool, core)
    assert np.allclose(similarity[core, -1], leave_one_out(pool.vectors[core]))
    assert np.allclose(z, similarity / 0.2)  # no background: plain cosine, z 2.5 at 0.5
    assert question.head().vectors.shape == (1, 8)


def _claim_hits(zs: list[float]) -> list[Hit]:
    return [Hit(i, score, 0.0, 0.0, z=z, coverage=0.0)
            for i, (z, score) in enumerate(zip(zs, min_max(zs), strict=True))]


class _NoNames:
    size = 100

    def document_frequency(self, term: str) -> int:
        return 0


def test_a_follow_up_claim_keeps_each_paper_that_clears_the_rule_alone():
    rule = CutRule(4.5, 1.0, 0.6, 0.0, 1.0)
    kept = decide_claim(_NoNames(), _claim_hits([4.6, 9.0]), rule, "", cut=True)
    assert [h.z for h in kept] == [9.0]  # 4.6 is further than max_gap below the best
    kept = decide_claim(_NoNames(), _claim_hits([4.6, 9.0]), rule, "", cut=True,
                        follow_up=True)
    assert [h.z for h in kept] == [9.0, 4.6]
    assert len(decide_claim(_NoNames(), _claim_hits([0.1, 0.2]), rule, "", cut=False)) == 2


def test_the_english_space_decides_by_the_kind_of_question():
    listing = EnglishSpace("Which papers study spiking neural networks?")
    assert listing.default_rule() is LIST_MODEL and listing.words == "spiking neural networks"
    assert listing.word_rules and listing.fuses_claims and listing.label == ""
    claim = EnglishSpace("What speedup does EGG achieve over PyTorch?", word_rules=False)
    assert claim.default_rule() is CUT_FOR_CLAIMS and not claim.word_rules


def test_the_multilingual_space_reads_latin_words_and_the_glossary(monkeypatch):
    side = Embedding(None, Background(None, "", 29), lambda p: p.vectors)
    question = "哪些论文研究 full-duplex speech？"
    plain = MultilingualSpace(question, side, dictionary=False)
    assert plain.words == plain.names_in == "full-duplex speech"
    assert plain.default_rule() is MULTILINGUAL_LIST_MODEL and not plain.word_rules
    assert plain.label == "multilingual" and not plain.fuses_claims
    monkeypatch.setattr(spaces, "english_words", lambda text: "full duplex dialogue")
    glossed = MultilingualSpace(question, side)
    assert glossed.words == "full-duplex speech full duplex dialogue"
    assert glossed.default_rule() is CHINESE_LIST_MODEL
    claim = "Wie viel schneller als PyTorch ist EGG auf den Aufgaben von KernelBench?"
    assert MultilingualSpace(claim, side).default_rule() is CUT_FOR_CLAIMS
    assert [glossed.min_core(n) for n in (29, 60, 30000)] == [2, 4, 6]
