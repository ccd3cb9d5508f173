"""The papers kept, read: each hit's Paper record and the sentence of its abstract that best
matches the question (what a search shows and an extractive answer quotes)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragqa.index import lexical
from ragqa.index.lexical import LexicalIndex
from ragqa.retrieval.types import Hit
from ragqa.text import split_sentences


def read_papers(index: LexicalIndex, hits: list[Hit], query_terms: list[str] | None) -> None:
    """Attach each hit's Paper and, given the query's terms, its best sentence: of the
    whole abstract, which the snapshot holds (reading the best chunk's text from Chroma
    instead cost a `/api/search` at 38k papers half its CPU)."""
    rows = [h.index for h in hits]
    kept = (index.sentence_terms(rows) if query_terms is not None else [None] * len(rows))
    for hit, paper, sentence_terms in zip(hits, index.papers_by_index(rows), kept, strict=True):
        hit.paper = paper
        if query_terms is not None:
            hit.best_sentence = best_sentence(paper.text, set(query_terms), sentence_terms)


def best_sentence(text: str, query_terms: set[str],
                  sentence_terms: Sequence[list[str]] | None = None) -> str:
    """The sentence sharing the most (stemmed) words with the question; ties go to the earlier
    one. Falls back to the first sentence. `sentence_terms`: each sentence's terms, as the
    snapshot keeps them (`LexicalIndex.sentence_terms`), else they are worked out here."""
    sentences = split_sentences(text)
    if not sentences:
        return text
    if not query_terms:
        return sentences[0]
    if sentence_terms is None or len(sentence_terms) != len(sentences):
        sentence_terms = [lexical.terms(sentence) for sentence in sentences]
    scores = [len(query_terms.intersection(words)) / math.sqrt(len(words) + 5)
              for words in sentence_terms]
    best = int(np.argmax(scores))
    return sentences[best] if scores[best] > 0 else sentences[0]
