"""Retrieval quality on a labelled set: `ragqa eval` on BEIR-format data.

Three layers. The metric functions (`dcg`, `ndcg_at_k`, `recall_at_k`, `mrr_at_k`,
`mean_metrics`) are pure and small, so that they can be checked against hand-computed values and
shared with `bench/scifact.py`. `load_eval_set` reads and checks the files before anything is
opened. `run_eval` is the loop: ingest the corpus into a collection, run every judged query
through the same `Retriever.search` that `ragqa search` uses (without the relevance cut: ranking
metrics need the whole ranking), and average the metrics.

Conventions follow BEIR / pytrec_eval: a judgement's score is its graded gain (score > 0 counts as
relevant), DCG discounts by log2(rank + 1), the ideal DCG is built from the qrels (so relevant
documents missing from the corpus still count against recall and nDCG, as in BEIR).

Ids: BEIR's `_id` becomes the paper id (corpus.py keeps a source's own id), so a ranked list of
paper ids is a ranked list of BEIR document ids; no mapping table is needed.

The heavy modules (ingest, retrieve: Chroma, bm25s) are imported inside the functions that need
them, so importing the metrics costs nothing.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragqa.errors import CorpusError
from ragqa.index.ingest import ingest_sources
from ragqa.retrieval.retriever import Retriever
from ragqa.sources import ReadReport, read_sources

if TYPE_CHECKING:
    from ragqa.index.ingest import Progress
    from ragqa.index.store import Store

Qrels = dict[str, dict[str, int]]  # query id -> document id -> graded relevance
DEFAULT_KS = (10, 100)
NDCG_K = 10
MRR_K = 10


# ---------------------------------------------------------------- metrics (pure)

def _unique(ranked: Iterable[str]) -> list[str]:
    """A document listed twice earns its gain once, at its first rank."""
    seen: set[str] = set()
    return [d for d in ranked if not (d in seen or seen.add(d))]


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain: sum of gain / log2(rank + 1), ranks from 1."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = NDCG_K) -> float:
    """nDCG@k with graded gains (a judgement's score; 0 or less gains nothing), the ideal
    ranking built from all judgements of the query. 0 when nothing is relevant."""
    ideal = dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return dcg(max(judged.get(d, 0), 0) for d in _unique(ranked)[:k]) / ideal


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents (score > 0) found in the top k."""
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranked)[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int = MRR_K) -> float:
    """1 / rank of the first relevant document in the top k, 0 when none is."""
    for rank, doc in enumerate(_unique(ranked)[:k], start=1):
        if judged.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def metric_names(recall_ks: Sequence[int]) -> list[str]:
    return [f"ndcg@{NDCG_K}", *(f"recall@{k}" for k in recall_ks), f"mrr@{MRR_K}"]


def query_metrics(ranked: Sequence[str], judged: Mapping[str, int],
                  recall_ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Every metric of one query, keyed as `metric_names` gives them."""
    values = [ndcg_at_k(ranked, judged, NDCG_K),
              *(recall_at_k(ranked, judged, k) for k in recall_ks),
              mrr_at_k(ranked, judged, MRR_K)]
    return dict(zip(metric_names(recall_ks), values, strict=True))


def mean_metrics(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
                 recall_ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """Each metric averaged over every query of `qrels` (a query missing from `run` scores 0)."""
    totals = dict.fromkeys(metric_names(recall_ks), 0.0)
    for qid, judged in qrels.items():
        for name, value in query_metrics(run.get(qid, []), judged, recall_ks).items():
            totals[name] += value
    return {name: total / len(qrels) if qrels else 0.0 for name, total in totals.items()}


# ---------------------------------------------------------------- reading BEIR files

def _lines(path: Path) -> list[str]:
    """The lines of a text file (gzipped when its name ends in .gz); bad files are CorpusErrors."""
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:  # a missing file, a broken gzip
        reason = "no such file" if isinstance(exc, FileNotFoundError) else f"cannot read: {exc}"
        raise CorpusError(path, None, reason) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CorpusError(path, line, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})") from None
    return text.splitlines()


def _text_field(record: dict, name: str) -> str | None:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value).strip()


def read_queries(path: Path) -> dict[str, str]:
    """BEIR queries.jsonl: query id -> text, in file order."""
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(path, number, f"malformed JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise CorpusError(path, number, "each line must be a JSON object")
        qid, text = _text_field(record, "_id"), _text_field(record, "text")
        if not qid or text is None:
            raise CorpusError(path, number, "a query needs an '_id' and a 'text'")
        if not text:
            raise CorpusError(path, number, f"query {qid!r} has an empty text")
        if qid in queries:
            raise CorpusError(path, number, f"duplicate query id {qid!r} (first at line "
                                            f"{first_line[qid]})")
        queries[qid], first_line[qid] = text, number
    if not queries:
        raise CorpusError(path, None, "no queries in the file")
    return queries


_INTEGER = re.compile(r"^[+-]?\d+$")


def read_qrels(path: Path) -> Qrels:
    """BEIR qrels TSV (`query-id corpus-id score`, an optional header line) or TREC qrels
    (`query-id iteration corpus-id score`), separated by tabs or spaces; scores are integers."""
    qrels: Qrels = {}
    seen_data = False
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [p.strip() for p in parts]
        if len(parts) not in (3, 4):
            raise CorpusError(path, number, f"expected 3 fields (query-id, corpus-id, score) "
                                            f"or 4 (TREC), found {len(parts)}")
        qid, doc, score = (parts[0], parts[1], parts[2]) if len(parts) == 3 else \
            (parts[0], parts[2], parts[3])
        if not _INTEGER.match(score):
            if not seen_data and not any(ch.isdigit() for ch in score):
                seen_data = True  # BEIR's "query-id corpus-id score" header
                continue
            raise CorpusError(path, number, f"the score must be a whole number, not {score!r}")
        seen_data = True
        if not qid or not doc:
            raise CorpusError(path, number, "empty query or corpus id")
        grades = qrels.setdefault(qid, {})
        if doc in grades and grades[doc] != int(score):
            raise CorpusError(path, number, f"query {qid!r} judges {doc!r} twice, with "
                                            f"{grades[doc]} and {int(score)}")
        grades[doc] = int(score)
    if not qrels:
        raise CorpusError(path, None, "no judgements in the file")
    return qrels


# ---------------------------------------------------------------- the data set

@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: Path
    queries: Path
    qrels: Path


def _first_file(folder: Path, names: Sequence[str], what: str) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise CorpusError(folder, None, f"no {what} file (looked for {', '.join(names)})")


def locate_dataset(folder: Path | None, corpus: Path | None = None, queries: Path | None = None,
                   qrels: Path | None = None, split: str = "test") -> Dataset:
    """The files of a BEIR set: the standard layout of `folder` (`corpus.jsonl[.gz]`,
    `queries.jsonl`, `qrels/<split>.tsv`; SciFact's flat `qrels_<split>.tsv` too), each
    overridden by an explicit path. Raises ValueError when a file cannot be found."""
    if folder is None and None in (corpus, queries, qrels):
        raise ValueError("give a BEIR folder, or all of --corpus, --queries and --qrels")
    if folder is not None and not folder.is_dir():
        raise CorpusError(folder, None, "no such folder")
    if folder is not None:
        corpus = corpus or _first_file(folder, ("corpus.jsonl", "corpus.jsonl.gz"), "corpus")
        queries = queries or _first_file(
            folder, ("queries.jsonl", "queries.jsonl.gz", f"queries_{split}.jsonl"), "queries")
        qrels = qrels or _first_file(folder, (f"qrels/{split}.tsv", f"qrels_{split}.tsv"),
                                     f"{split} qrels")
    assert corpus is not None and queries is not None and qrels is not None
    for path in (corpus, queries, qrels):
        if not path.is_file():
            raise CorpusError(path, None, "no such file")
    name = (folder or corpus.parent).resolve().name or "data"
    return Dataset(name, corpus, queries, qrels)


def default_collection(dataset: Dataset) -> str:
    """`eval-<data set folder>`, made a valid collection name: evaluations get a collection of
    their own, so they never mix labelled data into the user's papers."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", dataset.name).strip("._-")[:50] or "data"
    return f"eval-{stem}"


# ---------------------------------------------------------------- the loop

@dataclass
class EvalReport:
    dataset: str
    collection: str
    corpus: str
    queries: str
    qrels: str
    ks: list[int]
    metrics: dict[str, float]
    corpus_docs: int = 0
    collection_papers: int = 0  # more than corpus_docs: the collection holds other papers too
    queries_total: int = 0
    queries_evaluated: int = 0
    skipped_no_qrels: int = 0  # queries without any judgement
    skipped_no_relevant: int = 0  # queries judged, but with no document scored above 0
    qrels_without_query: int = 0  # judged query ids that the queries file lacks
    relevant_not_in_corpus: int = 0  # relevant judgements of documents the corpus lacks
    skipped_bad: int = 0  # corpus records skipped by --skip-bad
    ingest: dict[str, float] = field(default_factory=dict)
    search_seconds: float = 0.0

    def as_json(self) -> dict:
        record = asdict(self)
        record["metrics"] = {name: round(value, 4) for name, value in self.metrics.items()}
        return record


def judged_queries(queries: Mapping[str, str], qrels: Qrels) -> tuple[Qrels, dict[str, int]]:
    """The queries to evaluate (those with at least one relevant judgement, in query-file order)
    and counts of the others. A query with nothing relevant is skipped rather than scored 0:
    its nDCG and recall are undefined, and zeros would measure the labels, not ragqa."""
    judged: Qrels = {}
    counts = {"skipped_no_qrels": 0, "skipped_no_relevant": 0,
              "qrels_without_query": sum(1 for qid in qrels if qid not in queries)}
    for qid in queries:
        grades = qrels.get(qid)
        if not grades:
            counts["skipped_no_qrels"] += 1
        elif not any(g > 0 for g in grades.values()):
            counts["skipped_no_relevant"] += 1
        else:
            judged[qid] = grades
    return judged, counts


@dataclass
class EvalSet:
    """A data set read and checked: nothing is opened or written before this succeeds."""

    dataset: Dataset
    queries: dict[str, str]
    qrels: Qrels
    corpus: ReadReport


def load_eval_set(dataset: Dataset, skip_bad: bool = False) -> EvalSet:
    """Read the three files; any bad one raises CorpusError (file:line: reason)."""

    return EvalSet(dataset, read_queries(dataset.queries), read_qrels(dataset.qrels),
                   read_sources([dataset.corpus], skip_bad=skip_bad))


def run_eval(store: Store, data: EvalSet, recall_ks: Sequence[int] = DEFAULT_KS,
             progress: Progress | None = None,
             on_query: Callable[[int, int], None] | None = None) -> EvalReport:
    """Ingest the corpus into `store` (incremental: a re-run embeds nothing), search every
    judged query and average the metrics."""

    ks = sorted(set(recall_ks))
    judged, counts = judged_queries(data.queries, data.qrels)
    ingested = ingest_sources(store, data.corpus, progress=progress)
    retriever = Retriever(store)
    depth = max(*ks, NDCG_K, MRR_K)
    started = time.perf_counter()
    run: dict[str, list[str]] = {}
    for done, qid in enumerate(judged):
        if on_query:
            on_query(done, len(judged))
        # No relevance cut: the metrics judge the whole ranking, as `search --no-cut` shows it.
        result = retriever.search(data.queries[qid], k=depth, cut=False, sentences=False)
        run[qid] = [hit.paper.paper_id for hit in result.hits]
    search_seconds = time.perf_counter() - started

    papers = data.corpus.papers
    corpus_ids = {p.paper_id for p in papers}
    dataset = data.dataset
    return EvalReport(
        dataset=dataset.name, collection=store.name, corpus=str(dataset.corpus),
        queries=str(dataset.queries), qrels=str(dataset.qrels), ks=ks,
        metrics=mean_metrics(run, judged, ks),
        corpus_docs=len(papers), collection_papers=retriever.total_papers,
        queries_total=len(data.queries), queries_evaluated=len(judged),
        relevant_not_in_corpus=sum(1 for grades in judged.values()
                                   for doc, g in grades.items() if g > 0 and doc not in corpus_ids),
        skipped_bad=len(data.corpus.skipped),
        ingest={"added": ingested.added, "updated": ingested.updated,
                "unchanged": ingested.unchanged, "chunks": ingested.chunks,
                "seconds": round(ingested.seconds, 1)},
        search_seconds=round(search_seconds, 1), **counts,
    )
