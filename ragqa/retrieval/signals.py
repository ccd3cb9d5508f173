"""Signals: how much each candidate is about the question, in numbers that mean the same for
any question and any collection size.

- z: how many robust standard deviations a similarity stands above the similarity of a random
  paper of the collection (its background, in the embedding space the similarity was measured
  in), shrunk towards the embedder's shipped reference as the collection gets small;
- coverage: the idf-weighted share of the question's words a paper holds;
- BM25 shares: BM25 against what a paper holding each word of the query once would score;
- named: whether a paper holds a rare name the question uses;
- the list decision's signals (RelevanceModel.FEATURES) assembled from those.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragqa.index import lexical
from ragqa.index.lexical import LexicalIndex
from ragqa.resources import DATA_DIR
from ragqa.retrieval.types import Hit

REFERENCE_DIR = DATA_DIR
# A collection of this many papers counts half, the reference half, in the list decision's
# background (Background.z).
REFERENCE_PAPERS = 200
# The reference is of ML abstracts: it stands in for a small collection's background only as
# far as the collection is of its field, measured by the cosine of the collection's centre and
# the reference's (bench/lists/small.py: 0.77-0.94 for ML collections of 5 to 1,031 papers,
# 0.07-0.19 for biomedical ones of 5 to 150). Below FIELD_FIT_LOW the reference counts for
# nothing, above FIELD_FIT_HIGH fully, linearly between.
FIELD_FIT_LOW, FIELD_FIT_HIGH = 0.3, 0.7
# A question that names a system ("What does CEITNet propose?", "How fast is EGG?") asks about
# the papers that name it, however far the rest of its wording is from theirs: a name-like word
# (two capitals, or letters with digits or a Greek letter: CEITNet, EGG, GPT-5, τ-Voice) that at
# most NAMED_PAPERS papers hold (and at most a tenth of a small collection) keeps those papers.
NAMED_PAPERS = 5
_NAME_LIKE = re.compile(r"^(?:.*[A-Z].*[A-Z].*|.*[A-Za-z].*\d.*|.*\d.*[A-Za-z].*|.*[α-ωΑ-Ω].*)$")


def background_of(sample: np.ndarray | None, queries: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per query vector: the median similarity of a background sample of the collection's
    vectors and its robust standard deviation (plain cosine scaled so z 2.5 is 0.5 when there
    are too few papers to tell)."""
    if sample is None or len(sample) < 5:
        return np.zeros(len(queries)), np.full(len(queries), 0.2)
    sims = sample @ queries.T
    centre = np.median(sims, axis=0)
    return centre, np.maximum(1.4826 * np.median(np.abs(sims - centre), axis=0), 0.02)


@functools.lru_cache(maxsize=4)
def reference_background(embedder_id: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The mean and covariance of a reference set of ML abstracts' vectors for this embedder
    (bench/lists/reference_background.py writes them), or None where none ships."""
    path = REFERENCE_DIR / f"background-{embedder_id.replace(':', '_')}.npz"
    if not embedder_id or not path.is_file():
        return None
    with np.load(path) as data:
        if str(data["embedder_id"]) != embedder_id:
            return None
        return data["mean"].astype(np.float64), data["covariance"].astype(np.float64)


@dataclass(frozen=True)
class Background:
    """What similarities in one embedding space are measured against: a sample of the
    collection's vectors in it (the snapshot's, or the multilingual sibling's), the embedder
    that made them (its shipped reference) and the size of the collection."""

    sample: np.ndarray | None
    embedder_id: str
    papers: int

    def z(self, similarity: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Papers x queries: z of `similarity` for the list decision. The background is the
        collection's own, shrunk towards the shipped reference of ML abstracts as the collection
        gets small: in 29 papers of which ten are on audio, an audio paper is typical of the
        collection but not of ML papers, and the decision should mean the same at 29 papers as
        at 30,000. Only as far as the collection is of the reference's field (field_fit): 150
        biomedical abstracts measured against ML ones all stand out. Embedders without a
        reference use the collection's background alone."""
        centre, spread = background_of(self.sample, queries)
        reference = reference_background(self.embedder_id)
        if reference is not None:
            mean, covariance = reference
            weight = self.papers / (self.papers + REFERENCE_PAPERS)
            fit = field_fit(self.sample, mean)
            quadratic = np.einsum("ij,jk,ik->i", queries, covariance, queries)
            # The part of the prior the reference cannot stand for: the plain cosine scale
            # (background_of with no papers).
            plain_centre, plain_spread = background_of(None, queries)
            prior_centre = fit * (queries @ mean) + (1 - fit) * plain_centre
            prior_spread = fit * np.sqrt(np.maximum(quadratic, 0.0)) + (1 - fit) * plain_spread
            centre = weight * centre + (1 - weight) * prior_centre
            spread = weight * spread + (1 - weight) * prior_spread
        return (similarity - centre) / np.maximum(spread, 0.02)


def field_fit(sample: np.ndarray | None, reference_mean: np.ndarray) -> float:
    """How far a collection is of the reference's field (1: fully, 0: not at all): the cosine
    of its vectors' centre and the reference's, between FIELD_FIT_LOW and FIELD_FIT_HIGH. A
    collection without vectors yet counts as of the field (the reference as before)."""
    if sample is None or not len(sample):
        return 1.0
    centre = sample.mean(axis=0)
    norms = float(np.linalg.norm(centre) * np.linalg.norm(reference_mean)) or 1.0
    cosine = float(centre @ reference_mean) / norms
    return float(np.clip((cosine - FIELD_FIT_LOW) / (FIELD_FIT_HIGH - FIELD_FIT_LOW), 0, 1))


def leave_one_out(vectors: np.ndarray) -> np.ndarray:
    """Each vector's cosine to the centre of the others. A core paper is measured so against
    the feedback centre: it is always close to a centre it is part of, and with two core papers
    that would vouch for a wrong second one. One vector alone keeps its own similarity, 1."""
    if len(vectors) < 2:
        return np.ones(len(vectors))
    others = vectors.sum(axis=0) - vectors
    norms = np.maximum(np.linalg.norm(others, axis=1), 1e-9)
    return np.einsum("ij,ij->i", vectors, others) / norms


def bm25_ideal(index: LexicalIndex, query_terms: Sequence[str]) -> float:
    """What a paper holding each of the question's words once scores: a BM25 share's unit."""
    return sum(index.idf(sorted(set(query_terms))).values()) or 1.0


def weighted_ideal(index: LexicalIndex, weights: dict[str, float]) -> float:
    """The same for a query whose words weigh differently (an expanded query)."""
    idf = index.idf(list(weights))
    return sum(w * idf[t] for t, w in weights.items()) or 1.0


def list_signals(question_z: np.ndarray, feedback_z: np.ndarray, *, core: np.ndarray,
                 coverage: np.ndarray, bm25_share: np.ndarray, bm25_expanded: np.ndarray
                 ) -> dict[str, np.ndarray]:
    """The RelevanceModel's FEATURES of every candidate. `question_z`: papers x the question's
    query vectors, the first one its topic; `feedback_z`: against the feedback centre; `core`:
    the first round's best papers, which the *_relative signals are measured from."""
    signals = {"z": question_z[:, 0], "z_best": question_z.max(axis=1), "z_feedback": feedback_z,
               "coverage": coverage, "bm25_share": bm25_share, "bm25_expanded": bm25_expanded}
    for name in ("z", "z_feedback", "bm25_expanded"):
        signals[f"{name}_relative"] = signals[name] - float(signals[name][core].mean())
    return signals


def score_claim(index: LexicalIndex, hits: list[Hit], vector: np.ndarray,
                query_terms: list[str]) -> None:
    """A claim's signals on each hit: z of its similarity against the collection's background
    alone (the relevance cut was calibrated so) and its coverage of the question's words."""
    centres, spreads = background_of(index.background, vector[None, :])
    centre, spread = float(centres[0]), float(spreads[0])
    coverage = index.coverage(query_terms, [h.index for h in hits])
    for hit, covered in zip(hits, coverage, strict=True):
        hit.z = (hit.similarity - centre) / spread
        hit.coverage = float(covered)


def mark_named(index: LexicalIndex, hits: list[Hit], query: str) -> None:
    """Mark the hits that hold a rare name the question uses (see NAMED_PAPERS): every
    word of it ("NS-VQA" is "ns" and "vqa")."""
    rows = [h.index for h in hits]
    for name in named_terms(query, index) if hits else []:
        for hit, share in zip(hits, index.coverage(name, rows), strict=True):
            hit.named = hit.named or bool(share > 0.999)


def named_terms(question: str, index: LexicalIndex) -> list[list[str]]:
    """The rare names a question uses, each as the collection's terms for it: a name-like word
    whose rarest term at most NAMED_PAPERS papers (and a tenth of a small collection) hold."""
    most = min(NAMED_PAPERS, max(1, index.size // 10))
    names = []
    for word in question.split():
        word = word.strip(".,;:!?()[]{}\"'“”‘’")
        if not _NAME_LIKE.match(word):
            continue
        name = sorted(set(lexical.terms(word, query=True)))
        counts = [index.document_frequency(t) for t in name]
        if name and 0 < min(counts) <= most and all(counts):
            names.append(name)
    return names
