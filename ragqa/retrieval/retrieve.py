"""Question -> the papers that matter: dense (Chroma) + lexical (BM25), fused by scaled scores,
aggregated to papers, then cut where relevance ends.

The relevance cut (see `relevance_cut`) keeps every paper that is plausibly about the question,
not a fixed top-k, so that "which papers ..." gets all of them and an off-topic question none.
Its thresholds were calibrated on data: bench/calibrate_cut.py prints the figures.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ragqa.index import lexical
from ragqa.index.store import Store, local_dir
from ragqa.models.glossary import english_words
from ragqa.resources import DATA_DIR
from ragqa.retrieval.fitted import (  # noqa: F401  (callers import them from here until they move)
    CHINESE_LIST_MODEL,
    CUT_FOR_CLAIMS,
    DENSE_WEIGHT,
    EXPANSION_SHARE,
    EXPANSION_TERMS,
    FEEDBACK_BM25_WEIGHT,
    FEEDBACK_MIN,
    FEEDBACK_PAPERS,
    FEEDBACK_Z,
    LIST_MODEL,
    MULTILINGUAL_CORE,
    MULTILINGUAL_LIST_MODEL,
    CutRule,
    RelevanceModel,
    question_signals,
)
from ragqa.retrieval.question import (
    described_paper,
    foreign_topic,
    is_foreign_list_question,
    is_list_question,
    latin_words,
    topic_of,
    understand,
)
from ragqa.retrieval.sentences import best_sentence
from ragqa.retrieval.types import Filters, Hit, SearchResult

if TYPE_CHECKING:
    from ragqa.index.lexical import LexicalIndex

# A question that names a system ("What does CEITNet propose?", "How fast is EGG?") asks about
# the papers that name it, however far the rest of its wording is from theirs: a name-like word
# (two capitals, or letters with digits or a Greek letter: CEITNet, EGG, GPT-5, τ-Voice) that at
# most NAMED_PAPERS papers hold (and at most a tenth of a small collection) keeps those papers.
NAMED_PAPERS = 5
_NAME_LIKE = re.compile(r"^(?:.*[A-Z].*[A-Z].*|.*[A-Za-z].*\d.*|.*\d.*[A-Za-z].*|.*[α-ωΑ-Ω].*)$")


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


def feedback_size(first_round: np.ndarray) -> int:
    """How many first-round papers make the core: those that stand out (FEEDBACK_Z), at least
    FEEDBACK_MIN and at most FEEDBACK_PAPERS (a broad topic has many, a narrow one a few)."""
    strong = int((first_round >= FEEDBACK_Z).sum())
    return int(min(FEEDBACK_PAPERS, max(FEEDBACK_MIN, strong)))


def _within(positions: list[list[int]], window: int) -> bool:
    """Whether one position from each list lies within `window` of the first list's."""
    if not positions or any(not p for p in positions):
        return False
    return any(all(any(abs(j - i) <= window for j in p) for p in positions[1:])
               for i in positions[0])


def _leave_one_out(vectors: np.ndarray) -> np.ndarray:
    """Each vector's cosine to the centre of the others. A core paper is measured so against
    the feedback centre: it is always close to a centre it is part of, and with two core papers
    that would vouch for a wrong second one. One vector alone keeps its own similarity, 1."""
    if len(vectors) < 2:
        return np.ones(len(vectors))
    others = vectors.sum(axis=0) - vectors
    norms = np.maximum(np.linalg.norm(others, axis=1), 1e-9)
    return np.einsum("ij,ij->i", vectors, others) / norms


# A list topic of at most this many content words lists nothing when one of its words is used by
# no paper (Retriever.names_unknown_subject: "protein structure design" over molecule papers).
KEY_TERM_TOPIC_WORDS = 3
REFERENCE_DIR = DATA_DIR
# A collection of this many papers counts half, the reference half, in the list decision's
# background (ragqa.retrieval.retrieve.Retriever._list_z).
REFERENCE_PAPERS = 200
# Multilingual vectors sampled for that space's background (ragqa.retrieval.retrieve.Retriever).
MULTILINGUAL_BACKGROUND = 2000
SENTENCE_TERMS = 8  # feedback words that choose a foreign question's best sentences


class Retriever:
    """Search over one collection. Opening it loads the BM25 snapshot once; keep it around for
    many queries (the batch mode and the benchmarks do)."""

    def __init__(self, store: Store) -> None:
        from ragqa.index.ingest import collection_lock, sync_lexical

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
        self._multilingual: tuple[Store, np.ndarray | None] | None = None
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

    def multilingual_side(self) -> tuple[Store, np.ndarray | None] | None:
        """The sibling collection of multilingual vectors and its background sample, or None
        when the collection keeps none (opened, and its model loaded, on first use)."""
        if self._multilingual is None:
            embedder = self.store.multilingual_embedder() if self.store.exists() else ""
            if not embedder:
                return None
            from ragqa.models.encoders import make_multilingual_encoder

            encoder = make_multilingual_encoder(self.store.settings)
            side = self.store.multilingual_store(encoder)
            if not side.exists() or not side.count():
                return None
            side.collection()  # refuses a sibling another multilingual model built
            pids = self.lexical.paper_ids_by_index(range(self.total_papers)) \
                if self.lexical else []
            background = side.sample_vectors(pids, MULTILINGUAL_BACKGROUND) if pids else None
            self._multilingual = (side, background)
        return self._multilingual

    def search_foreign(self, question: str, k: int | None = None,
                       filters: Filters | None = None, cut: bool = True,
                       sentences: bool = True, translation: str | None = None,
                       rule: CutRule | RelevanceModel | None = None) -> SearchResult:
        """A question in another language. With the collection's multilingual vectors: the
        dense side searches them with the question itself, BM25 its Latin-script words; with a
        `translation` (an LLM's), that is searched as an English question too and the two
        lists are merged. Without multilingual vectors: the translation, else the question as
        it is (the English model ranks it poorly); `multilingual` says which."""
        side = self.multilingual_side()
        if side is None:
            result = self.search(translation or question, k, filters, cut, sentences,
                                 word_rules=translation is None)
            result.multilingual = "english+translation" if translation else "english"
            return result
        result = self._search_multilingual(question, side, k, filters, cut, sentences, rule)
        if translation:
            english = self.search(translation, k, filters, cut, sentences, word_rules=False)
            result = merge_results(result, english, k)
            result.multilingual = "translated+multilingual"
        return result

    def _search_multilingual(self, question: str, side: tuple[Store, np.ndarray | None],
                             k: int | None, filters: Filters | None, cut: bool,
                             sentences: bool, rule: CutRule | RelevanceModel | None
                             ) -> SearchResult:
        filters = filters or Filters()
        if not self.lexical or not self.lexical.size:
            return SearchResult(question, [], 0, filters=filters.as_dict(),
                                multilingual="multilingual")
        glossed = english_words(foreign_topic(question)) if self.dictionary else ""
        rule = rule or ((CHINESE_LIST_MODEL if glossed else MULTILINGUAL_LIST_MODEL)
                        if is_foreign_list_question(question) else CUT_FOR_CLAIMS)
        n = max(self.store.settings.candidates, k or 0)
        allowed = (self.lexical.indices_matching(filters.venue, filters.year, filters.paper_ids,
                                                 filters.category)
                   if filters else None)
        hits, query_terms = self._multilingual_candidates(question, glossed, side, n, filters,
                                                          allowed)
        considered = len(hits)
        if isinstance(rule, RelevanceModel):
            hits = rule.keep(hits) if cut else rule.rank(hits)
        else:
            hits.sort(key=lambda h: -h.score)
            self._mark_named(hits, latin_words(question))  # "EGG相对于PyTorch …": EGG's paper
            if cut:
                hits = relevance_cut(hits, rule)
        if k:
            hits = hits[:k]
        self._read_papers(hits, query_terms if sentences else None)
        return SearchResult(question, hits, self.total_papers, considered, cut,
                            filters.as_dict(), multilingual="multilingual")

    def _multilingual_candidates(self, question: str, glossed: str,
                                 side: tuple[Store, np.ndarray | None],
                                 n: int, filters: Filters, allowed: np.ndarray | None
                                 ) -> tuple[list[Hit], list[str]]:
        """The candidates of a question in another language, with the list decision's signals
        (as `_list_candidates`). The first round is the multilingual one: the question's
        multilingual vector against the papers' (z against that space's background) and BM25
        on its Latin-script words and on `glossed`, the dictionaries' English for its Chinese
        ones, which the English embedder reads too (one more query vector, z in its space).
        Its best papers are then the feedback, in the English space:
        their centre among the MiniLM vectors and their words added to BM25 (RM3), so that the
        second round searches as an English question that found those papers would."""
        assert self.lexical is not None
        multi, background = side
        topic = foreign_topic(question)
        asked = [question, topic] if topic != question.strip() else [question]
        query = multi.encoder.embed_queries(asked)
        where = filters.chroma_where()
        nearest = multi.query_many(query, n * 2, where)
        # BM25 reads the question's Latin-script words and the dictionary's English for the rest
        latin = " ".join(filter(None, (latin_words(question), glossed)))
        # ... and the English embedder reads them too, as one more query vector
        english = self.store.encoder.embed_queries([latin]) if glossed else None
        english_nearest = self.store.query_many(english, n * 2, where) if glossed else []
        query_terms = self.lexical.query_terms(latin, extend=True) if latin else []
        bm25 = np.zeros(self.lexical.size, dtype=np.float32)
        for index, score in (self.lexical.search(latin, n, allowed, extend=True)
                             if latin else []):
            bm25[index] = score
        pool = _CandidatePool(self.lexical, self.paper_vectors)
        pool.add_nearest(nearest)
        pool.add_nearest(english_nearest)
        pool.add_rows(np.flatnonzero(bm25))
        if not pool.rows:
            return [], query_terms
        centre_m, spread_m = _background_of(background, query)
        ideal = sum(self.lexical.idf(sorted(set(query_terms))).values()) or 1.0

        def multilingual_z() -> np.ndarray:
            """Papers x query vectors: z in the multilingual space."""
            similarity = multi.paper_vectors(pool.pids) @ query.T
            for j, found in enumerate(nearest):
                for _, pid, sim in found:
                    r = pool._row_of.get(pid)
                    if r is not None and sim > similarity[r, j]:
                        similarity[r, j] = sim
            z = self._against_reference(similarity, query, centre_m, spread_m,
                                        multi.encoder.embedder_id)
            if english is not None:  # the dictionary's English, in the English space
                z = np.hstack([z, self._list_z(pool.similarity(english, english_nearest),
                                               english)])
            return z

        first_round = multilingual_z().max(axis=1) + FEEDBACK_BM25_WEIGHT * bm25[pool.rows] / ideal
        # A wider core than English's in a large collection: the multilingual first round is
        # noisier (one wrong paper in a core of two leads the English round astray); in a small
        # one, six papers would be a fifth of it, far more than one topic.
        wide = min(MULTILINGUAL_CORE, max(FEEDBACK_MIN, self.total_papers // 15))
        core = np.argsort(-first_round)[:max(wide, feedback_size(first_round))]
        centre, expanded_weights, expanded, second = self._feedback_round(
            pool, core, query_terms, allowed, where, n)

        z_all = multilingual_z()
        z_m, z_best = z_all[:, 0], z_all.max(axis=1)
        feedback = pool.similarity(centre[None, :], second)
        feedback[core, 0] = _leave_one_out(pool.vectors[core])
        z_feedback = self._list_z(feedback, centre[None, :])[:, 0]
        coverage = (self.lexical.coverage(query_terms, pool.rows).astype(np.float64)
                    if query_terms else np.zeros(len(pool.rows)))
        expanded_idf = self.lexical.idf(list(expanded_weights))
        expanded_ideal = sum(w * expanded_idf[t] for t, w in expanded_weights.items())
        signals = {"z": z_m, "z_best": z_best, "z_feedback": z_feedback, "coverage": coverage,
                   "bm25_share": bm25[pool.rows] / ideal,
                   "bm25_expanded": expanded[pool.rows] / (expanded_ideal or 1.0)}
        for name in ("z", "z_feedback", "bm25_expanded"):
            signals[f"{name}_relative"] = signals[name] - float(signals[name][core].mean())
        # The fused score orders a fact question's candidates (CutRule): z and BM25 alike.
        fused = min_max(list(z_best + FEEDBACK_BM25_WEIGHT * bm25[pool.rows] / ideal))
        similarity = multi.paper_vectors(pool.pids) @ query[0]
        hits = [Hit(index, fused[r], float(similarity[r]), float(bm25[index]),
                    chunk_id=pool.best_chunk.get(pool.pids[r], ""), z=float(z_m[r]),
                    coverage=float(coverage[r]),
                    signals={k: float(v[r]) for k, v in signals.items()})
                for r, index in enumerate(pool.rows)]
        # A paper's best sentence is chosen by English words: the question's own and the
        # feedback's most telling ones (the question's other words are in no abstract).
        telling = sorted(expanded_weights, key=lambda t: -expanded_weights[t])[:SENTENCE_TERMS]
        return hits, list(dict.fromkeys([*query_terms, *telling]))

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
        filters = filters or Filters()
        if not self.lexical or not self.lexical.size:
            return SearchResult(query, [], 0, filters=filters.as_dict())
        rule = rule or (LIST_MODEL if is_list_question(query) else CUT_FOR_CLAIMS)
        n = max(self.store.settings.candidates, k or 0)
        allowed = (self.lexical.indices_matching(filters.venue, filters.year, filters.paper_ids,
                                                 filters.category)
                   if filters else None)
        if isinstance(rule, RelevanceModel):
            hits, query_terms = self._list_candidates(query, n, filters, allowed)
            considered = len(hits)
            hits = self.decide_list(query, hits, rule, word_rules) if cut else rule.rank(hits)
        else:
            vector = self.store.encoder.embed_queries([topic_of(query)])[0]
            words = described_paper(query) or query
            query_terms = self.lexical.query_terms(words)
            hits = self._fuse(self._dense(vector, n, filters),
                              self.lexical.search(words, n, allowed))
            considered = len(hits)
            self._score_relevance(hits, vector, query_terms)
            self._mark_named(hits, query)
            if cut:
                if filters.paper_ids:
                    # A follow-up among papers already found ("which of them ..."): each one
                    # that clears the rule on its own answers it, however far the best leads.
                    rule = replace(rule, max_gap=math.inf)
                hits = relevance_cut(hits, rule)
        if k:
            hits = hits[:k]
        self._read_papers(hits, query_terms if sentences else None)
        return SearchResult(query, hits, self.total_papers, considered, cut, filters.as_dict())

    def _read_papers(self, hits: list[Hit], query_terms: list[str] | None) -> None:
        """Attach each hit's Paper and, given the query's terms, its best sentence: of the
        whole abstract, which the snapshot holds (reading the best chunk's text from Chroma
        instead cost a `/api/search` at 38k papers half its CPU)."""
        assert self.lexical is not None
        rows = [h.index for h in hits]
        kept = (self.lexical.sentence_terms(rows) if query_terms is not None
                else [None] * len(rows))
        for hit, paper, sentence_terms in zip(hits, self.lexical.papers_by_index(rows), kept,
                                              strict=True):
            hit.paper = paper
            if query_terms is not None:
                hit.best_sentence = best_sentence(paper.text, set(query_terms), sentence_terms)

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

    def _list_candidates(self, query: str, n: int, filters: Filters,
                         allowed: np.ndarray | None) -> tuple[list[Hit], list[str]]:
        """The candidates of a "which papers" question with the RelevanceModel's signals.

        The question is taken apart (question.py): the topic and each of its examples are
        searched as sub-queries, BM25 reads the content words. Users describe a topic in their
        own words, which the papers rarely share, so a second round searches again from the
        first round's best papers (pseudo-relevance feedback): their centre in the embedding
        space, and their most telling words added to the BM25 query (RM3). Every candidate's
        similarity to every query vector is computed from its vector and measured as a z
        against a background (`_list_z`), so that the signals mean the same for any question."""
        assert self.lexical is not None
        understood = understand(query)
        queries = self.store.encoder.embed_queries(list(understood.subqueries))
        query_terms = self.lexical.query_terms(understood.lexical, extend=True)
        where = filters.chroma_where()
        nearest = self.store.query_many(queries, n * 2, where)
        bm25 = np.zeros(self.lexical.size, dtype=np.float32)
        for index, score in self.lexical.search(understood.lexical, n, allowed, extend=True):
            bm25[index] = score
        pool = _CandidatePool(self.lexical, self.paper_vectors)
        pool.add_nearest(nearest)
        pool.add_rows(np.flatnonzero(bm25))
        if not pool.rows:
            return [], query_terms
        ideal = sum(self.lexical.idf(sorted(set(query_terms))).values()) or 1.0
        first_round = self._list_z(pool.similarity(queries[:1], nearest[:1]), queries[:1])[:, 0] \
            + FEEDBACK_BM25_WEIGHT * bm25[pool.rows] / ideal
        # The first round's best papers: the core of what the question found.
        core = np.argsort(-first_round)[:feedback_size(first_round)]
        centre, expanded_weights, expanded, second = self._feedback_round(
            pool, core, query_terms, allowed, where, n)

        vectors = np.vstack([queries, centre])
        similarity = pool.similarity(vectors, [*nearest, *second])
        similarity[core, -1] = _leave_one_out(pool.vectors[core])
        z = self._list_z(similarity, vectors)
        coverage = self.lexical.coverage(query_terms, pool.rows).astype(np.float64)
        expanded_idf = self.lexical.idf(list(expanded_weights))
        expanded_ideal = sum(w * expanded_idf[t] for t, w in expanded_weights.items())
        signals = {"z": z[:, 0], "z_best": z[:, :-1].max(axis=1), "z_feedback": z[:, -1],
                   "coverage": coverage, "bm25_share": bm25[pool.rows] / ideal,
                   "bm25_expanded": expanded[pool.rows] / (expanded_ideal or 1.0)}
        for name in ("z", "z_feedback", "bm25_expanded"):
            signals[f"{name}_relative"] = signals[name] - float(signals[name][core].mean())
        hits = [Hit(index, 0.0, float(similarity[r, 0]), float(bm25[index]),
                    chunk_id=pool.best_chunk.get(pool.pids[r], ""), z=float(z[r, 0]),
                    coverage=float(coverage[r]),
                    signals={k: float(v[r]) for k, v in signals.items()})
                for r, index in enumerate(pool.rows)]
        return hits, query_terms

    def decide_list(self, query: str, hits: list[Hit], model: RelevanceModel,
                    word_rules: bool = True) -> list[Hit]:
        """The list for a "which papers" question from its candidates: the calibrated model's,
        less a near miss (names_unknown_subject), plus the papers that state a short topic
        word for word when the model's gate finds the topic absent. The gate judges a topic by
        its best three papers (absent topics still have near papers); a topic one paper of the
        collection holds ("greenhouse tomato irrigation") has no three. `word_rules=False`
        (a machine translation: its words are not the user's) leaves the model alone."""
        if word_rules and self.names_unknown_subject(query):
            return []
        kept = model.keep(hits)
        if kept or not word_rules:
            return kept
        return [h for h in hits if h.probability >= model.threshold
                and self._states_short_topic(query, h.index)]

    def _states_short_topic(self, query: str, index: int) -> bool:
        """Whether the paper states a short part of the question (at most KEY_TERM_TOPIC_WORDS
        words: the topic, an alternative, an example): every word of it within a few words of
        one another ("irrigation scheduling for greenhouse tomato crops"); a part of one word,
        twice (a paper about tomatoes says so more than in passing, "like in a sports
        tournament")."""
        assert self.lexical is not None
        paper = self.lexical.papers_by_index([index])[0]
        positions: dict[str, list[int]] = {}
        for i, term in enumerate(lexical.terms(lexical.paper_document(paper))):
            positions.setdefault(term, []).append(i)
        for sub in understand(query).subqueries:
            groups = self._term_groups(sub)
            found = [sorted(i for t in g for i in positions.get(t, [])) for g in groups]
            if len(groups) == 1 and len(found[0]) >= 2:
                return True
            if 1 < len(groups) <= KEY_TERM_TOPIC_WORDS and _within(found, len(groups) + 2):
                return True
        return False

    def names_unknown_subject(self, query: str) -> bool:
        """Whether a "which papers" question names a subject that no paper of the collection
        mentions: a near miss, however close the papers it finds.

        "Protein structure design" finds the molecule papers, close in the embedding space and
        sharing "structure" and "design"; but no paper says "protein". In a part of the question
        of at most KEY_TERM_TOPIC_WORDS words (the topic, an "or" alternative, an example) every
        word counts, so a word that no paper uses (nor a word that extends it: "molecules" ->
        "molecular") means that part is not there. A near miss is a question whose every short
        part names such a word (and whose topic does, when it is described at length). A topic
        described in more words alone ("training spread over many machines") is the user's own
        wording, which papers rarely share: the calibrated decision alone decides. On the judged
        dev sets this flags three of the twenty absent topics and none of the 64 real ones."""
        assert self.lexical is not None
        parts = [self._term_groups(sub) for sub in understand(query).subqueries]
        short = [groups for groups in parts if 0 < len(groups) <= KEY_TERM_TOPIC_WORDS]
        if not short or not self._names_unknown_word(parts[0]):
            return False
        return all(self._names_unknown_word(groups) for groups in short)

    def _names_unknown_word(self, groups: list[list[str]]) -> bool:
        assert self.lexical is not None
        return any(all(self.lexical.document_frequency(t) == 0 for t in group)
                   for group in groups)

    def _term_groups(self, text: str) -> list[list[str]]:
        """The distinct content words of `text`, each as the collection's words for it (itself,
        or the words that extend a stem no paper uses)."""
        assert self.lexical is not None
        groups: dict[str, list[str]] = {}
        for term in lexical.terms(text, query=True):
            groups.setdefault(term, self.lexical.query_terms(term, extend=True) or [term])
        return list(groups.values())

    def _feedback_round(self, pool: _CandidatePool, core: np.ndarray, query_terms: list[str],
                        allowed: np.ndarray | None, where: dict | None, n: int):
        """The second round of a list question, from the first round's core papers: their
        centre among the English vectors searched, and the query expanded from their words
        (RM3) scored by BM25; both add their best papers to the pool. Returns the centre, the
        expanded query's weights, its BM25 scores and the centre's nearest chunks."""
        assert self.lexical is not None
        centre = pool.vectors[core].mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-9)
        expanded_weights = self._expanded_query(query_terms, [pool.rows[i] for i in core])
        expanded = self.lexical.weighted_scores(expanded_weights, allowed)
        second = self.store.query_many(centre[None, :], n * 2, where)
        pool.add_nearest(second)
        best_expanded = np.argsort(-expanded)[:n]
        pool.add_rows(best_expanded[expanded[best_expanded] > 0])
        return centre, expanded_weights, expanded, second

    def _expanded_query(self, query_terms: list[str], feedback: list[int]) -> dict[str, float]:
        """The question's words and EXPANSION_TERMS words of the feedback papers (RM3), the
        latter weighing EXPANSION_SHARE of the query."""
        assert self.lexical is not None
        weights = {t: (1 - EXPANSION_SHARE) / len(query_terms) for t in query_terms}
        share = EXPANSION_SHARE if query_terms else 1.0
        for term, weight in self.lexical.expansion_terms(feedback, EXPANSION_TERMS).items():
            weights[term] = weights.get(term, 0.0) + share * weight
        return weights

    def _list_z(self, similarity: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """z for the list decision. The background is the collection's own, shrunk towards the
        shipped reference of ML abstracts as the collection gets small: in 29 papers of which
        ten are on audio, an audio paper is typical of the collection but not of ML papers, and
        the decision should mean the same at 29 papers as at 30,000. Embedders without a
        reference use the collection's background alone."""
        centre, spread = self._background(queries)
        return self._against_reference(similarity, queries, centre, spread,
                                       getattr(self.store.encoder, "embedder_id", ""))

    def _against_reference(self, similarity: np.ndarray, queries: np.ndarray,
                           centre: np.ndarray, spread: np.ndarray, embedder_id: str
                           ) -> np.ndarray:
        """z of `similarity` against the collection's background (centre, spread per query),
        shrunk towards the embedder's shipped reference as the collection gets small."""
        reference = reference_background(embedder_id)
        if reference is not None:
            mean, covariance = reference
            weight = self.total_papers / (self.total_papers + REFERENCE_PAPERS)
            quadratic = np.einsum("ij,jk,ik->i", queries, covariance, queries)
            centre = weight * centre + (1 - weight) * (queries @ mean)
            spread = weight * spread + (1 - weight) * np.sqrt(np.maximum(quadratic, 0.0))
        return (similarity - centre) / np.maximum(spread, 0.02)

    def _background(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query vector: the median similarity of the collection's papers and its robust
        standard deviation (from the background sample of the snapshot)."""
        assert self.lexical is not None
        background = self.lexical.background
        if background is not None and len(background) >= 5:
            sims = background @ queries.T
            centre = np.median(sims, axis=0)
            return centre, np.maximum(1.4826 * np.median(np.abs(sims - centre), axis=0), 0.02)
        # too few papers to tell: plain cosine, scaled so z 2.5 means a cosine of 0.5
        return np.zeros(queries.shape[0]), np.full(queries.shape[0], 0.2)

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

    def _mark_named(self, hits: list[Hit], query: str) -> None:
        """Mark the hits that hold a rare name the question uses (see NAMED_PAPERS): every
        word of it ("NS-VQA" is "ns" and "vqa")."""
        assert self.lexical is not None
        rows = [h.index for h in hits]
        for name in named_terms(query, self.lexical) if hits else []:
            for hit, share in zip(hits, self.lexical.coverage(name, rows), strict=True):
                hit.named = hit.named or bool(share > 0.999)

    def _score_relevance(self, hits: list[Hit], vector: np.ndarray, terms: list[str]) -> None:
        assert self.lexical is not None
        centres, spreads = self._background(vector[None, :])
        centre, spread = float(centres[0]), float(spreads[0])
        coverage = self.lexical.coverage(terms, [h.index for h in hits])
        for hit, covered in zip(hits, coverage, strict=True):
            hit.z = (hit.similarity - centre) / spread
            hit.coverage = float(covered)


class _CandidatePool:
    """The papers found so far for one question: their rows in the lexical snapshot, ids,
    chunk-0 vectors and best chunks (what the list decision's signals are computed from)."""

    def __init__(self, lexical_index: LexicalIndex,
                 vectors_of: Callable[[Sequence[int]], np.ndarray]) -> None:
        self._lexical = lexical_index
        self._vectors_of = vectors_of  # Retriever.paper_vectors
        self.rows: list[int] = []
        self.pids: list[str] = []
        self.best_chunk: dict[str, str] = {}
        self._row_of: dict[str, int] = {}
        self.vectors = np.zeros((0, 0), dtype=np.float32)

    def add_nearest(self, results: list[list[tuple[str, str, float]]]) -> None:
        """Papers of Chroma results (the first result's nearest chunk is a paper's best)."""
        for chunk_id, pid, _ in (results[0] if results else []):
            self.best_chunk.setdefault(pid, chunk_id)
        rows = (self._lexical.index_of(pid) for found in results for _, pid, _ in found)
        self.add_rows([r for r in rows if r is not None])

    def add_rows(self, rows: Iterable[int]) -> None:
        candidates = list(dict.fromkeys(int(r) for r in rows))
        known = self._lexical.paper_ids_by_index(candidates)
        fresh = [(r, pid) for r, pid in zip(candidates, known, strict=True)
                 if pid not in self._row_of]
        if not fresh:
            return
        new, pids = [r for r, _ in fresh], [pid for _, pid in fresh]
        vectors = self._vectors_of(new)
        for pid in pids:
            self._row_of[pid] = len(self.pids)
            self.pids.append(pid)
        self.rows.extend(new)
        self.vectors = vectors if not len(self.vectors) else np.vstack([self.vectors, vectors])

    def similarity(self, queries: np.ndarray, results: list[list[tuple[str, str, float]]]
                   ) -> np.ndarray:
        """Papers x queries: cosine to chunk 0, or to a nearer chunk that Chroma returned."""
        out = self.vectors @ queries.T
        for j, found in enumerate(results):
            for _, pid, sim in found:
                r = self._row_of.get(pid)
                if r is not None and sim > out[r, j]:
                    out[r, j] = sim
        return out


def _background_of(background: np.ndarray | None, queries: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per query vector: the median similarity of a background sample and its robust spread
    (plain cosine scaled so z 2.5 is 0.5 when there are too few papers to tell)."""
    if background is None or len(background) < 5:
        return np.zeros(len(queries)), np.full(len(queries), 0.2)
    sims = background @ queries.T
    centre = np.median(sims, axis=0)
    return centre, np.maximum(1.4826 * np.median(np.abs(sims - centre), axis=0), 0.02)


def merge_results(first: SearchResult, second: SearchResult, k: int | None) -> SearchResult:
    """Two searches of one question (its multilingual vector, its translation) as one list:
    every paper either kept, in the order of the better of its two probabilities (or scores)."""
    best: dict[str, Hit] = {}
    for hit in [*first.hits, *second.hits]:
        held = best.get(hit.paper.paper_id)
        if held is None or (hit.probability, hit.score) > (held.probability, held.score):
            best[hit.paper.paper_id] = hit
    hits = sorted(best.values(), key=lambda h: (-h.probability, -h.score))
    return replace(first, hits=hits[:k] if k else hits,
                   considered=first.considered + second.considered)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores scaled to 0 (the lowest) .. 1 (the highest); all 1 when they are all equal."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [(score - low) / (high - low) if high > low else 1.0 for score in scores]


def keep_decisions(z: Sequence[float], coverage: Sequence[float], rule: CutRule,
                   named: Sequence[bool] | None = None) -> list[bool]:
    """The cut's rule on its two signals (bench/calibrate_cut.py searches its parameters); a
    paper holding a rare name the question uses (`named`) is kept whatever its signals, and
    the others are measured against the best of the rest."""
    named = list(named) if named is not None else [False] * len(z)
    if rule.gate is not None and not any(keep_decisions(z, coverage, rule.gate)) \
            and not any(named):
        return [False] * len(z)
    best = max((zi for zi, ni in zip(z, named, strict=True) if not ni), default=0.0)
    strong = best >= rule.z_strong
    return [ni or ((zi >= rule.z_strong or (zi >= rule.z_weak and ci >= rule.coverage)
                    or (strong and rule.near_best > 0
                        and zi >= max(rule.z_weak, best - rule.near_best)))
                   and zi >= best - rule.max_gap)
            for zi, ci, ni in zip(z, coverage, named, strict=True)]


def relevance_cut(hits: list[Hit], rule: CutRule) -> list[Hit]:
    """Keep the papers that are about the question: none when nothing stands out. The papers
    that hold a name the question uses come first."""
    keep = keep_decisions([h.z for h in hits], [h.coverage for h in hits], rule,
                          [h.named for h in hits])
    kept = [h for h, k in zip(hits, keep, strict=True) if k]
    return sorted(kept, key=lambda h: not h.named)


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


