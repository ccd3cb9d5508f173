"""The BM25 index as arrays that can be edited: every paper's term counts (one sparse row per
paper), and bm25s's score matrix computed from them in numpy.

Why not `bm25s.BM25.index`: it rebuilds from token lists in Python loops (3.3 s at 37,932
papers, bench/scaling.py), and a reader that follows a shared Chroma server must take in one new
paper in well under that. Here removing or adding rows is array slicing, and the scores of the
whole collection take ~0.3 s. The scores are bm25s's own (method "lucene", k1 1.2, b 0.75;
tests/test_follow.py compares them with `bm25s.BM25.index`), saved in its format, so searching
is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

K1, B = 1.2, 0.75
COUNTS = "terms.npz"  # beside bm25s's files in a snapshot
VOCABULARY = "terms.json"


@dataclass
class TermMatrix:
    """Term counts: row r holds paper r's terms (ids into `vocabulary`) and how often each
    occurs, CSR style (`indptr` of len rows + 1)."""

    indptr: np.ndarray  # int64
    term_ids: np.ndarray  # int32
    counts: np.ndarray  # int32
    vocabulary: list[str]

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    @classmethod
    def from_documents(cls, documents: Sequence[Sequence[str]],
                       vocabulary: list[str] | None = None) -> TermMatrix:
        """The counts of these documents (lists of terms); `vocabulary` is extended in place
        with terms it lacks (so that rows appended to a matrix share its ids)."""
        vocabulary = [] if vocabulary is None else vocabulary
        ids = {term: i for i, term in enumerate(vocabulary)}
        indptr = np.zeros(len(documents) + 1, dtype=np.int64)
        term_ids: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        for row, document in enumerate(documents):
            tokens = np.fromiter((ids.setdefault(t, len(ids)) for t in document), dtype=np.int32,
                                 count=len(document))
            unique, count = np.unique(tokens, return_counts=True)
            term_ids.append(unique.astype(np.int32))
            counts.append(count.astype(np.int32))
            indptr[row + 1] = indptr[row] + len(unique)
        vocabulary.extend(t for t, _ in sorted(ids.items(), key=lambda kv: kv[1])[
            len(vocabulary):])
        return cls(indptr, _concat(term_ids, np.int32), _concat(counts, np.int32), vocabulary)

    def take(self, rows: np.ndarray) -> TermMatrix:
        """These rows, in this order."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        # Each kept entry's position in the old arrays: its row's start plus its offset within.
        positions = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return TermMatrix(indptr, self.term_ids[positions], self.counts[positions],
                          self.vocabulary)

    def append(self, documents: Sequence[Sequence[str]]) -> TermMatrix:
        """These rows followed by the documents' rows."""
        vocabulary = list(self.vocabulary)
        extra = TermMatrix.from_documents(documents, vocabulary)
        return TermMatrix(np.concatenate([self.indptr, extra.indptr[1:] + self.indptr[-1]]),
                          np.concatenate([self.term_ids, extra.term_ids]),
                          np.concatenate([self.counts, extra.counts]), vocabulary)

    def compacted(self) -> TermMatrix:
        """Without the terms no row uses any more (papers removed): an unused word must not
        look like a word of the collection."""
        used = np.zeros(len(self.vocabulary), dtype=bool)
        used[self.term_ids] = True
        if used.all():
            return self
        new_id = np.cumsum(used, dtype=np.int64) - 1
        vocabulary = [t for t, keep in zip(self.vocabulary, used, strict=True) if keep]
        return TermMatrix(self.indptr, new_id[self.term_ids].astype(np.int32), self.counts,
                          vocabulary)

    # ------------------------------------------------------------ files

    def save(self, folder: Path) -> None:
        """Into a snapshot's temporary folder: lexical._new_snapshot makes it durable and
        current at once, or removes it (a full disk)."""
        np.savez(folder / COUNTS, indptr=self.indptr, term_ids=self.term_ids,
                 counts=self.counts)
        (folder / VOCABULARY).write_text(json.dumps(self.vocabulary, ensure_ascii=False),
                                         encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> TermMatrix | None:
        """The counts a snapshot keeps; None for a snapshot written before it kept them."""
        if not (folder / COUNTS).is_file():
            return None
        with np.load(folder / COUNTS) as arrays:
            indptr, term_ids, counts = arrays["indptr"], arrays["term_ids"], arrays["counts"]
        vocabulary = json.loads((folder / VOCABULARY).read_text(encoding="utf-8"))
        return cls(indptr, term_ids, counts, vocabulary)

    # ------------------------------------------------------------ scores

    def bm25(self):
        """A `bm25s.BM25` whose score matrix is this one's, as `bm25s.BM25.index` computes it
        for the same documents (method "lucene")."""
        import bm25s

        retriever = bm25s.BM25(k1=K1, b=B)
        n_docs, n_terms = self.rows, len(self.vocabulary)
        rows = np.repeat(np.arange(n_docs, dtype=np.int32), np.diff(self.indptr))
        doc_len = np.bincount(rows, weights=self.counts, minlength=n_docs).astype(np.float32)
        avg_len = float(doc_len.mean()) if n_docs else 0.0
        df = np.bincount(self.term_ids, minlength=n_terms)
        idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        tf = self.counts.astype(np.float32)
        norm = K1 * ((1 - B) + B * doc_len[rows] / np.float32(avg_len or 1.0))
        scores = (idf[self.term_ids] * (tf / (norm + tf))).astype(np.float32)
        # Column-major (by term), documents ascending within a term: bm25s's layout. Entries
        # are in row order already, so a stable sort by term keeps the rows ascending.
        order = np.argsort(self.term_ids, kind="stable")
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        retriever.scores = {"data": scores[order], "indices": rows[order],
                            "indptr": indptr, "num_docs": n_docs}
        vocab = {term: i for i, term in enumerate(self.vocabulary)}
        vocab.setdefault("", len(vocab))  # as bm25s adds for documents given as strings
        retriever.vocab_dict = vocab
        retriever.unique_token_ids_set = set(vocab.values())
        retriever.nonoccurrence_array = None  # only BM25L and BM25+ have one
        return retriever


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)
