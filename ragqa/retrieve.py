"""Question -> the papers that matter: dense (Chroma) + lexical (BM25), fused by reciprocal rank,
aggregated to papers, then cut where relevance ends.

The relevance cut (see `relevance_cut`) keeps every paper that is plausibly about the question,
not a fixed top-k, so that "which papers ..." gets all of them and an off-topic question none.
Its thresholds were calibrated on data: bench/calibrate_cut.py prints the figures.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ragqa import lexical
from ragqa.corpus import Paper
from ragqa.store import Store, local_dir

if TYPE_CHECKING:
    from ragqa.lexical import LexicalIndex

RRF_K = 60
# The relevance cut, calibrated by bench/calibrate_cut.py (see README, "Relevance cut").
# z: how many robust standard deviations a paper's best-chunk similarity stands above the
# similarity of a random paper of the collection (a per-question background, so the cut means the
# same for a question that every abstract half-matches and for one that none does).
# coverage: the idf-weighted share of the question's content words that the paper contains.
Z_STRONG = 2.5  # semantically far above the background: relevant on its own
Z_WEAK = 1.0  # above the background, and ...
COVERAGE = 0.6  # ... holding most of the question's rare words
_QUESTION_FRAME = re.compile(
    r"^\s*(?:(?:which|what|list|find|show(?: me)?|are there|is there|give me)\s+)?"
    r"(?:(?:all|any|the)\s+)?(?:papers?|works?|studies|articles|abstracts|research)\s+"
    r"(?:(?:do|does|are|is|that|which)\s+)?"
    r"(?:(?:deal|deals|dealing|work|works|working)\s+(?:with|on)|about|on|in|for|of|study|"
    r"studies|address|addresses|tackle|tackles|focus(?:es)? on|propose|proposes|use|uses|"
    r"involve|involves|cover|covers|concern|concerns|discuss|discusses|do|does|)\s*",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$*τ])")


@dataclass
class Hit:
    paper: Paper
    score: float  # fused (RRF), the order of the results
    similarity: float  # best chunk's cosine similarity to the question (-1 .. 1)
    bm25: float
    best_chunk: str = ""
    best_sentence: str = ""
    rank_dense: int | None = None
    rank_lexical: int | None = None
    z: float = 0.0
    coverage: float = 0.0


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


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


class Retriever:
    """Search over one collection. Opening it loads the BM25 snapshot once; keep it around for
    many queries (the batch mode and the benchmarks do)."""

    def __init__(self, store: Store) -> None:
        from ragqa.ingest import sync_lexical

        self.store = store
        folder = local_dir(store.settings, store.name)
        index = lexical.open_current(folder)
        if index is None and store.exists():
            # A collection filled elsewhere (a shared Chroma server) or a snapshot lost: derive it.
            sync_lexical(store)
            index = lexical.open_current(folder)
        self.lexical: LexicalIndex | None = index

    @property
    def total_papers(self) -> int:
        return self.lexical.size if self.lexical else 0

    def search(self, query: str, k: int | None = None, venue: str | None = None,
               year: int | None = None, cut: bool = True) -> SearchResult:
        filters = {key: v for key, v in (("venue", venue), ("year", year)) if v is not None}
        if not self.lexical or not self.lexical.size:
            return SearchResult(query, [], 0, filters=filters)
        n = max(self.store.settings.candidates, k or 0)
        vector = self.store.encoder.embed([topic_of(query)])[0]
        dense = self._dense(vector, n, venue, year)
        allowed = self.lexical.indices_matching(venue, year) if filters else None
        bm25 = self.lexical.search(query, n, allowed)
        hits = self._fuse(dense, bm25)
        considered = len(hits)
        query_terms = set(lexical.tokenize([query], query=True)[0])
        self._score_relevance(hits, vector, query_terms)
        if cut:
            hits = relevance_cut(hits)
        if k:
            hits = hits[:k]
        for hit in hits:
            hit.best_sentence = best_sentence(hit.best_chunk or hit.paper.text, query_terms)
        return SearchResult(query, hits, self.total_papers, considered, cut, filters)

    def _dense(self, vector: np.ndarray, n: int, venue: str | None, year: int | None
               ) -> dict[str, dict]:
        """paper_id -> its best chunk among the nearest chunks."""
        where = _chroma_where(venue, year)
        count = self.store.count()
        chunks = self.store.query(vector, min(count, n * 3), where) if count else []
        papers: dict[str, dict] = {}
        for chunk in chunks:  # nearest first, so the first chunk seen is a paper's best
            papers.setdefault(chunk["paper_id"], chunk)
        return papers

    def _fuse(self, dense: dict[str, dict], bm25: list[tuple[int, float]]) -> list[Hit]:
        assert self.lexical is not None
        fused: dict[str, Hit] = {}
        for rank, (pid, chunk) in enumerate(dense.items(), start=1):
            paper = self.lexical.paper(pid)
            if paper is None:  # in Chroma but not yet in the snapshot: an ingest is running
                continue
            fused[pid] = Hit(paper, 1.0 / (RRF_K + rank), chunk["similarity"], 0.0,
                             best_chunk=chunk["document"], rank_dense=rank)
        bm25_papers = self.lexical.papers_by_index([i for i, _ in bm25])
        for rank, (paper, (_, score)) in enumerate(zip(bm25_papers, bm25, strict=True), start=1):
            hit = fused.get(paper.paper_id)
            if hit is None:
                hit = fused[paper.paper_id] = Hit(paper, 0.0, -1.0, 0.0)
            hit.score += 1.0 / (RRF_K + rank)
            hit.bm25, hit.rank_lexical = score, rank
        # Equal fused scores (ranks swapped between the two lists) go to the better match.
        return sorted(fused.values(), key=lambda h: (-h.score, -h.similarity - h.bm25))


    def _score_relevance(self, hits: list[Hit], vector: np.ndarray, terms: set[str]) -> None:
        assert self.lexical is not None
        background = self.lexical.background
        if background is not None and len(background) >= 5:
            sims = background @ vector
            centre = float(np.median(sims))
            spread = max(1.4826 * float(np.median(np.abs(sims - centre))), 0.02)
        else:  # too few papers to tell: plain cosine, scaled so Z_STRONG means ~0.5
            centre, spread = 0.0, 0.2
        idf = self.lexical.idf(sorted(terms))
        total = sum(idf.values())
        for hit in hits:
            hit.z = (hit.similarity - centre) / spread
            if total:
                present = set(lexical.tokenize([lexical.paper_document(hit.paper)])[0])
                hit.coverage = sum(w for t, w in idf.items() if t in present) / total


def _chroma_where(venue: str | None, year: int | None) -> dict | None:
    clauses = []
    if venue:
        clauses.append({"venue_key": venue.lower()})
    if year is not None:
        clauses.append({"year": year})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def relevance_cut(hits: list[Hit]) -> list[Hit]:
    """Keep the papers that are about the question: none when nothing stands out."""
    return [h for h in hits
            if h.z >= Z_STRONG or (h.z >= Z_WEAK and h.coverage >= COVERAGE)]


def best_sentence(text: str, query_terms: set[str]) -> str:
    """The sentence sharing the most (stemmed) words with the question; ties go to the earlier
    one. Falls back to the first sentence."""
    sentences = split_sentences(text)
    if not sentences:
        return text
    if not query_terms:
        return sentences[0]
    tokenized = lexical.tokenize(sentences)
    scores = [len(query_terms & set(tokens)) / math.sqrt(len(tokens) + 5) for tokens in tokenized]
    best = int(np.argmax(scores))
    return sentences[best] if scores[best] > 0 else sentences[0]
