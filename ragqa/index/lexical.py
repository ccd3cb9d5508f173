"""The BM25 index and the paper table, kept beside the Chroma store.

Both are derived from Chroma (see store.py) and written as an immutable snapshot folder; a small
CURRENT file names the snapshot in use and is replaced atomically. A reader therefore always
sees one whole snapshot (the last consistent state), even while an ingest writes the next one,
and a killed ingest leaves at worst an unused folder that the next one removes.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import functools
import hashlib
import json
import math
import os
import re
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ragqa.errors import SnapshotError, disk_full_error
from ragqa.index.bm25 import COUNTS, TermMatrix
from ragqa.resources import DATA_DIR, TOKENIZER_FILE
from ragqa.sources.paper import Paper
from ragqa.sources.select import split_categories
from ragqa.text import sentence_splitter, split_sentences

CURRENT = "CURRENT"
# Names the splitter that cut the snapshot's sentences (their terms are only good for it).
SENTENCES = "SENTENCES"
# A query stem no paper uses is matched to words that extend it by at most MAX_EXTENSION
# letters ("molecul" -> "molecular"), if it has MIN_EXTENDED_STEM letters or more.
MIN_EXTENDED_STEM = 5
MAX_EXTENSION = 3
# A query word no paper uses and no word extends, of MIN_CORRECTED_STEM letters or more, is a
# typo when one slip of the fingers makes it a word the collection uses: a letter dropped or
# added, two swapped, or one changed for a key beside it ("netowrk" -> "network", "algoritms"
# -> "algorithm"); never its first letter, nor its last one dropped. Not when it is written
# with a capital (a name: "Pinterest", "spaCy") or is an English word of its own (the
# embedder's WordPiece vocabulary holds it whole: "chess" is no typo of "chest"): near misses
# name such words (the near misses of blind rounds 1-4 and 7-12 and the dev halves of 13-16:
# 505 of 566 caught before, 504 after, bench/reading/blind.py). Words longer than
# MAX_CORRECTED_STEM are no typos of a word (and their slips would be costly to list).
MIN_CORRECTED_STEM = 5
MAX_CORRECTED_STEM = 24
# ML abbreviations and the words they stand for, one line a meaning: a query's abbreviation no
# paper writes is read as its long forms where the collection writes them ("HMC" ->
# "Hamiltonian Monte Carlo"), and a chat's selection reads a paper writing either as holding
# both. One that is also an English word ("GAN", "MAP") only when written in capitals.
ACRONYMS_FILE = DATA_DIR / "ml_acronyms.tsv"
PHRASES_FILE = DATA_DIR / "ml_phrases.tsv"
# Papers whose terms a snapshot keeps for query expansion (~1 KB each), then it starts again.
MAX_KEPT_TERMS = 20_000
# Query words that say "find papers" rather than what to find. Removed from the lexical query
# only; the dense query keeps the whole question.
QUERY_STOPWORDS = {
    "paper", "papers", "work", "works", "study", "studies", "studied", "approach", "approaches",
    "method", "methods", "propose", "proposes", "proposed", "which", "what", "who", "how", "any",
    "list", "find", "show", "deal", "deals", "do", "does", "use", "uses", "using", "about",
    "address", "addresses", "article", "articles", "research", "tell", "me", "there",
}


FINGERPRINT_MODULUS = 2**256


def fingerprint(states: Iterable[tuple[str, str]]) -> str:
    """Identifies a set of (paper_id, what its text and place hash to): equal sets, equal
    fingerprints. A sum of the items' hashes, so that a snapshot updated by a few papers
    (`update_snapshot`) gets its new fingerprint from those alone (`fingerprint_moved`)."""
    return _hex(sum(_item(pid, mark) for pid, mark in states) % FINGERPRINT_MODULUS)


def fingerprint_moved(fp: str, removed: Iterable[tuple[str, str]],
                      added: Iterable[tuple[str, str]]) -> str:
    """The fingerprint of the set `fp` identifies, less `removed`, plus `added`."""
    total = int(fp, 16) - sum(_item(pid, mark) for pid, mark in removed) \
        + sum(_item(pid, mark) for pid, mark in added)
    return _hex(total % FINGERPRINT_MODULUS)


def _item(pid: str, mark: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{pid}\t{mark}".encode()).digest(), "big")


def _hex(value: int) -> str:
    return f"{value:064x}"


def paper_mark(content_hash: str, source: str, line: int) -> str:
    """What a paper's fingerprint item holds besides its id: its text (by hash) and its place
    (a moved paper must show its new place)."""
    return f"{content_hash}@{source}:{line}"


_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern
# A hyphenated compound ("code-mixing", "self-supervised"): in a list question, one term whose
# papers write its parts side by side (a phrase), not its parts alone, so that "code-mixing"
# does not match every paper about source code (issue 45: a word's sense from its compound).
_COMPOUND = re.compile(r"(?u)\b\w+(?:-\w+)+\b")
# The dashes a PDF or a word processor writes inside a compound ("code‐mixed"), read as "-".
_DASHES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-"})
# Papers read at most to find a phrase's (those holding all its parts; ~0.2 s per 1,000 the
# first time in a snapshot): beyond it, the parts stay apart.
MAX_PHRASE_CANDIDATES = 5_000
# What ends a run of words for a phrase: any punctuation mark but the hyphen.
_PUNCTUATION = re.compile(r"[^\w\s-]+")
# Papers holding the rest of a one-letter compound written joined ("kmeans": "mean") read for
# it written with its letter and a hyphen ("k-means": `LexicalIndex._letter_compound`).
MAX_LETTER_COMPOUND_PAPERS = 500
# Phrases whose papers a snapshot keeps (a few KB each), then it starts again.
MAX_KEPT_PHRASES = 1_000
# Papers read from SQLite at once (below its default limit of variables in one statement).
SQLITE_BATCH = 900


@functools.lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@functools.lru_cache(maxsize=1)
def query_stopwords() -> frozenset[str]:
    """QUERY_STOPWORDS as terms."""
    return frozenset(_stemmer().stemWords(sorted(QUERY_STOPWORDS)))


def terms(text: str, query: bool = False) -> list[str]:
    """Lower-cased, stop-word-free, stemmed words: what BM25 indexes and searches. A query also
    loses the words that only say "find papers" (unless nothing else is left)."""
    stop = _stopwords()
    words = [w for w in _WORD.findall(text.lower()) if w not in stop]
    stems = _stemmer().stemWords(words)
    if query:
        kept = [t for t in stems if t not in query_stopwords()]
        return kept or stems
    return stems


def plain_terms(query_terms: Iterable[str]) -> list[str]:
    """Query terms with each phrase term ("code mix", see _COMPOUND) as its words."""
    return [word for term in query_terms for word in term.split(" ")]


def paper_document(paper: Paper) -> str:
    """What BM25 sees of a paper: a real title counts with the text; a derived one is in it."""
    return paper.text if paper.title_derived else f"{paper.title}\n{paper.text}"


def _digest(document: str) -> str:
    return hashlib.blake2b(document.encode(), digest_size=16).hexdigest()


# (a digest of a paper's document, its BM25 terms, its sentences' terms): see document_terms
KnownTerms = tuple[str, list[str], str]


def document_terms(paper: Paper) -> KnownTerms:
    """(a digest of the paper's document, its terms, its sentences' terms): what
    `write_snapshot` can use instead of working the terms out again, as long as the document is
    the same. The terms are interned: they repeat, and thousands of papers' would take hundreds
    of MB as separate strings.

    The document's terms are its title's followed by each sentence's, which is what the whole
    document gives (no word spans two sentences); the sentences' terms, one line per sentence
    of `split_sentences(paper.text)`, let a search choose a paper's best sentence without
    stemming its abstract again (`LexicalIndex.sentence_terms`)."""
    document = paper_document(paper)
    per_sentence = [terms(sentence) for sentence in split_sentences(paper.text)]
    words = [] if paper.title_derived else terms(paper.title)
    words += [t for sentence in per_sentence for t in sentence]
    return (_digest(document), [sys.intern(t) for t in words],
            "\n".join(" ".join(sentence) for sentence in per_sentence))


def _terms_of(paper: Paper, known_terms: Mapping[str, KnownTerms]) -> KnownTerms:
    known = known_terms.get(paper.paper_id)
    return known if known and known[0] == _digest(paper_document(paper)) \
        else document_terms(paper)


class LexicalIndex:
    """One snapshot: BM25 over whole papers, and the papers themselves in SQLite."""

    def __init__(self, folder: Path, fingerprint: str) -> None:
        import bm25s

        self.folder = folder
        self.fingerprint = fingerprint
        self._db = sqlite3.connect(f"file:{folder / 'papers.sqlite'}?mode=ro", uri=True,
                                   check_same_thread=False)
        self.size = self._db.execute("SELECT COUNT(*) FROM papers").fetchone()[0]
        self._bm25 = bm25s.BM25.load(str(folder / "bm25"), mmap=False) if self.size else None
        self._index_of = {pid: i for i, pid in
                          self._db.execute("SELECT idx, paper_id FROM papers")}
        self._paper_ids: dict[int, str] | None = None
        self._vocabulary: list[str] | None = None
        # Rows' terms worked out for query expansion, kept: the same papers come back as
        # feedback for many questions (a server's), and tokenising them is the slow part.
        self._row_terms: dict[int, list[str]] = {}
        # The sentences' terms it keeps are used only if today's splitter cut them.
        self._sentences_kept = splitter_of(folder) == sentence_splitter()
        # A phrase term's (rows, BM25 scores), found once per snapshot (see _phrase_postings).
        self._phrases: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._corrections: dict[str, list[str]] = {}  # a typo's word (`_correction`)
        self._loose_phrases: dict[str, bool] = {}  # a term written loosely (`writes_phrase`)
        self._compounds: dict[str, list[str]] = {}  # a joined compound's word (`_letter_compound`)
        background = folder / "background.npy"
        self.background = np.load(background) if background.is_file() else None

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------ papers

    def paper(self, paper_id: str) -> Paper | None:
        row = self._db.execute("SELECT json FROM papers WHERE paper_id = ?", (paper_id,)).fetchone()
        return Paper(**json.loads(row[0])) if row else None

    def papers_by_index(self, indices: Sequence[int]) -> list[Paper]:
        if not indices:
            return []
        marks = ",".join("?" * len(indices))
        rows = dict(self._db.execute(f"SELECT idx, json FROM papers WHERE idx IN ({marks})",
                                     [int(i) for i in indices]).fetchall())
        return [Paper(**json.loads(rows[int(i)])) for i in indices]

    def sentence_terms(self, indices: Sequence[int]) -> list[list[list[str]] | None]:
        """Each paper's sentences' terms (by row), as `document_terms` worked them out; None
        for every row of a snapshot written before they were kept, or cut by another splitter."""
        if not indices:
            return []
        if not self._sentences_kept:
            return [None] * len(indices)
        marks = ",".join("?" * len(indices))
        try:
            rows = dict(self._db.execute(
                f"SELECT idx, sentence_terms FROM papers WHERE idx IN ({marks})",
                [int(i) for i in indices]).fetchall())
        except sqlite3.OperationalError:  # no such column
            return [None] * len(indices)
        return [[line.split() for line in rows[int(i)].split("\n")]
                if rows[int(i)] is not None else None for i in indices]

    def all_papers(self) -> list[Paper]:
        rows = self._db.execute("SELECT json FROM papers ORDER BY source_file, position, idx")
        return [Paper(**json.loads(r[0])) for r in rows]

    def papers_page(self, offset: int, limit: int) -> list[Paper]:
        """`limit` papers from `offset`, in the order of `all_papers` (a server's pages)."""
        rows = self._db.execute("SELECT json FROM papers ORDER BY source_file, position, idx "
                                "LIMIT ? OFFSET ?", (limit, offset))
        return [Paper(**json.loads(r[0])) for r in rows]

    def marks(self, paper_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Paper id -> its `paper_mark` (what ingest.reconcile compares with Chroma), of these
        papers (None: all) that the snapshot holds; empty for a snapshot written before marks
        were kept."""
        try:
            if paper_ids is None:
                return dict(self._db.execute("SELECT paper_id, mark FROM papers"))
            ids = sorted(set(paper_ids))
            found: dict[str, str] = {}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                found.update(self._db.execute(
                    f"SELECT paper_id, mark FROM papers WHERE paper_id IN "
                    f"({','.join('?' * len(part))})", part))
            return found
        except sqlite3.OperationalError:  # no such column
            return {}

    def find_prefix(self, prefix: str) -> list[str]:
        rows = self._db.execute("SELECT paper_id FROM papers WHERE paper_id LIKE ? ESCAPE '\\' "
                                "LIMIT 5", (_like_prefix(prefix),))
        return [r[0] for r in rows]

    def indices_matching(self, venue: str | None, year: int | None,
                         paper_ids: Set[str] | None, category: str | None = None
                         ) -> np.ndarray:
        """Rows of the papers of this venue, year and category, among these ids (None: any)."""
        clauses, args = [], []
        if venue:  # its short name ("ACL") or the whole label (ragqa/sources/venues.py)
            clauses.append(
                "(venue_key = ? OR lower(json_extract(json, '$.extra.venue_label')) = ?)")
            args.extend([venue.lower(), venue.lower()])
        if year is not None:
            clauses.append("year = ?")
            args.append(year)
        where = " AND ".join(clauses) or "1"
        if category:
            rows = self._in_category(where, args, category.lower())
        else:
            rows = self._db.execute(f"SELECT idx, paper_id FROM papers WHERE {where}", args)
        return np.array([i for i, pid in rows if paper_ids is None or pid in paper_ids],
                        dtype=np.int64)

    def _in_category(self, where: str, args: list, category: str) -> list[tuple[int, str]]:
        """Rows of the category: from the `categories` column (" cs.cl cs.ai "), or, in a
        snapshot written before it existed, from each paper's metadata."""
        try:
            return self._db.execute(
                f"SELECT idx, paper_id FROM papers WHERE {where} AND categories LIKE ? "
                "ESCAPE '\\'", [*args, f"% {_like_prefix(category)[:-1]} %"]).fetchall()
        except sqlite3.OperationalError:  # no such column
            rows = self._db.execute(f"SELECT idx, paper_id, json FROM papers WHERE {where}", args)
            return [(i, pid) for i, pid, record in rows
                    if category in _categories(json.loads(record).get("extra", {}))]

    # ------------------------------------------------------------ search

    def query_terms(self, query: str, extend: bool = False) -> list[str]:
        """The query's terms; with `extend`, as this collection writes them: a stem no paper
        uses is replaced by the collection's most frequent words that extend it ("molecules"
        stems to "molecul", which the papers write "molecular"), the stemmer leaving such pairs
        apart. The list decision uses it; claims keep their words as written (SciFact's
        calibration was made without it)."""
        out: list[str] = []  # a word the question repeats weighs more, as BM25 has it
        written = Written.of(query) if extend else Written()
        for term in terms(query, query=True):
            out.extend(self.forms(term, written) if extend else [term])
        return self._with_phrases(query, out) if extend else out

    def _with_phrases(self, query: str, query_terms: list[str]) -> list[str]:
        """The query's terms with a hyphenated compound that the collection writes as one
        phrase term ("code mix") in place of its parts (see _COMPOUND), when it is the topic:
        at least half the query's terms. In a longer question the rest of it gives the words
        their sense (bench/lists/tiers.py: sense questions' core precision 0.93 without
        phrases), and phrases there cost more precision than they gave (bench/README.md,
        session 23)."""
        words = len(query_terms)
        for match in _COMPOUND.finditer(query.translate(_DASHES)):
            parts = terms(match.group().replace("-", " "))
            # Words repeated ("end-to-end") say nothing a phrase would add; a number
            # ("COVID-19", "GPT-3") is a version whose papers often write the name alone.
            if len(set(parts)) < 2 or any(p.isdigit() for p in parts) \
                    or not all(p in query_terms for p in parts) or 2 * len(parts) < words:
                continue
            phrase = " ".join(parts)
            if not self._df(phrase):
                continue
            query_terms[query_terms.index(parts[0])] = phrase
            for part in parts[1:]:
                query_terms.remove(part)
        return query_terms

    def forms(self, stem: str, written: Written | None = None) -> list[str]:
        """A stemmed term as this collection writes it: itself, or, when no paper uses it, the
        collection's most frequent words that extend it (`query_terms`); or, as the text it is
        from writes it (`written`: `Written.of` that text), the long forms of an abbreviation
        or the word a typo stands for (`_correction`)."""
        if self._df(stem):
            return [stem]
        written = written or Written()
        return self._extensions(stem) \
            or (self._long_forms_written(stem) if stem in written.abbreviations else []) \
            or (self._correction(stem) if stem in written.typos else []) \
            or self._letter_compound(stem) or [stem]

    def _letter_compound(self, stem: str) -> list[str]:
        """The word of a one-letter compound written joined ("kmeans", "tsne"): papers write
        "k-means" and "t-SNE", whose letter no term keeps (terms are two letters or more), so
        "kmean" is no paper's term, "mean" is. The rest's term, when papers write the
        letter, a hyphen and the rest; else none."""
        rest = stem[1:]
        if len(stem) < 4 or not stem[0].isalpha() or not self._df(rest):
            return []
        # (kept: a question reads its words' forms several times, each a read of the papers)
        if stem not in self._compounds:
            if len(self._compounds) > MAX_KEPT_PHRASES:
                self._compounds.clear()
            written = re.compile(rf"(?<![\w-]){re.escape(stem[0])}-{re.escape(rest)}",
                                 re.IGNORECASE)
            rows = self._postings(rest)[0][:MAX_LETTER_COMPOUND_PAPERS]
            papers = self.papers_by_index([int(r) for r in rows])
            self._compounds[stem] = [rest] if any(written.search(paper_document(p))
                                                  for p in papers) else []
        return self._compounds[stem]

    def _long_forms_written(self, stem: str) -> list[str]:
        """The long forms of the abbreviation `stem` (ACRONYMS_FILE) that papers write, as
        phrase terms (their words in a row; a long form reduced to one word by its stop words
        would stand for every paper that uses that word)."""
        found = []
        for long_form in long_forms_of(stem):
            term = " ".join(terms(long_form.replace("-", " ")))
            if " " in term and term not in found and self._df(term):
                found.append(term)
        return found

    def _correction(self, stem: str) -> list[str]:
        """The collection's most frequent word one slip away from `stem` (MIN_CORRECTED_STEM
        to MAX_CORRECTED_STEM letters, `_slips`); else none. Found once a snapshot."""
        if not MIN_CORRECTED_STEM <= len(stem) <= MAX_CORRECTED_STEM or not self._bm25 \
                or not stem.isalpha():
            return []
        if stem not in self._corrections:
            found = [w for w in _slips(stem) if w in self._bm25.vocab_dict]
            if len(self._corrections) > MAX_KEPT_PHRASES:
                self._corrections.clear()
            self._corrections[stem] = sorted(found, key=lambda w: (-self._df(w), w))[:1]
        return self._corrections[stem]

    def writes_phrase(self, phrase: str, loosely: bool = False) -> bool:
        """Whether a paper writes the phrase term's words in a row, stop words aside, with no
        punctuation mark between them (as `_phrase_postings` finds them); `loosely`, each word
        also as a word that extends it or that it extends (`_variants`: "batch norm" is
        written where papers write "batch normalization", "conformal prediction" where they
        write "conformal predictors"). A phrase whose words too many papers share to read
        them all counts as written."""
        parts = phrase.split(" ")
        if len(self._holding_all([{p} for p in parts])) > MAX_PHRASE_CANDIDATES \
                or self._df(phrase):
            return True
        if not loosely:
            return False
        if phrase not in self._loose_phrases:
            if len(self._loose_phrases) > MAX_KEPT_PHRASES:
                self._loose_phrases.clear()
            variants = [self._variants(p) for p in parts]
            rows = self._holding_all(variants)
            self._loose_phrases[phrase] = len(rows) > MAX_PHRASE_CANDIDATES or any(
                all(line[i + k] in variants[k] for k in range(len(parts)))
                for lines in self._lines_of(rows) for line in lines
                for i in range(len(line) - len(parts) + 1))
        return self._loose_phrases[phrase]

    def _holding_all(self, variants: list[set[str]]) -> np.ndarray:
        """The rows that hold a word of every group."""
        return functools.reduce(np.intersect1d, [
            np.unique(np.concatenate([self._postings(v)[0] for v in group]))
            for group in variants])

    def _variants(self, stem: str) -> set[str]:
        """The stem and the collection's words that extend it by at most MAX_EXTENSION
        letters or that it extends by as many ("norm": "normal"; "predictor": "predict"),
        from MIN_EXTENDED_STEM - 1 letters on."""
        found = {stem}
        if not self._bm25 or len(stem) < MIN_EXTENDED_STEM - 1:
            return found
        if self._vocabulary is None:
            self._vocabulary = sorted(self._bm25.vocab_dict)
        start = bisect.bisect_left(self._vocabulary, stem)
        for word in self._vocabulary[start:start + 200]:
            if not word.startswith(stem):
                break
            if len(word) - len(stem) <= MAX_EXTENSION:
                found.add(word)
        for cut in range(1, MAX_EXTENSION + 1):
            shorter = stem[:-cut]
            if len(shorter) >= MIN_EXTENDED_STEM - 1 and shorter in self._bm25.vocab_dict:
                found.add(shorter)
        return found

    def document_frequency(self, term: str) -> int:
        """How many papers hold the (stemmed) term."""
        return self._df(term)

    def _df(self, term: str) -> int:
        if " " in term:
            return len(self._phrase_postings(term)[0])
        tid = self._bm25.vocab_dict.get(term) if self._bm25 else None
        if tid is None:
            return 0
        indptr = self._bm25.scores["indptr"]
        return int(indptr[tid + 1] - indptr[tid])

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(the rows holding a term, ascending; its BM25 score in each): a word's from the
        index, a phrase's found (`_phrase_postings`)."""
        if " " in term:
            return self._phrase_postings(term)
        tid = self._bm25.vocab_dict.get(term) if self._bm25 else None
        if tid is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self._bm25.scores
        span = slice(scores["indptr"][tid], scores["indptr"][tid + 1])
        return scores["indices"][span], scores["data"][span]

    def _phrase_postings(self, phrase: str) -> tuple[np.ndarray, np.ndarray]:
        """A phrase term's papers (those that write its words in a row, stop words aside, with
        no punctuation mark between them) and their BM25 scores: what its words score there.
        The phrase counts as its words where they stand together and not elsewhere, so that
        every BM25 share keeps its scale (`idf` gives it its words' idf)."""
        found = self._phrases.get(phrase)
        if found is not None:
            return found
        parts = phrase.split(" ")
        postings = [self._postings(part) for part in parts]
        common = functools.reduce(np.intersect1d, [rows for rows, _ in postings])
        rows = np.zeros(0, dtype=np.int64)
        if 0 < len(common) <= MAX_PHRASE_CANDIDATES:
            rows = np.asarray([row for row, lines in zip(common, self._lines_of(common),
                                                         strict=True)
                               if any(holds_run(line, parts) for line in lines)],
                              dtype=np.int64)
        scores = np.zeros(len(rows), dtype=np.float32)
        for part_rows, data in postings:
            scores += data[np.searchsorted(part_rows, rows)]
        found = (rows, scores)
        if len(self._phrases) > MAX_KEPT_PHRASES:
            self._phrases.clear()
        self._phrases[phrase] = found
        return found

    def _lines_of(self, rows: np.ndarray) -> list[list[list[str]]]:
        """Each row's document as the terms of its runs between punctuation marks (a hyphen
        is none): "code, mixing" holds no phrase "code mix"."""
        out: list[list[list[str]]] = []
        for start in range(0, len(rows), SQLITE_BATCH):
            batch = [int(r) for r in rows[start:start + SQLITE_BATCH]]
            out.extend(phrase_runs(paper_document(paper))
                       for paper in self.papers_by_index(batch))
        return out

    def _extensions(self, stem: str, most: int = 2) -> list[str]:
        if len(stem) < MIN_EXTENDED_STEM or not self._bm25:
            return []
        if self._vocabulary is None:
            self._vocabulary = sorted(self._bm25.vocab_dict)
        start = bisect.bisect_left(self._vocabulary, stem)
        found = []
        for word in self._vocabulary[start:start + 200]:
            if not word.startswith(stem):
                break
            if len(word) - len(stem) <= MAX_EXTENSION:
                found.append(word)
        return sorted(found, key=lambda w: -self._df(w))[:most]

    def search(self, query: str, n: int, allowed: np.ndarray | None = None,
               extend: bool = False) -> list[tuple[int, float]]:
        """(paper index, BM25 score) of the n best papers, best first, positive scores only
        (`extend`: see query_terms)."""
        query_terms = self.query_terms(query, extend)
        if not self._bm25 or not query_terms:  # only stop words: nothing for BM25 to match
            return []
        words = [t for t in query_terms if " " not in t]
        scores = self._bm25.get_scores(words) if words else np.zeros(self.size, np.float32)
        for phrase in (t for t in query_terms if " " in t):
            rows, data = self._postings(phrase)
            scores[rows] += data
        if allowed is not None:
            mask = np.zeros_like(scores)
            mask[allowed] = 1.0
            scores = scores * mask
        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [(int(i), float(scores[i])) for i in top if scores[i] > 0]

    def index_of(self, paper_id: str) -> int | None:
        return self._index_of.get(paper_id)

    def paper_ids_by_index(self, indices: Sequence[int]) -> list[str]:
        if self._paper_ids is None:
            self._paper_ids = {i: pid for pid, i in self._index_of.items()}
        return [self._paper_ids[int(i)] for i in indices]

    def coverage(self, query_terms: Sequence[str], indices: Sequence[int]) -> np.ndarray:
        """For each paper (by index), the idf-weighted share of the query's terms it contains,
        read off the BM25 index (no re-tokenising of papers)."""
        idf = self.idf(query_terms)
        total = sum(idf.values())
        out = np.zeros(len(indices), dtype=np.float32)
        if not total or not self._bm25:
            return out
        rows = np.full(self.size, -1, dtype=np.int64)
        rows[np.asarray(indices, dtype=np.int64)] = np.arange(len(indices))
        for term, weight in idf.items():
            found = rows[self._postings(term)[0]]
            out[found[found >= 0]] += weight
        return out / total

    def weighted_scores(self, weights: dict[str, float], allowed: np.ndarray | None = None
                        ) -> np.ndarray:
        """BM25 of every paper for a query whose terms weigh differently (an expanded query),
        summed from the index's per-term scores."""
        out = np.zeros(self.size, dtype=np.float32)
        if not self._bm25:
            return out
        for term, weight in weights.items():
            rows, data = self._postings(term)
            out[rows] += weight * data
        if allowed is not None:
            mask = np.zeros(self.size, dtype=bool)
            mask[allowed] = True
            out[~mask] = 0.0
        return out

    def expansion_terms(self, indices: Sequence[int], n: int) -> dict[str, float]:
        """The n terms that best characterise these papers (relevance model RM3: each paper's
        term frequencies by length, times idf), as weights that sum to 1."""
        weight: dict[str, float] = {}
        for words in self._terms_of_rows(indices):
            idf = self.idf(sorted(set(words)))
            for word in words:
                weight[word] = weight.get(word, 0.0) + idf[word] / len(words)
        best = sorted(weight.items(), key=lambda kv: -kv[1])[:n]
        total = sum(w for _, w in best) or 1.0
        return {term: w / total for term, w in best}

    def _terms_of_rows(self, indices: Sequence[int]) -> list[list[str]]:
        """Each paper's terms (by row), tokenised once per snapshot."""
        known = self._row_terms
        found = {int(i): known.get(int(i)) for i in indices}  # another request may clear it
        missing = [row for row, words in found.items() if words is None]
        if missing:
            if len(known) > MAX_KEPT_TERMS:
                known.clear()
            for row, paper in zip(missing, self.papers_by_index(missing), strict=True):
                found[row] = known[row] = [sys.intern(t) for t in terms(paper_document(paper))]
        return [found[int(i)] for i in indices]

    def idf(self, terms: Sequence[str]) -> dict[str, float]:
        """BM25's idf of each term; a term the collection never uses gets the highest idf, as
        if it were in one document more than the collection holds."""
        n = max(self.size, 1)
        out = {}
        for term in terms:
            if " " in term:  # a phrase weighs as its words (_phrase_postings)
                words = term.split(" ")
                out[term] = sum(self.idf(words)[word] for word in words)
                continue
            df = self._df(term)
            out[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return out


@functools.lru_cache(maxsize=1)
def long_forms() -> dict[str, tuple[str, ...]]:
    """ACRONYMS_FILE: each abbreviation (lower case) and its long forms, in the file's order
    (the usual ML meaning first), a spelling of the same words once. An abbreviation the
    stemmer makes another word of ("AIS" is "ai", "NUTS" "nut") or drops ("IS", "AT") is left
    out: its stem stands for that other word."""
    out: dict[str, tuple[str, ...]] = {}
    meant: dict[str, set[tuple[str, ...]]] = {}
    for line in ACRONYMS_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            short, long_form = line.split("\t")
            if terms(short) != [short]:
                continue
            words = tuple(terms(long_form.replace("-", " ")))
            if words not in meant.setdefault(short, set()):
                meant[short].add(words)
                out[short] = (*out.get(short, ()), long_form)
    return out


@functools.lru_cache(maxsize=1)
def long_form_terms() -> dict[str, tuple[tuple[str, ...], ...]]:
    """long_forms as terms: each abbreviation and the terms of each of its long forms."""
    return {short: tuple(tuple(terms(form.replace("-", " "))) for form in forms)
            for short, forms in long_forms().items()}


def long_forms_of(abbreviation: str) -> tuple[str, ...]:
    """The long forms of an abbreviation in lower case, or of its plural ("tcns": the stemmer
    keeps an abbreviation's plural); none when it is no abbreviation."""
    forms = long_forms()
    return forms.get(abbreviation) or forms.get(abbreviation.removesuffix("s"), ())


def is_english_word(word: str) -> bool:
    """Whether the embedder's WordPiece vocabulary holds `word` whole ("sat", "map": words an
    abbreviation may also be)."""
    return word in _english_words()


@functools.lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    """The whole words of the embedder's WordPiece vocabulary: English words a typo is not."""
    vocab = json.loads(TOKENIZER_FILE.read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha())


@dataclass(frozen=True)
class Written:
    """How a text writes its words, for `LexicalIndex.forms`: the stems of those that may be
    abbreviations (in capitals, "HMC", "GANs"; or, in any case, no English word: "hmc") and of
    those that may be typos (in lower case, and no English word of their own nor the form of
    one: "algoritms", not "prompts" or "Pinterest")."""

    abbreviations: frozenset[str] = frozenset()
    typos: frozenset[str] = frozenset()

    @classmethod
    def of(cls, text: str) -> Written:
        english = _english_words()
        abbreviations, typos = set(), set()
        for word in _WORD.findall(text):
            stems = [s for s in terms(word) if s.isalnum()]
            in_capitals = sum(c.isupper() for c in word) >= 2 and word.rstrip("s").isupper()
            if in_capitals or word.lower() not in english:
                abbreviations.update(stems)
            if word.isalpha() and word.islower() and word not in english:
                typos.update(s for s in stems if s not in english)
        return cls(frozenset(abbreviations), frozenset(typos))


# Each letter's neighbours on a QWERTY keyboard: the letter a slip puts in its place.
_KEYBOARD = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_BESIDE = {c: {row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)}
           | {other[j] for other in _KEYBOARD if other is not row
              for j in (i - 1, i, i + 1) if 0 <= j < len(other)
              and abs(_KEYBOARD.index(other) - _KEYBOARD.index(row)) == 1}
           for row in _KEYBOARD for i, c in enumerate(row)}


def _slips(word: str) -> set[str]:
    """What `word` would be without one slip of the fingers, its first letter kept: a letter
    typed too many (dropped here, but the last), one left out (added here), two swapped, one
    typed for a key beside it (Damerau's four kinds of error)."""
    if not word:
        return set()
    head, body = word[0], word[1:]
    splits = [(body[:i], body[i:]) for i in range(len(body) + 1)]
    letters = "abcdefghijklmnopqrstuvwxyz"
    # (not its last letter either: "domino" less its "o" is the stem of "dominant")
    out = ({a + b[1:] for a, b in splits if len(b) > 1}
           | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
           | {a + c + b[1:] for a, b in splits if b for c in _BESIDE.get(b[0], ())}
           | {a + c + b for a, b in splits for c in letters})
    return {head + w for w in out} - {word}


def phrase_run_texts(text: str) -> list[str]:
    """The runs of `text` between punctuation marks (a hyphen is none): a phrase term's words
    stand in a row inside one run."""
    return _PUNCTUATION.split(text.translate(_DASHES))


def phrase_runs(text: str) -> list[list[str]]:
    """The terms of each run of `text` (phrase_run_texts)."""
    return [terms(run) for run in phrase_run_texts(text)]


def compound_runs(text: str, breaks: Set[str] = frozenset()) -> list[list[tuple[str, str]]]:
    """The runs of content words that stand side by side in `text`, with no punctuation mark
    (but a hyphen), no stop word and no word whose term is in `breaks` between them: each word
    as (word as written, its term). A term of several words that a title or a question writes
    is one run or part of one ("batch normalization" in "batch normalization in deep
    networks")."""
    stop = _stopwords()
    out: list[list[tuple[str, str]]] = []
    for run in phrase_run_texts(text):
        current: list[tuple[str, str]] = []
        for word in _WORD.findall(run):
            stem = _stemmer().stemWord(word.lower())
            if word.lower() in stop or stem in breaks:
                if current:
                    out.append(current)
                current = []
            else:
                current.append((word, stem))
        if current:
            out.append(current)
    return out


@functools.lru_cache(maxsize=1)
def known_phrases() -> frozenset[str]:
    """The terms of several words ML writes as one subject, as stems joined by spaces:
    PHRASES_FILE's (from paper titles and the abbreviations' long forms, none made only of
    the words most titles write: bench/glossary/title_phrases.py)."""
    found = set()
    for line in PHRASES_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            found.add(" ".join(terms(line.split("\t")[0].replace("-", " "))))
    return frozenset(p for p in found if " " in p)


@functools.lru_cache(maxsize=1)
def abbreviations_of_phrases() -> dict[str, tuple[str, ...]]:
    """Each long form of ACRONYMS_FILE as stems joined by spaces -> its abbreviations
    ("batch normal" -> ("bn",))."""
    out: dict[str, tuple[str, ...]] = {}
    for short, forms in long_forms().items():
        for long_form in forms:
            key = " ".join(terms(long_form.replace("-", " ")))
            out[key] = (*out.get(key, ()), short)
    return out


def holds_run(words: Sequence[str], run: Sequence[str]) -> bool:
    """Whether `run` occurs in `words` as consecutive items."""
    width = len(run)
    return any(words[i:i + width] == run for i in range(len(words) - width + 1)
               if words[i] == run[0])


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# ---------------------------------------------------------------- snapshots on disk

def read_current(folder: Path) -> dict | None:
    try:
        return json.loads((folder / CURRENT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def open_current(folder: Path) -> LexicalIndex | None:
    state = read_current(folder)
    if not state or not (folder / state["dir"]).is_dir():
        return None
    return LexicalIndex(folder / state["dir"], state["fingerprint"])


def _position(source: str) -> tuple[str, int]:
    name, _, pos = source.rpartition("#")
    return (name, int(pos)) if pos.isdigit() else (source, 0)


def write_snapshot(folder: Path, papers: list[Paper], fp: str,
                   background: np.ndarray | None = None,
                   known_terms: Mapping[str, KnownTerms] | None = None,
                   state: Mapping[str, object] | None = None) -> Path:
    """Write a new snapshot, switch CURRENT to it atomically, then remove older ones.

    `background` is a sample of the collection's vectors: retrieval/signals.py measures how
    unusual a paper's similarity to a question is against it (the relevance cut).
    `known_terms`: paper id -> `document_terms` of papers worked out beforehand (ingest does it
    while it embeds). `state`: more for CURRENT (what of the server's journal it reflects)."""

    def fill(work: Path) -> None:
        _write_files(work, papers, background, known_terms or {})

    return _new_snapshot(folder, fp, len(papers), fill, state)


def update_snapshot(base: LexicalIndex, removed: Set[str], added: Sequence[Paper], fp: str,
                    background: np.ndarray | None = None,
                    known_terms: Mapping[str, KnownTerms] | None = None,
                    state: Mapping[str, object] | None = None) -> Path:
    """A new snapshot that is `base` less the `removed` papers plus the `added` ones (a paper
    replaced is in both), written without working out the other papers' terms again: their
    rows are copied and the BM25 scores recomputed from the kept term counts (bm25.py). Raises
    SnapshotError if `base` keeps no term counts or its sentences were cut by another splitter
    (written by an older ragqa): rebuild instead.
    `background` replaces base's sample (None: keep it)."""
    matrix = TermMatrix.load(base.folder) if up_to_date(base.folder) else None
    if matrix is None or matrix.rows != base.size:
        raise SnapshotError(f"the BM25 index in {base.folder} keeps no term counts or "
                            "sentences of this splitter")
    known_terms = known_terms or {}
    gone = np.asarray(sorted({base.index_of(pid) for pid in removed} - {None}), dtype=np.int64)
    size = base.size - len(gone)
    # Each removed row's slot takes one of the last rows (a few UPDATEs, not one per row after
    # it): `order[new row] = old row`.
    order = np.arange(base.size, dtype=np.int64)
    survives = np.ones(base.size, dtype=bool)
    survives[gone] = False
    holes = gone[gone < size]
    order[holes] = np.flatnonzero(survives[size:]) + size
    order = order[:size]
    worked_out = [_terms_of(p, known_terms) for p in added]

    def fill(work: Path) -> None:
        shutil.copyfile(base.folder / "papers.sqlite", work / "papers.sqlite")
        with contextlib.closing(sqlite3.connect(work / "papers.sqlite")) as db:
            db.executemany("DELETE FROM papers WHERE idx = ?", [(int(i),) for i in gone])
            db.executemany("UPDATE papers SET idx = ? WHERE idx = ?",
                           [(int(h), int(order[h])) for h in holes])
            _insert_rows(db, added, worked_out, start=size)
            db.commit()
        counts = matrix.take(order).append([known[1] for known in worked_out]).compacted()
        _write_index(work, counts)
        sample = background if background is not None else base.background
        if sample is not None and len(sample):
            np.save(work / "background.npy", sample.astype(np.float32))

    return _new_snapshot(base.folder.parent, fp, size + len(added), fill, state)


def keeps_counts(folder: Path) -> bool:
    """Whether a snapshot keeps its term counts (one written before the journal does not: a
    full rebuild replaces it)."""
    return (folder / COUNTS).is_file()


def up_to_date(folder: Path) -> bool:
    """Whether a snapshot can be updated in place: it keeps its term counts and its sentences
    were cut by today's splitter (else a full rebuild replaces it)."""
    return keeps_counts(folder) and splitter_of(folder) == sentence_splitter()


def splitter_of(folder: Path) -> str | None:
    """The splitter that cut a snapshot's sentences (None: one before it was recorded)."""
    try:
        return (folder / SENTENCES).read_text(encoding="utf-8")
    except OSError:
        return None


def _new_snapshot(folder: Path, fp: str, size: int, fill, state: Mapping[str, object] | None
                  ) -> Path:
    """Fill a temporary folder, make its files durable (fsync), rename it into place, then
    switch CURRENT to it (`_write_atomically`): until that switch readers keep the previous
    snapshot, and after it the new one is whole on disk even if the machine stops."""
    previous = (read_current(folder) or {}).get("dir")
    name = f"snap-{fp[:12]}-{time.time_ns()}"
    work = folder / f".tmp-{name}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        work.mkdir()
        fill(work)
        _sync_folder_files(work)
        os.replace(work, folder / name)
        _sync(folder)
        write_current(folder, {**(state or {}), "dir": name, "fingerprint": fp, "papers": size})
    except (OSError, sqlite3.OperationalError) as exc:
        # A full disk or a read-only folder: a runtime error (exit 1) that says so (SQLite's
        # own "database or disk is full" is no OSError), with the previous snapshot still in use
        # and no half-written one left to fill the disk further.
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(folder / name, ignore_errors=True)
        full = disk_full_error(exc, folder)
        if full is not None:
            raise full from None
        raise SnapshotError(f"cannot write the BM25 index in {folder}: {exc}") from None
    _remove_old_snapshots(folder, keep=name, previous=previous)
    return folder / name


def _sync(path: Path) -> None:
    """fsync a file or a folder (a folder: the names in it, after a rename). A file system that
    cannot fsync a folder (EINVAL: some network ones) keeps what it keeps."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF) or not path.is_dir():
            raise
    finally:
        os.close(handle)


def _sync_folder_files(folder: Path) -> None:
    """fsync every file under `folder`, then the folders themselves: what numpy, bm25s and
    SQLite wrote is on disk before the rename makes it the snapshot."""
    for path in sorted(folder.rglob("*"), key=lambda p: -len(p.parts)):
        _sync(path)
    _sync(folder)


def write_current(folder: Path, state: Mapping[str, object]) -> None:
    """Replace CURRENT (which snapshot is in use, and what it reflects) atomically."""
    _write_atomically(folder / CURRENT, json.dumps(state))


def _categories(extra: dict) -> set[str]:

    return {c.lower() for c in split_categories(extra.get("categories", ""))}


def _insert_rows(db: sqlite3.Connection, papers: Sequence[Paper],
                 worked_out: Sequence[KnownTerms], start: int) -> None:
    db.executemany(
        "INSERT INTO papers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ((start + i, p.paper_id, json.dumps(asdict(p), ensure_ascii=False), p.venue.lower(),
          p.year, *_position(p.source), f" {' '.join(sorted(_categories(p.extra)))} ", known[2],
          paper_mark(p.content_hash, p.source, p.line))
         for i, (p, known) in enumerate(zip(papers, worked_out, strict=True))),
    )


def _write_index(work: Path, counts: TermMatrix) -> None:
    counts.save(work)
    (work / SENTENCES).write_text(sentence_splitter(), encoding="utf-8")
    if counts.rows:
        counts.bm25().save(str(work / "bm25"))


def _write_files(work: Path, papers: list[Paper], background: np.ndarray | None,
                 known_terms: Mapping[str, KnownTerms]) -> None:
    worked_out = [_terms_of(p, known_terms) for p in papers]
    with contextlib.closing(sqlite3.connect(work / "papers.sqlite")) as db:
        db.execute("CREATE TABLE papers (idx INTEGER PRIMARY KEY, paper_id TEXT UNIQUE, "
                   "json TEXT, venue_key TEXT, year INTEGER, source_file TEXT, position INTEGER, "
                   "categories TEXT, sentence_terms TEXT, mark TEXT)")
        _insert_rows(db, papers, worked_out, start=0)
        db.commit()
    _write_index(work, TermMatrix.from_documents([known[1] for known in worked_out]))
    if background is not None and len(background):
        np.save(work / "background.npy", background.astype(np.float32))


def _remove_old_snapshots(folder: Path, keep: str, previous: str | None) -> None:
    """Older snapshots go, except the one just replaced (a search may still be opening it);
    an unfinished one only once it is an hour old (a killed writer, not a running one)."""
    for old in folder.iterdir():
        if not old.is_dir() or old.name in (keep, previous):
            continue
        stale_tmp = old.name.startswith(".tmp-snap-") and time.time() - old.stat().st_mtime > 3600
        if old.name.startswith("snap-") or stale_tmp:
            shutil.rmtree(old, ignore_errors=True)


def _write_atomically(path: Path, text: str) -> None:
    """Temporary file, fsync, rename: `path` holds the old text or the new, whole. A write that
    fails (a full disk) leaves the old one and removes the temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # The rename made durable. It has happened: failing now would have the caller undo what
    # `path` already names.
    with contextlib.suppress(OSError):
        _sync(path.parent)
