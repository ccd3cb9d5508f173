"""The query spaces: how a question is put to the collection. One pipeline searches every
question (Retriever._search: candidates -> signals -> decision); a query space says what differs
between an English question and one in another language.

- English: the MiniLM vectors of the question's topic and examples (question.understand), BM25
  on their content words, LIST_MODEL; a claim is one vector fused with BM25.
- Multilingual: the multilingual e5 vectors of the question and its topic, searched in the
  collection's multilingual sibling (z against that space's own background), BM25 on its
  Latin-script words and on the dictionaries' English for its Chinese ones, which the English
  space reads too (one more query vector); MULTILINGUAL_LIST_MODEL or CHINESE_LIST_MODEL.

Both take the pseudo-relevance feedback in the English space (candidates.feedback_round).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod

import numpy as np

from ragqa.models.glossary import english_words
from ragqa.retrieval.candidates import CandidatePool, Embedding, Probe
from ragqa.retrieval.fitted import (
    CHINESE_LIST_MODEL,
    CUT_FOR_CLAIMS,
    FEEDBACK_MIN,
    LIST_MODEL,
    MULTILINGUAL_CORE,
    MULTILINGUAL_LIST_MODEL,
    CutRule,
    RelevanceModel,
)
from ragqa.retrieval.question import (
    Understood,
    foreign_topic,
    is_foreign_list_question,
    is_list_question,
    latin_words,
    understand,
)

SENTENCE_TERMS = 8  # feedback words that choose a foreign question's best sentences


class QuerySpace(ABC):
    """A question as one query space searches it: what differs between the spaces, for the
    one pipeline (Retriever._search). The `english` embedding `probes` is given is the
    collection's own space, where the feedback round is taken for every question."""

    label = ""  # SearchResult.multilingual
    word_rules = True  # decide_list's rules on the question's words apply
    fuses_claims = True  # a claim's candidates: one query vector fused with BM25 (or the list's)
    widens_follow_ups = True  # a follow-up's claim keeps each paper that clears the rule alone
    sentence_feedback_words = 0  # feedback words that join the question's to choose sentences
    words: str  # what BM25 reads
    names_in: str  # where the rare names a claim is about are looked for (signals.named_terms)

    def __init__(self, question: str) -> None:
        self.question = question

    @abstractmethod
    def default_rule(self) -> CutRule | RelevanceModel:
        """The decision when the caller names none: the list model or the claims' cut."""

    @abstractmethod
    def probes(self, english: Embedding, n: int, where: dict | None) -> list[Probe]:
        """The question's query vectors with their nearest chunks, the main one first."""

    @abstractmethod
    def first_round_z(self, pool: CandidatePool, probes: list[Probe]) -> np.ndarray:
        """Each candidate's z that ranks the first round."""

    def min_core(self, papers: int) -> int:
        """First-round papers that make the feedback, at least (feedback_size decides above)."""
        return 0

    @abstractmethod
    def measure(self, pool: CandidatePool, probes: list[Probe], centre: Probe,
                core: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The final round's measures: papers x the question's query vectors (z), the z
        against the feedback `centre`, and the similarity a hit shows."""


class EnglishSpace(QuerySpace):
    """An English question (or a machine translation of one: `word_rules=False`, whose words
    are not the user's)."""

    def __init__(self, question: str, word_rules: bool = True) -> None:
        super().__init__(question)
        self.word_rules = word_rules

    @functools.cached_property
    def understood(self) -> Understood:
        return understand(self.question)

    @property
    def words(self) -> str:
        return self.understood.lexical

    @property
    def names_in(self) -> str:
        return self.question

    def default_rule(self) -> CutRule | RelevanceModel:
        return LIST_MODEL if is_list_question(self.question) else CUT_FOR_CLAIMS

    def probes(self, english: Embedding, n: int, where: dict | None) -> list[Probe]:
        queries = english.store.encoder.embed_queries(list(self.understood.subqueries))
        return [Probe.search(english, queries, n, where)]

    def first_round_z(self, pool: CandidatePool, probes: list[Probe]) -> np.ndarray:
        """The topic's z alone; its examples join in the final round."""
        return probes[0].head().measure(pool)[1][:, 0]

    def measure(self, pool: CandidatePool, probes: list[Probe], centre: Probe,
                core: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The centre is measured with the question's vectors, in one product: the floats
        LIST_MODEL was fitted on (a product of another shape rounds its sums otherwise). A hit
        shows the topic's similarity."""
        similarity, z = probes[0].joined(centre).measure(pool, core)
        return z[:, :-1], z[:, -1], similarity[:, 0]


class MultilingualSpace(QuerySpace):
    """A question in another language, searched with the collection's multilingual vectors.
    `dictionary`: read a Chinese question's words in English too (models/glossary.py); off
    only to measure what that brings (bench/multilingual/eval.py)."""

    label = "multilingual"
    word_rules = False  # its words are not English: the calibrated model alone decides
    fuses_claims = False  # a claim is decided on the list's candidates, by their fused score
    widens_follow_ups = False  # as it always was: a follow-up's claim keeps the rule's max_gap
    # A paper's best sentence is chosen by English words: the question's own and the
    # feedback's most telling ones (the question's other words are in no abstract).
    sentence_feedback_words = SENTENCE_TERMS

    def __init__(self, question: str, multilingual: Embedding, dictionary: bool = True) -> None:
        super().__init__(question)
        self.multilingual = multilingual
        self.dictionary = dictionary

    @functools.cached_property
    def glossed(self) -> str:
        """The dictionaries' English for the question's Chinese words ("" without)."""
        return english_words(foreign_topic(self.question)) if self.dictionary else ""

    @property
    def words(self) -> str:
        return " ".join(filter(None, (latin_words(self.question), self.glossed)))

    @property
    def names_in(self) -> str:
        return latin_words(self.question)  # "EGG相对于PyTorch …": EGG's paper

    def default_rule(self) -> CutRule | RelevanceModel:
        if not is_foreign_list_question(self.question):
            return CUT_FOR_CLAIMS
        return CHINESE_LIST_MODEL if self.glossed else MULTILINGUAL_LIST_MODEL

    def probes(self, english: Embedding, n: int, where: dict | None) -> list[Probe]:
        """The question and its topic in the multilingual space; with the dictionaries'
        English, that as one more vector in the English space."""
        topic = foreign_topic(self.question)
        asked = [self.question, topic] if topic != self.question.strip() else [self.question]
        encoder = self.multilingual.store.encoder
        probes = [Probe.search(self.multilingual, encoder.embed_queries(asked), n, where)]
        if self.glossed:
            vector = english.store.encoder.embed_queries([self.words])
            probes.append(Probe.search(english, vector, n, where))
        return probes

    def first_round_z(self, pool: CandidatePool, probes: list[Probe]) -> np.ndarray:
        """The best z over all the question's vectors."""
        return self._z(pool, probes).max(axis=1)

    def min_core(self, papers: int) -> int:
        """A wider core than English's in a large collection: the multilingual first round is
        noisier (one wrong paper in a core of two leads the English round astray); in a small
        one, six papers would be a fifth of it, far more than one topic."""
        return min(MULTILINGUAL_CORE, max(FEEDBACK_MIN, papers // 15))

    def measure(self, pool: CandidatePool, probes: list[Probe], centre: Probe,
                core: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The centre is measured apart. A hit shows the question's multilingual cosine to
        the paper's chunk 0 (a nearer chunk does not count here, as it always was)."""
        feedback_z = centre.measure(pool, core)[1][:, 0]
        similarity = self.multilingual.vectors_of(pool) @ probes[0].vectors[0]
        return self._z(pool, probes), feedback_z, similarity

    @staticmethod
    def _z(pool: CandidatePool, probes: list[Probe]) -> np.ndarray:
        return np.hstack([probe.measure(pool)[1] for probe in probes])
