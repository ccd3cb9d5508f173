"""Tune how the dense and BM25 rankings are fused, on SciFact's train split only.

    python bench/tune_fusion.py --home DIR [--data ../shared/data/scifact] [--split train]

DIR is a RAGQA_HOME with a `scifact` collection (`bench/scifact.py --home DIR` fills it). Each
query's dense chunk ranking and BM25 ranking are fetched once; then every setting on the grid
re-fuses them in memory, so the grid costs seconds. The report gives nDCG@10 for each setting,
best first; the current default (ragqa.retrieval.fitted.DENSE_WEIGHT) is marked. Two families:

  convex  alpha * dense + (1 - alpha) * BM25, each score min-max scaled over its candidates
          (what ragqa does, alpha = DENSE_WEIGHT);
  rrf     reciprocal-rank fusion, sum of weight / (k + rank), for comparison.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
GRID = {"rrf_k": [10, 20, 30, 60, 100], "dense_weight": [0.7, 1.0, 1.3, 1.6, 2.0],
        "alpha": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}


def fetch_rankings(home: Path, queries: dict[str, str]) -> dict[str, tuple[list, list]]:
    """query id -> (dense paper ids best first, BM25 paper ids best first)."""
    os.environ["RAGQA_HOME"] = str(home)
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.question import topic_of
    from ragqa.retrieval.retriever import Retriever
    from ragqa.retrieval.types import Filters

    settings = load_settings(os.environ)
    retriever = Retriever(Store(settings, "scifact", make_encoder(settings)))
    assert retriever.lexical is not None
    n = settings.candidates
    out = {}
    for qid, text in queries.items():
        vector = retriever.store.encoder.embed([topic_of(text)])[0]
        dense = [(pid, sim) for pid, (_, sim) in retriever._dense(vector, n, Filters()).items()]
        hits = retriever.lexical.search(text, n)
        bm25 = [(p.paper_id, score) for p, (_, score) in
                zip(retriever.lexical.papers_by_index([i for i, _ in hits]), hits, strict=True)]
        out[qid] = (dense, bm25)
    return out


def fuse(dense: list[tuple[str, float]], bm25: list[tuple[str, float]], rrf_k: float,
         dense_weight: float) -> list[str]:
    scores: dict[str, float] = {}
    for rank, (pid, _) in enumerate(dense, start=1):
        scores[pid] = dense_weight / (rrf_k + rank)
    for rank, (pid, _) in enumerate(bm25, start=1):
        scores[pid] = scores.get(pid, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores, key=lambda pid: -scores[pid])


def _scaled(ranked: list[tuple[str, float]]) -> dict[str, float]:
    from ragqa.retrieval.candidates import min_max

    return dict(zip((pid for pid, _ in ranked), min_max([s for _, s in ranked]), strict=True))


def convex(dense: list[tuple[str, float]], bm25: list[tuple[str, float]], alpha: float
           ) -> list[str]:
    """alpha * dense + (1 - alpha) * BM25, each min-max scaled; a missing score counts 0."""
    d, b = _scaled(dense), _scaled(bm25)
    scores = {pid: alpha * d.get(pid, 0.0) + (1 - alpha) * b.get(pid, 0.0) for pid in d | b}
    return sorted(scores, key=lambda pid: -scores[pid])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=("train", "test"), default="train")
    args = parser.parse_args()
    if not (args.data / f"qrels_{args.split}.tsv").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0
    from ragqa.evaluate import mean_metrics, read_qrels, read_queries
    from ragqa.retrieval.fitted import DENSE_WEIGHT

    qrels = read_qrels(args.data / f"qrels_{args.split}.tsv")
    queries = {q: t for q, t in read_queries(args.data / "queries.jsonl").items() if q in qrels}
    rankings = fetch_rankings(args.home, queries)
    rows = []
    for rrf_k, weight in itertools.product(GRID["rrf_k"], GRID["dense_weight"]):
        run = {qid: fuse(d, b, rrf_k, weight) for qid, (d, b) in rankings.items()}
        metrics = mean_metrics(run, qrels, (100,))
        rows.append({"rrf_k": rrf_k, "rrf_dense_weight": weight,
                     "ndcg@10": round(metrics["ndcg@10"], 4),
                     "recall@100": round(metrics["recall@100"], 4)})
    for alpha in GRID["alpha"]:
        run = {qid: convex(d, b, alpha) for qid, (d, b) in rankings.items()}
        metrics = mean_metrics(run, qrels, (100,))
        rows.append({"convex_alpha": alpha, "ndcg@10": round(metrics["ndcg@10"], 4),
                     "recall@100": round(metrics["recall@100"], 4),
                     "default": alpha == DENSE_WEIGHT})
    rows.sort(key=lambda r: -r["ndcg@10"])
    for name, ranked in (("dense only", 0), ("bm25 only", 1)):
        run = {qid: [pid for pid, _ in pair[ranked]] for qid, pair in rankings.items()}
        metrics = mean_metrics(run, qrels, (100,))
        rows.append({"alone": name, "ndcg@10": round(metrics["ndcg@10"], 4)})
    print(json.dumps({"split": args.split, "queries": len(queries), "grid": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
