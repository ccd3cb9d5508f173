"""The fitted numbers of retrieval, each with the script and figure behind it: the fusion
weight, the relevance cut for claims (CutRule), the list decision (RelevanceModel) for English,
multilingual and Chinese questions, and the pseudo-relevance feedback's settings.

(Named `fitted`, not `models`, so that it is not taken for ragqa.models, the encoders.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ragqa.retrieval.types import Hit

# Weight of the dense score in the fusion, BM25's being the rest (bench/tune_fusion.py).
DENSE_WEIGHT = 0.5
# The relevance cut, calibrated by bench/calibrate_cut.py (see README, "Relevance cut").
# z: how many robust standard deviations a paper's best-chunk similarity stands above the
# similarity of a random paper of the collection (a per-question background, so the cut means the
# same for a question that every abstract half-matches and for one that none does).
# coverage: the idf-weighted share of the question's content words that the paper contains.


@dataclass(frozen=True)
class CutRule:
    z_strong: float  # semantically far above the background: relevant on its own
    z_weak: float  # above the background, and ...
    coverage: float  # ... holding most of the question's rare words
    near_best: float  # or this close to the best paper when that one is strong (0: off)
    max_gap: float  # and never further below the best paper than this
    gate: CutRule | None = None  # keep nothing unless this stricter rule keeps something


# A claim or a fact question wants the paper(s) that hold it: calibrated on SciFact train and
# off-topic claims by bench/calibrate_cut.py (README). "Which papers ..." questions and summary
# topics want the complete list: the RelevanceModel below decides those.
CUT_FOR_CLAIMS = CutRule(4.5, 1.0, 0.6, 0.0, 1.0)


@dataclass(frozen=True)
class CoreModel:
    """A second look at a list's core (issue 45). The list model's probability saturates near
    1 for every paper of a topic's neighbourhood, so no floor on it tells the papers about the
    topic from their neighbours (0.807 core precision at 0.995, the grid's top). This logistic
    model reads each core paper after the first, with the list's signals, how sure the list
    model is and the paper's place in the core, and folds one below `threshold` into the tail.
    Fitted by bench/lists/core_model.py on the core papers of calibration questions (the list
    model's logit has come out with next to no weight: in the core it is saturated; the
    relative signals, coverage and the place carry the model)."""

    weights: tuple[tuple[str, float], ...]  # (feature, weight), on the features' raw values
    bias: float
    threshold: float

    # The list decision's signals, then "logit_probability" (the list model's logit, capped at
    # LOGIT_CAP: a probability of 1.0 in floating point has an infinite logit, and past 12, p >
    # 0.999993, it tells nothing more) and "log_rank" (log(1 + place in the core)).
    LOGIT_CAP = 12.0

    @classmethod
    def features(cls, core: Sequence[Hit]) -> list[dict[str, float]]:
        """Per core paper: every feature a CoreModel may weigh, by name."""
        return [{**hit.signals, "logit_probability": min(_logit(hit.probability), cls.LOGIT_CAP),
                 "log_rank": math.log1p(place)} for place, hit in enumerate(core)]

    def probabilities(self, core: Sequence[Hit]) -> np.ndarray:
        """Per core paper, in the core's order: how likely it is about the topic."""
        return self.probabilities_of(self.features(core))

    def probabilities_of(self, rows: Sequence[dict[str, float]]) -> np.ndarray:
        """The same from the papers' features (`features`), by name."""
        names = [name for name, _ in self.weights]
        x = np.array([[row[name] for name in names] for row in rows],
                     dtype=np.float64).reshape(len(rows), len(names))
        return _logistic(x @ np.array([w for _, w in self.weights]) + self.bias)


@dataclass(frozen=True)
class RelevanceModel:
    """The list decision: logistic models over signals that mean the same for any question
    and any collection size (no score is scaled within one question's candidates), fitted on
    judged "which papers" questions (bench/lists/eval.py).

    Two decisions. Is the topic in the collection at all (the question's gate: the strongest
    candidate's signals, since an absent topic still has nearest papers)? Then, paper by paper:
    is this paper about it? The list is every paper whose probability reaches `threshold`,
    ranked by that probability."""

    weights: tuple[float, ...]  # one per FEATURES
    bias: float
    threshold: float
    gate_weights: tuple[float, ...] = ()  # one per GATE_FEATURES (none: no gate)
    gate_bias: float = 0.0
    gate: float = 0.0  # list nothing unless the topic's probability reaches this
    # The core's floor: a kept paper of this probability or more is "core" (the answer), one
    # below it "tail" (folded). None: every kept paper is core (a list of one tier).
    core: float | None = None
    # The core's second look (decide.recut_core); None: the floor alone decides.
    core_model: CoreModel | None = None

    # z: the topic's similarity against the collection's background; z_best: the best z over
    # the topic and its examples; z_feedback: z of the similarity to the centre of the first
    # round's best papers; coverage: the idf-weighted share of the question's words the paper
    # holds; bm25_share: BM25 against what a paper holding each word once would score;
    # bm25_expanded: the same for the query expanded from the first round's papers (RM3);
    # the *_relative ones: each against the first round's best papers (how close a paper is to
    # the core of what this question found).
    FEATURES = ("z", "z_best", "z_feedback", "coverage", "bm25_share", "bm25_expanded",
                "z_relative", "z_feedback_relative", "bm25_expanded_relative")
    GATE_FEATURES = ("bm25_expanded", "z_feedback", "coverage")

    @property
    def core_floor(self) -> float:
        """The least probability of a core paper (the whole list's, when it has one tier)."""
        return self.threshold if self.core is None else max(self.core, self.threshold)

    def probabilities(self, hits: Sequence[Hit]) -> np.ndarray:
        if not hits:
            return np.zeros(0)
        x = np.array([[h.signals[f] for f in self.FEATURES] for h in hits], dtype=np.float64)
        return _logistic(x @ np.asarray(self.weights) + self.bias)

    def topic_probability(self, hits: Sequence[Hit]) -> float:
        """How likely the collection covers the question's topic at all."""
        if not hits:
            return 0.0
        if not self.gate_weights:
            return 1.0
        if len(hits) < SMALL_POOL:  # every paper of the collection is a candidate
            return float(max(h.signals["z"] for h in hits) >= SMALL_GATE_Z)
        strongest = question_signals(hits, self.GATE_FEATURES)
        return float(_logistic(strongest @ np.asarray(self.gate_weights) + self.gate_bias))

    def rank(self, hits: list[Hit]) -> list[Hit]:
        """Every hit with its probability set, most probable first."""
        for hit, p in zip(hits, self.probabilities(hits), strict=True):
            hit.probability = hit.score = float(p)
        return sorted(hits, key=lambda h: -h.probability)

    def keep(self, hits: list[Hit]) -> list[Hit]:
        """The list, most probable first, each paper with its tier: core from `core` up (and
        the most probable paper, when it reaches `threshold`: a topic the gate passed has its
        best paper in the answer), tail down to `threshold`. A topic the gate doubts has no
        core: what it found is all tail (each paper `doubted`), folded below "none is clearly
        about it" (the gate's doubt falls on whole topics that are there: questions of several
        parts, whose papers each hold one; on the blind list set it silenced 4 of 40 real
        topics and 2 of 10 absent ones). A model of one tier lists nothing then."""
        ranked = self.rank(hits)
        doubted = self.topic_probability(ranked) < self.gate
        if doubted and self.core is None:
            return []
        kept = [h for h in ranked if h.probability >= self.threshold]
        if doubted:
            for hit in kept:
                hit.tier, hit.doubted = "tail", True
            return kept
        for i, hit in enumerate(kept):
            hit.tier = "core" if self.core is None or i == 0 or hit.probability >= self.core \
                else "tail"
        return kept


# The topic gate reads the mean of each signal's top GATE_TOP values (question_signals).
GATE_TOP = 3
# A collection of fewer papers than SMALL_POOL holds no three papers of most topics: its gate
# is the best paper's z alone (the gate's signals, read from a core of one or two papers, tell
# nothing there). SMALL_GATE_Z: the middle of the plateau of `bench/lists/small.py --split
# calibrate` (the tiny collections' success 0.833 for 1.5-2.25, 0.778 at 1.0 and at 2.5).
SMALL_POOL = 20
SMALL_GATE_Z = 2.0


def question_signals(hits: Sequence[Hit], features: Sequence[str]) -> np.ndarray:
    """How strong the best candidates are: the mean of each signal's top GATE_TOP values (a
    topic that is there has several papers that match it well; an absent one, one or two near
    misses at best)."""
    return np.array([np.mean(sorted((h.signals[f] for h in hits), reverse=True)[:GATE_TOP])
                     for f in features], dtype=np.float64)


def _logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))


def _logistic(x: np.ndarray | float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(x, dtype=np.float64), -500.0, 500.0)))


# Pseudo-relevance feedback for lists (bench/lists/README.md): the first round ranks by topic z
# plus this weight times the BM25 share; its best FEEDBACK_PAPERS give the feedback vector and
# the EXPANSION_TERMS added to the BM25 query, which weigh EXPANSION_SHARE of it.
FEEDBACK_PAPERS = 8
FEEDBACK_MIN = 2
FEEDBACK_Z = 3.0  # on the first round's score: z plus FEEDBACK_BM25_WEIGHT x BM25 share
FEEDBACK_BM25_WEIGHT = 4.0
EXPANSION_TERMS = 15
EXPANSION_SHARE = 0.5
MULTILINGUAL_CORE = 6  # first-round papers that make a foreign question's feedback, at least
# The core's second look (issue 45), by `bench/lists/core_model.py` (session 29): fitted on the
# core papers of the dev slices, the first blind set's calibrate half and the second blind set.
# Its threshold: held out one calibration slice at a time, the least reaching core precision
# 0.85 among those keeping 0.85 of the core's recall; none reaches it, so the most precise of
# them (0.802 -> 0.829 there, recall 0.527 -> 0.454). On the fourth blind set, which nothing
# saw, as `ragqa search` lists it: core precision 0.862 -> 0.904, core recall 0.800 -> 0.717
# (docs/benchmarks.md, "The core's second look").
CORE_MODEL = CoreModel(
    weights=(("z", -0.3156), ("z_best", 0.5411), ("z_feedback", -0.2753), ("coverage", 2.0555),
             ("bm25_share", -0.6816), ("bm25_expanded", 0.6705), ("z_relative", 0.622),
             ("z_feedback_relative", 0.7133), ("bm25_expanded_relative", 1.3319),
             ("logit_probability", -0.0168), ("log_rank", -0.7572)),
    bias=0.9563, threshold=0.4)
# Fitted by bench/lists/eval.py --fit on the judged dev sets (bench/lists/, README "Lists").
LIST_MODEL = RelevanceModel(
    weights=(-0.1869, 0.8739, 1.231, 0.9233, -0.1671, 18.9515, 0.3057, -0.0747, 5.344),
    bias=-3.6477, threshold=0.45, gate_weights=(10.932, 2.2547, 15.9626), gate_bias=-13.3873,
    gate=0.4, core=0.995, core_model=CORE_MODEL)
# The tiers (issue 45), by bench/lists/tiers.py on the dev slices and the blind list set's
# calibrate half (the floors alone, before the core's second look above): core from 0.995 (the
# grid's top: no floor reached core precision 0.88 there, 0.807 at 0.995), tail down to 0.45 (the
# highest floor with core + tail recall 0.92 there: 0.921, once a doubted topic's papers are its
# tail; 0.05 before, when they were dropped). Held out, on the blind set's report half (naacl2021,
# ijcai2021; 30 questions): core precision 0.836, core recall 0.712, core + tail recall 0.977,
# tail 22 papers on average (before: 0.888 with 94; docs/benchmarks.md, "Lists in tiers"). The
# single list before the tiers was every paper from 0.91: precision 0.607, recall 0.830 there.
# The list of one tier, as it was before the tiers (LIST_MODEL's floor then, fitted by
# bench/lists/eval.py): what a summary, a trend and a map's highlight take of a list, so that
# they read the papers they were built and measured on, not the core alone nor the long tail.
WHOLE_LIST_FLOOR = 0.91


def whole_list(hits: Sequence[Hit]) -> list[Hit]:
    """A list's papers in the one-tier list: its core, and its tail from WHOLE_LIST_FLOOR (a
    model of one tier: every paper it keeps). Of a topic the gate doubts, only the papers that
    state it (decide.decide_list's core), as the one-tier list of before listed. Never a
    paper nearer what the question excludes (decide.fold_excluded)."""
    return [hit for hit in hits if not hit.excluded and (
        hit.tier == "core" or (hit.probability >= WHOLE_LIST_FLOOR and not hit.doubted))]


# The list decision for a question in another language, searched with the multilingual
# vectors: the same signals, but z measured in the multilingual space (its cosines have another
# scale) and BM25 on the question's Latin-script words only. Fitted by
# `bench/multilingual/eval.py --slices nips2018,seeds --fit` on the Chinese dev questions
# (held-out figures: README). With ACL 2022's too, the fit gives BM25 on the question's Latin
# words a negative weight (-2.1), which empties a mixed or French question's list: not shipped.
# No topic gate: fitted, it silenced most real topics (held-out recall 0.27 with it, 0.40
# without, on NeurIPS 2018 in Chinese), so a foreign question on an absent topic gets a list.
MULTILINGUAL_LIST_MODEL = RelevanceModel(
    weights=(-1.1363, 1.9092, 0.534, 0.1416, 0.0595, 6.7468, 0.5978, 0.3071, 3.0599),
    bias=-0.7251, threshold=0.77)
# A Chinese question's list decision: the same signals, with BM25 and an English query vector
# also reading the dictionaries' English words for its Chinese ones (models/glossary.py). Fitted by
# `bench/multilingual/eval.py --fit` (all three slices: its BM25 weights are positive now that
# BM25 reads the question's words). No topic gate: fitted, it kept 0.5-0.8 of the absent topics
# silent but cut held-out recall by 0.05-0.09 on every slice.
CHINESE_LIST_MODEL = RelevanceModel(
    weights=(-0.0088, 0.6154, 0.7059, 4.9724, 4.0934, 13.8594, 0.8678, 0.0925, 12.7841),
    bias=-1.5669, threshold=0.89)
