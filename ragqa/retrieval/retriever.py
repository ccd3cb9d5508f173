"""Question -> the papers that matter: candidates (dense + BM25 + feedback), their signals, then
the decision: every paper that is plausibly about the question, not a fixed top-k, so that
"which papers ..." gets all of them and an off-topic question none.

One pipeline (`Retriever._search`) for every question; the query space (spaces.py) says how a
question in English or in another language is searched. A claim or a fact question is decided
by the relevance cut (decide.relevance_cut; calibrated by bench/calibrate_cut.py), a "which
papers" question by the calibrated list decision (fitted.RelevanceModel, bench/lists/eval.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ragqa.index import lexical
from ragqa.index.follow import collection_lock, follow
from ragqa.index.lexical import LexicalIndex
from ragqa.index.store import Store, local_dir
from ragqa.models.encoders import make_multilingual_encoder
from ragqa.retrieval.candidates import (
    CandidatePool,
    Embedding,
    bm25_scores,
    feedback_round,
    feedback_size,
    fuse,
    min_max,
    nearest_papers,
)
from ragqa.retrieval.decide import decide_claim, decide_list, fold_excluded, recut_core
from ragqa.retrieval.fitted import FEEDBACK_BM25_WEIGHT, CutRule, RelevanceModel
from ragqa.retrieval.question import Understood, described_paper, topic_of, understand
from ragqa.retrieval.sentences import read_papers
from ragqa.retrieval.signals import (
    Background,
    bm25_ideal,
    list_signals,
    score_claim,
    weighted_ideal,
)
from ragqa.retrieval.spaces import EnglishSpace, MultilingualSpace, QuerySpace
from ragqa.retrieval.types import Filters, Hit, SearchResult

# Multilingual vectors sampled for that space's background (Retriever.multilingual_space).
MULTILINGUAL_BACKGROUND = 2000


class Retriever:
    """Search over one collection. Opening it loads the BM25 snapshot once; keep it around for
    many queries (the batch mode and the benchmarks do)."""

    def __init__(self, store: Store) -> None:
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
                    follow(store, locked=True)
                    index = lexical.open_current(folder)
        elif index is not None and store.settings.uses_chroma_server and \
                follow(store, wait=False) in ("updated", "rebuilt"):
            # Another machine wrote to the shared server since this one last looked (one read
            # of the journal's head when nothing changed; see index/follow.py).
            index.close()
            index = lexical.open_current(folder)
        self.lexical: LexicalIndex | None = index
        self._multilingual: Embedding | None = None
        # A Chinese question's words translated by the dictionaries (models/glossary.py); off only
        # to measure what they bring (bench/multilingual/eval.py).
        self.dictionary = True
        # What this snapshot's searches read from Chroma again and again, kept as they are read
        # (a server answers many questions over the same papers; each Chroma get costs ~2 ms):
        # chunk-0 vectors by snapshot row. Keyed by paper, never by question; a new snapshot is
        # a new Retriever (App.retriever), so nothing goes stale.
        self._vector_table: tuple[np.ndarray, np.ndarray] | None = None  # (vectors, known)
        self._table_lock = threading.Lock()

    @property
    def total_papers(self) -> int:
        return self.lexical.size if self.lexical else 0

    def multilingual_space(self) -> Embedding | None:
        """The sibling collection of multilingual vectors with its background sample, or None
        when the collection keeps none (opened, and its model loaded, on first use)."""
        if self._multilingual is None:
            embedder = self.store.multilingual_embedder() if self.store.exists() else ""
            if not embedder:
                return None
            side = self.store.multilingual_store(make_multilingual_encoder(self.store.settings))
            if not side.exists() or not side.count():
                return None
            side.collection()  # refuses a sibling another multilingual model built
            pids = self.lexical.paper_ids_by_index(range(self.total_papers)) \
                if self.lexical else []
            sample = side.sample_vectors(pids, MULTILINGUAL_BACKGROUND) if pids else None
            self._multilingual = Embedding(
                side, Background(sample, side.encoder.embedder_id, self.total_papers),
                lambda pool: side.paper_vectors(pool.pids))
        return self._multilingual

    def search(self, query: str, k: int | None = None, filters: Filters | None = None,
               cut: bool = True, sentences: bool = True,
               rule: CutRule | RelevanceModel | None = None,
               word_rules: bool = True) -> SearchResult:
        """The papers for `query`, best first: all that pass the relevance decision (or the top
        k without it). The decision follows the kind of question unless `rule` is given: a
        "which papers" question (or a summary's topic) is decided paper by paper by the
        calibrated RelevanceModel, a claim or fact question by a CutRule.
        `sentences=False` skips picking each paper's best sentence; `word_rules=False` (a
        machine-translated question) lists what the calibrated model keeps, nothing more or less."""
        return self._search(EnglishSpace(query, word_rules), k, filters, cut, sentences, rule)

    def search_foreign(self, question: str, k: int | None = None,
                       filters: Filters | None = None, cut: bool = True,
                       sentences: bool = True, translation: str | None = None,
                       rule: CutRule | RelevanceModel | None = None) -> SearchResult:
        """A question in another language. With the collection's multilingual vectors: the
        dense side searches them with the question itself, BM25 its Latin-script words; with a
        `translation` (an LLM's), that is searched as an English question too and the two
        lists are merged. Without multilingual vectors: the translation, else the question as
        it is (the English model ranks it poorly); `multilingual` says which."""
        side = self.multilingual_space()
        if side is None:
            result = self.search(translation or question, k, filters, cut, sentences,
                                 word_rules=translation is None)
            result.multilingual = "english+translation" if translation else "english"
            return result
        space = MultilingualSpace(question, side, self.dictionary)
        result = self._search(space, k, filters, cut, sentences, rule)
        if translation:
            english = self.search(translation, k, filters, cut, sentences, word_rules=False)
            result = merge_results(result, english, k)
            result.multilingual = "translated+multilingual"
        return result

    def _search(self, space: QuerySpace, k: int | None, filters: Filters | None, cut: bool,
                sentences: bool, rule: CutRule | RelevanceModel | None) -> SearchResult:
        """The pipeline: candidates, their signals, the decision, the papers read."""
        filters = filters or Filters()
        if not self.lexical or not self.lexical.size:
            return SearchResult(space.question, [], 0, filters=filters.as_dict(),
                                multilingual=space.label)
        rule = rule or space.default_rule()
        n = max(self.store.settings.candidates, k or 0)
        allowed = (self.lexical.indices_matching(filters.venue, filters.year, filters.paper_ids,
                                                 filters.category)
                   if filters else None)
        if isinstance(rule, RelevanceModel) or not space.fuses_claims:
            hits, query_terms = self._list_candidates(space, n, filters, allowed)
        else:
            hits, query_terms = self._claim_candidates(space.question, n, filters, allowed)
        considered = len(hits)
        if isinstance(rule, RelevanceModel):
            hits = (self.decide_list(space.question, hits, rule, space.word_rules) if cut
                    else rule.rank(hits))
        else:
            follow_up = space.widens_follow_ups and bool(filters.paper_ids)
            hits = decide_claim(self.lexical, hits, rule, space.names_in, cut, follow_up)
        if k:
            hits = hits[:k]
        read_papers(self.lexical, hits, query_terms if sentences else None)
        return SearchResult(space.question, hits, self.total_papers, considered, cut,
                            filters.as_dict(), multilingual=space.label)

    def _list_candidates(self, space: QuerySpace, n: int, filters: Filters,
                         allowed: np.ndarray | None) -> tuple[list[Hit], list[str]]:
        """The candidates of a "which papers" question with the RelevanceModel's signals, and
        the words that choose their best sentences.

        The query space gives the question's query vectors (an English question: its topic and
        each of its examples as sub-queries) and its words for BM25. Users describe a topic in
        their own words, which the papers rarely share, so a second round searches again from
        the first round's best papers (pseudo-relevance feedback): their centre among the
        English vectors, and their most telling words added to the BM25 query (RM3). Every
        candidate's similarity to every query vector is computed from its vector and measured
        as a z against its space's background, so that the signals mean the same for any
        question."""
        assert self.lexical is not None
        english, where = self._english(), filters.chroma_where()
        probes = space.probes(english, n, where)
        query_terms = self.lexical.query_terms(space.words, extend=True)
        bm25 = bm25_scores(self.lexical, space.words, n, allowed)
        pool = CandidatePool(self.lexical, self.paper_vectors)
        for probe in probes:
            pool.add_nearest(probe.nearest)
        pool.add_rows(np.flatnonzero(bm25))
        if not pool.rows:
            return [], query_terms
        ideal = bm25_ideal(self.lexical, query_terms)
        first_round = space.first_round_z(pool, probes) \
            + FEEDBACK_BM25_WEIGHT * bm25[pool.rows] / ideal
        # The first round's best papers: the core of what the question found.
        core = np.argsort(-first_round)[:max(space.min_core(self.total_papers),
                                             feedback_size(first_round))]
        feedback = feedback_round(english, pool, core, query_terms, allowed, where, n)

        question_z, feedback_z, similarity = space.measure(pool, probes, feedback.centre, core)
        expanded_ideal = weighted_ideal(self.lexical, feedback.weights)
        signals = list_signals(
            question_z, feedback_z, core=core,
            coverage=self.lexical.coverage(query_terms, pool.rows).astype(np.float64),
            bm25_share=bm25[pool.rows] / ideal,
            bm25_expanded=feedback.scores[pool.rows] / expanded_ideal)
        # The fused score orders a claim's candidates (CutRule): z and BM25 alike. A
        # RelevanceModel replaces it by its probability.
        fused = min_max(list(signals["z_best"] + FEEDBACK_BM25_WEIGHT * bm25[pool.rows] / ideal))
        telling = sorted(feedback.weights, key=lambda t: -feedback.weights[t])
        return (pool.hits(fused, similarity, bm25, signals),
                list(dict.fromkeys(lexical.plain_terms(
                    [*query_terms, *telling[:space.sentence_feedback_words]]))))

    def _claim_candidates(self, query: str, n: int, filters: Filters,
                          allowed: np.ndarray | None) -> tuple[list[Hit], list[str]]:
        """The candidates of an English claim or fact question with their z and coverage: the
        topic's nearest papers fused with BM25's on its words as written (the one paper a
        question describes: on that description)."""
        assert self.lexical is not None
        vector = self.store.encoder.embed_queries([topic_of(query)])[0]
        words = described_paper(query) or query
        query_terms = self.lexical.query_terms(words)
        hits = fuse(self.lexical, self._dense(vector, n, filters),
                    self.lexical.search(words, n, allowed))
        score_claim(self.lexical, hits, vector, query_terms)
        return hits, query_terms

    def decide_list(self, query: str, hits: list[Hit], model: RelevanceModel,
                    word_rules: bool = True) -> list[Hit]:
        """The list for a "which papers" question from its candidates (decide.decide_list),
        less the papers nearer what the question says it does not want (decide.fold_excluded),
        its core read a second time (decide.recut_core)."""
        assert self.lexical is not None
        listed = decide_list(self.lexical, query, hits, model, word_rules)
        understood = understand(query)
        if word_rules and understood.excluded and listed:
            listed = fold_excluded(listed, self._nearer_excluded(understood, listed),
                                   model.core_floor if model.core is not None else None)
        # (a model of one tier has no core to read again: every paper it keeps is the list)
        if model.core_model is None or model.core is None:
            return listed
        return recut_core(listed, model.core_model)

    def _nearer_excluded(self, understood: Understood, hits: list[Hit]) -> list[bool]:
        """Per hit: is its paper nearer (cosine, the collection's own vectors) one of the
        question's excluded parts than every part it asks for?"""
        asked = self._unit(self.store.encoder.embed_queries(list(understood.subqueries)))
        excluded = self._unit(self.store.encoder.embed_queries(list(understood.excluded)))
        papers = self._unit(self.paper_vectors([h.index for h in hits]))
        return list((papers @ excluded.T).max(axis=1) > (papers @ asked.T).max(axis=1))

    @staticmethod
    def _unit(vectors: np.ndarray) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float64)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def paper_vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The chunk-0 vector of each paper (by snapshot row), read from Chroma once."""
        assert self.lexical is not None
        rows = np.asarray(rows, dtype=np.int64)
        table = self._vector_table
        missing = np.unique(rows if table is None else rows[~table[1][rows]])
        if len(missing):
            fetched = self.store.paper_vectors(self.lexical.paper_ids_by_index(missing))
            with self._table_lock:
                table = self._vector_table
                if table is None or table[0].shape[1] != fetched.shape[1]:
                    # zeros: pages of rows never read take no memory
                    table = (np.zeros((self.lexical.size, fetched.shape[1]), dtype=np.float32),
                             np.zeros(self.lexical.size, dtype=bool))
                    self._vector_table = table
                table[0][missing] = fetched
                table[1][missing] = True
        assert table is not None
        return table[0][rows]

    def _english(self) -> Embedding:
        """The collection's own embedding space: its chunk-0 vectors are the pool's."""
        assert self.lexical is not None
        background = Background(self.lexical.background,
                                getattr(self.store.encoder, "embedder_id", ""), self.total_papers)
        return Embedding(self.store, background, lambda pool: pool.vectors)

    def _dense(self, vector: np.ndarray, n: int, filters: Filters
               ) -> dict[str, tuple[str, float]]:
        """paper_id -> (its nearest chunk, that chunk's similarity) (bench/tune_fusion.py)."""
        return nearest_papers(self.store, vector, n, filters.chroma_where())


def merge_results(first: SearchResult, second: SearchResult, k: int | None) -> SearchResult:
    """Two searches of one question (its multilingual vector, its translation) as one list:
    every paper either kept, the core first (a paper core in either search is core), each tier
    in the order of the better of its two probabilities (or scores)."""

    def rank(hit: Hit) -> tuple[bool, float, float]:
        # a paper of the translation's core that its second look folded (probability 0.9999,
        # tier tail) must not outrank the same paper in the multilingual search's core
        return hit.tier != "core", -hit.probability, -hit.score

    best: dict[str, Hit] = {}
    for hit in [*first.hits, *second.hits]:
        held = best.get(hit.paper.paper_id)
        if held is None or rank(hit) < rank(held):
            best[hit.paper.paper_id] = hit
    hits = sorted(best.values(), key=rank)
    return replace(first, hits=hits[:k] if k else hits,
                   considered=first.considered + second.considered)
