"""Should the cross-encoder rerank the candidates of claims and fact questions? Measured on BEIR
SciFact: the hybrid ranking's top RERANK_DEPTH papers are read by the cross-encoder
(ms-marco-MiniLM-L-12-v2, ragqa/rerank.py), each paper by its best sentences (by word overlap
with the claim: a pair of a claim and a sentence costs ~12 ms, a whole abstract ~58 ms), and the
paper's best logit is mixed with the hybrid score. The mix weight is chosen on SciFact's train
claims and reported on the test claims, with and without reranking, with the time it costs.

    python bench/rerank.py --home DIR [--depth 20] [--sentences 2] [--limit N]

DIR is a RAGQA_HOME holding the `scifact` collection (`python bench/scifact.py --home DIR`
builds it). Prints one table; `--json` for the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ragqa.evaluate import mean_metrics, read_qrels

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def read_claims(split: str) -> dict[str, str]:
    claims = {}
    for line in (DATA / "queries.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("split") == split:
            claims[str(record["_id"])] = record["text"]
    return claims


def candidates(retriever, claims: dict[str, str], depth: int, sentences: int):
    """Per claim: the hybrid top 100 (ids and fused scores) and, for the top `depth`, the
    cross-encoder's best logit over each paper's best `sentences` sentences."""
    from ragqa.answer import lexical_sentence_scores
    from ragqa.corpus import split_sentences
    from ragqa.rerank import cross_encoder

    encoder = cross_encoder()
    runs, seconds = {}, []
    for qid, claim in claims.items():
        hits = retriever.search(claim, k=100, cut=False, sentences=False).hits
        started = time.perf_counter()
        logits = []
        for hit in hits[:depth]:
            found = split_sentences(hit.paper.text) or [hit.paper.text]
            overlap = lexical_sentence_scores(claim, found)
            best = [found[i] for i in np.argsort(-overlap)[:sentences]]
            logits.append(float(encoder.score(claim, best).max()))
        seconds.append(time.perf_counter() - started)
        runs[qid] = ([h.paper.paper_id for h in hits], [h.score for h in hits], logits)
    return runs, seconds


def reranked(runs, weight: float) -> dict[str, list[str]]:
    """The top `depth` reordered by fused score + weight x logit; the rest as they were."""
    out = {}
    for qid, (ids, scores, logits) in runs.items():
        depth = len(logits)
        mixed = [s + weight * g for s, g in zip(scores[:depth], logits, strict=True)]
        order = sorted(range(depth), key=lambda i: -mixed[i])
        out[qid] = [ids[i] for i in order] + ids[depth:]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="at most N claims per split")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (DATA / "queries.jsonl").is_file():
        print(f"skipped: no SciFact data at {DATA}")
        return 0
    from ragqa.config import load_settings
    from ragqa.embeddings import make_encoder
    from ragqa.retrieve import Retriever
    from ragqa.store import Store

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    retriever = Retriever(Store(settings, "scifact", make_encoder(settings)))
    report: dict = {"depth": args.depth, "sentences": args.sentences}
    for split in ("train", "test"):
        qrels = read_qrels(DATA / f"qrels_{split}.tsv")
        claims = {q: t for q, t in read_claims(split).items() if q in qrels}
        if args.limit:
            claims = dict(list(claims.items())[:args.limit])
            qrels = {q: qrels[q] for q in claims}  # the mean is over the claims measured
        runs, seconds = candidates(retriever, claims, args.depth, args.sentences)
        report[split] = {"claims": len(claims),
                         "rerank_ms_p50": round(1000 * float(np.median(seconds)), 1),
                         "ndcg@10": {str(w): round(mean_metrics(reranked(runs, w), qrels)
                                                   ["ndcg@10"], 4) for w in WEIGHTS}}
    train = report["train"]["ndcg@10"]
    best = max(train, key=lambda w: train[w])
    report["chosen_weight"] = float(best)
    report["test_without"] = report["test"]["ndcg@10"]["0.0"]
    report["test_with"] = report["test"]["ndcg@10"][best]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for split in ("train", "test"):
            r = report[split]
            print(f"{split}: {r['claims']} claims, rerank p50 {r['rerank_ms_p50']} ms; nDCG@10 "
                  + ", ".join(f"w={w}: {v}" for w, v in r["ndcg@10"].items()))
        print(f"weight chosen on train: {best}; test nDCG@10 {report['test_without']} without, "
              f"{report['test_with']} with reranking")
    return 0


if __name__ == "__main__":
    sys.exit(main())
