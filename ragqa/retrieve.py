"""Question -> the papers that matter: dense (Chroma) + lexical (BM25), fused by scaled scores,
aggregated to papers, then cut where relevance ends.

The relevance cut (see `relevance_cut`) keeps every paper that is plausibly about the question,
not a fixed top-k, so that "which papers ..." gets all of them and an off-topic question none.
Its thresholds were calibrated on data: bench/calibrate_cut.py prints the figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ragqa import lexical
from ragqa.corpus import Paper, split_sentences
from ragqa.store import Store, local_dir

if TYPE_CHECKING:
    from ragqa.lexical import LexicalIndex

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


# "Which papers ..." wants the complete list; a claim or a fact question wants the paper(s) that
# hold it. Each rule is the best of its kind on the calibration data (README).
CUT_FOR_LISTS = CutRule(3.5, 1.5, 0.4, 1.0, 1.0)
CUT_FOR_CLAIMS = CutRule(4.5, 1.0, 0.6, 0.0, 1.0)
# A literature summary prefers breadth, once the list rule has found that the topic is there at
# all (the gate keeps an off-topic summary as silent as an off-topic list).
CUT_FOR_SUMMARIES = CutRule(2.25, 0.75, 0.4, 0.0, math.inf, gate=CUT_FOR_LISTS)
_QUESTION_FRAME = re.compile(
    r"^\s*(?:(?:which|what|list|find|show(?: me)?|are there|is there|give me)\s+)?"
    r"(?:(?:all|any|the)\s+)?(?:papers?|works?|studies|articles|abstracts|research)\s+"
    r"(?:(?:do|does|are|is|that|which)\s+)?"
    r"(?:(?:deal|deals|dealing|work|works|working)\s+(?:with|on)|about|on|in|for|of|study|"
    r"studies|address|addresses|tackle|tackles|focus(?:es)? on|propose|proposes|use|uses|"
    r"involve|involves|cover|covers|concern|concerns|discuss|discusses|do|does|)\s*",
    re.IGNORECASE,
)
_LIST_QUESTION = re.compile(
    r"^\s*(?:which|what|list|find|show|name|give)\b(?:\s+\w+){0,3}?\s+"
    r"(?:papers|works|studies|articles|approaches|methods)\b"
    r"|^\s*(?:are there|is there)\b.{0,30}\b(?:papers?|works?)"
    r"|^\s*(?:papers|works|studies)\s+(?:on|about|that|which|using|with)\b",
    re.IGNORECASE,
)
# A question word or a verb-like sentence: a claim or a fact question, not a bare topic.
_CLAIM_LIKE = re.compile(
    r"\?|^\s*(?:how|what|why|when|where|who|does|do|is|are|can|which)\b"
    r"|\b(?:is|are|was|were|has|have|had|does|do|did|can|increases?|decreases?|causes?|"
    r"reduces?|leads?|improves?|predicts?|uses?|shows?|achieves?)\b",
    re.IGNORECASE,
)


@dataclass
class Hit:
    index: int  # the paper's row in the lexical snapshot
    score: float  # fused (0..1), the order of the results
    similarity: float  # best chunk's cosine similarity to the question (-1 .. 1)
    bm25: float
    chunk_id: str = ""  # the paper's nearest chunk (empty when only BM25 found it)
    best_sentence: str = ""
    z: float = 0.0
    coverage: float = 0.0
    paper: Paper = None  # type: ignore[assignment]  # read for the hits that are kept


@dataclass(frozen=True)
class Filters:
    """Which papers a search may return: a venue, a year, or a set of paper ids (a chat
    follow-up about "them" searches only the papers the last answer cited)."""

    venue: str | None = None
    year: int | None = None
    paper_ids: frozenset[str] | None = None

    def __bool__(self) -> bool:
        return self.venue is not None or self.year is not None or self.paper_ids is not None

    def as_dict(self) -> dict:
        out: dict = {k: v for k, v in (("venue", self.venue), ("year", self.year)) if v}
        if self.paper_ids is not None:
            out["paper_ids"] = sorted(self.paper_ids)
        return out

    def chroma_where(self) -> dict | None:
        clauses: list[dict] = []
        if self.venue:
            clauses.append({"venue_key": self.venue.lower()})
        if self.year is not None:
            clauses.append({"year": self.year})
        if self.paper_ids is not None:
            clauses.append({"paper_id": {"$in": sorted(self.paper_ids)}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    total_papers: int
    considered: int = 0
    cut_applied: bool = True
    filters: dict = field(default_factory=dict)


def topic_of(question: str) -> str:
    """'Which papers do full-duplex speech?' -> 'full-duplex speech': the frame of a "which
    papers" question says nothing about the topic and dilutes its embedding."""
    topic = _QUESTION_FRAME.sub("", question, count=1).strip().rstrip("?.! ")
    return topic if len(topic) >= 3 else question.strip()


class Retriever:
    """Search over one collection. Opening it loads the BM25 snapshot once; keep it around for
    many queries (the batch mode and the benchmarks do)."""

    def __init__(self, store: Store) -> None:
        from ragqa.ingest import collection_lock, sync_lexical

        self.store = store
        folder = local_dir(store.settings, store.name)
        index = lexical.open_current(folder)
        if index is None and store.exists():
            # A collection filled elsewhere (a shared Chroma server) or a snapshot lost: derive
            # it, under the ingest lock so that it never races an ingest's own snapshot.
            with collection_lock(folder, store.settings.lock_timeout):
                # The wait may have let an ingest write: embedded Chroma would not see it.
                store.reopen()
                index = lexical.open_current(folder)
                if index is None:
                    sync_lexical(store)
                    index = lexical.open_current(folder)
        self.lexical: LexicalIndex | None = index

    @property
    def total_papers(self) -> int:
        return self.lexical.size if self.lexical else 0

    def search(self, query: str, k: int | None = None, filters: Filters | None = None,
               cut: bool = True, sentences: bool = True, rule: CutRule | None = None
               ) -> SearchResult:
        """The papers for `query`, best first: all that pass the relevance cut (or the top k
        without it). The cut's rule follows the kind of question unless `rule` is given.
        `sentences=False` skips picking each paper's best sentence."""
        filters = filters or Filters()
        if not self.lexical or not self.lexical.size:
            return SearchResult(query, [], 0, filters=filters.as_dict())
        n = max(self.store.settings.candidates, k or 0)
        vector = self.store.encoder.embed([topic_of(query)])[0]
        dense = self._dense(vector, n, filters)
        allowed = (self.lexical.indices_matching(filters.venue, filters.year, filters.paper_ids)
                   if filters else None)
        query_terms = lexical.terms(query, query=True)
        hits = self._fuse(dense, self.lexical.search(query, n, allowed))
        considered = len(hits)
        self._score_relevance(hits, vector, query_terms)
        if cut:
            rule = rule or (CUT_FOR_LISTS if is_list_question(query) else CUT_FOR_CLAIMS)
            if filters.paper_ids:
                # A follow-up among papers already found ("which of them ..."): each one that
                # clears the rule on its own answers it, however far the best one leads.
                rule = replace(rule, max_gap=math.inf)
            hits = relevance_cut(hits, rule)
        if k:
            hits = hits[:k]
        chunks = self.store.documents([h.chunk_id for h in hits if h.chunk_id]) \
            if sentences else {}
        for hit, paper in zip(hits, self.lexical.papers_by_index([h.index for h in hits]),
                              strict=True):
            hit.paper = paper
            if sentences:
                text = chunks.get(hit.chunk_id) or paper.text
                hit.best_sentence = best_sentence(text, set(query_terms))
        return SearchResult(query, hits, self.total_papers, considered, cut, filters.as_dict())

    def _dense(self, vector: np.ndarray, n: int, filters: Filters
               ) -> dict[str, tuple[str, float]]:
        """paper_id -> (its nearest chunk, that chunk's similarity) among the nearest chunks."""
        papers: dict[str, tuple[str, float]] = {}
        # Nearest first, so the first chunk seen is a paper's best.
        for chunk_id, paper_id, similarity in self.store.query(vector, n * 2,
                                                               filters.chroma_where()):
            papers.setdefault(paper_id, (chunk_id, similarity))
        return papers

    def _fuse(self, dense: dict[str, tuple[str, float]], bm25: list[tuple[int, float]]
              ) -> list[Hit]:
        """The dense and BM25 candidates, ranked by DENSE_WEIGHT * dense + (1 - DENSE_WEIGHT)
        * BM25, each score min-max scaled over its own candidates (a paper missing from one
        list gets 0 there). On SciFact train this beats reciprocal-rank fusion by 0.016
        nDCG@10: a score keeps how far ahead the best matches are, which a rank throws away.
        Papers by index; the Paper records are read only for the hits that are kept."""
        assert self.lexical is not None
        fused: dict[int, Hit] = {}
        dense_scaled = min_max([similarity for _, similarity in dense.values()])
        for (pid, (chunk_id, similarity)), scaled in zip(dense.items(), dense_scaled,
                                                          strict=True):
            index = self.lexical.index_of(pid)
            if index is None:  # in Chroma, not yet in the snapshot: an ingest is running
                continue
            fused[index] = Hit(index, DENSE_WEIGHT * scaled, similarity, 0.0, chunk_id=chunk_id)
        for (index, score), scaled in zip(bm25, min_max([s for _, s in bm25]), strict=True):
            hit = fused.setdefault(index, Hit(index, 0.0, -1.0, 0.0))
            hit.score += (1.0 - DENSE_WEIGHT) * scaled
            hit.bm25 = score
        # Equal fused scores go to the better match.
        return sorted(fused.values(), key=lambda h: (-h.score, -h.similarity - h.bm25))

    def _score_relevance(self, hits: list[Hit], vector: np.ndarray, terms: list[str]) -> None:
        assert self.lexical is not None
        background = self.lexical.background
        if background is not None and len(background) >= 5:
            sims = background @ vector
            centre = float(np.median(sims))
            spread = max(1.4826 * float(np.median(np.abs(sims - centre))), 0.02)
        else:  # too few papers to tell: plain cosine, scaled so z 2.5 means a cosine of 0.5
            centre, spread = 0.0, 0.2
        coverage = self.lexical.coverage(terms, [h.index for h in hits])
        for hit, covered in zip(hits, coverage, strict=True):
            hit.z = (hit.similarity - centre) / spread
            hit.coverage = float(covered)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores scaled to 0 (the lowest) .. 1 (the highest); all 1 when they are all equal."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [(score - low) / (high - low) if high > low else 1.0 for score in scores]


def keep_decisions(z: Sequence[float], coverage: Sequence[float], rule: CutRule
                   ) -> list[bool]:
    """The cut's rule on its two signals (bench/calibrate_cut.py searches its parameters)."""
    if rule.gate is not None and not any(keep_decisions(z, coverage, rule.gate)):
        return [False] * len(z)
    best = max(z, default=0.0)
    strong = best >= rule.z_strong
    return [(zi >= rule.z_strong or (zi >= rule.z_weak and ci >= rule.coverage)
             or (strong and rule.near_best > 0 and zi >= max(rule.z_weak, best - rule.near_best)))
            and zi >= best - rule.max_gap
            for zi, ci in zip(z, coverage, strict=True)]


def relevance_cut(hits: list[Hit], rule: CutRule) -> list[Hit]:
    """Keep the papers that are about the question: none when nothing stands out."""
    keep = keep_decisions([h.z for h in hits], [h.coverage for h in hits], rule)
    return [h for h, kept in zip(hits, keep, strict=True) if kept]


def is_list_question(question: str) -> bool:
    """'Which papers …', 'papers on …', or a bare topic: the user wants every matching paper."""
    return bool(_LIST_QUESTION.search(question)) or not _CLAIM_LIKE.search(question)


def best_sentence(text: str, query_terms: set[str]) -> str:
    """The sentence sharing the most (stemmed) words with the question; ties go to the earlier
    one. Falls back to the first sentence."""
    sentences = split_sentences(text)
    if not sentences:
        return text
    if not query_terms:
        return sentences[0]
    scores = [len(query_terms & set(words)) / math.sqrt(len(words) + 5)
              for words in map(lexical.terms, sentences)]
    best = int(np.argmax(scores))
    return sentences[best] if scores[best] > 0 else sentences[0]
