"""Should the cross-encoder rerank the candidates of claims and fact questions? Measured on BEIR
SciFact: the hybrid ranking's top RERANK_DEPTH papers are read by the cross-encoder
(ms-marco-MiniLM-L-12-v2, ragqa/models/rerank.py), each paper by its best sentences (by word overlap
with the claim: a pair of a claim and a sentence costs ~12 ms, a whole abstract ~58 ms), and the
paper's best logit is mixed with the hybrid score. The mix weight is chosen on SciFact's train
claims and reported on the test claims, with and without reranking, with the time it costs.

    python bench/rerank.py --home DIR [--depth 20] [--sentences 2] [--limit N]
    python bench/rerank.py --reading seeds --home DIR [--collection seeds]
    python bench/rerank.py --reading nips2018 --home DIR [--collection nips2018]

DIR is a RAGQA_HOME holding the `scifact` collection (`python bench/scifact.py --home DIR`
builds it). Prints one table; `--json` for the figures.

`--reading SET` measures the same reranking on the fact questions of bench/reading/SET.json
(issue 13's dev sets; the collection must hold that set's papers, as bench/reading/eval.py
builds it): the share of facts whose right paper comes first, without reranking and at each
weight (the weight SciFact's train claims choose is the one to read; the others show the
range, not a choice made on these questions).
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
READING = Path(__file__).resolve().parent / "reading"
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
    from ragqa.answering.answer import lexical_sentence_scores
    from ragqa.models.rerank import cross_encoder
    from ragqa.text import split_sentences

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


def reading_first(retriever, set_name: str, depth: int, sentences: int) -> dict:
    """Right paper first, per weight, over the set's fact questions (candidates as `ask` finds
    them, no cut: a fact question's hits before the cut)."""
    facts = json.loads((READING / f"{set_name}.json").read_text(encoding="utf-8"))["facts"]
    claims = {str(i): fact["question"] for i, fact in enumerate(facts)}
    runs, seconds = candidates(retriever, claims, depth, sentences)
    titles = {}
    for qid, (ids, _, _) in runs.items():
        titles[qid] = {pid: p.title for pid, p in zip(
            ids, retriever.lexical.papers_by_index(
                [retriever.lexical.index_of(pid) for pid in ids]), strict=True)}

    def right(qid: str, first: str) -> bool:
        fact = facts[int(qid)]
        return first == fact.get("paper_id") or titles[qid][first] == fact.get("title")

    first = {str(w): round(float(np.mean([right(q, ids[0]) for q, ids in
                                          reranked(runs, w).items() if ids])), 3)
             for w in WEIGHTS}
    return {"facts": len(facts), "rerank_ms_p50": round(1000 * float(np.median(seconds)), 1),
            "right_paper_first": first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--sentences", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="at most N claims per split")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reading", choices=("seeds", "nips2018"),
                        help="the fact questions of bench/reading/SET.json instead of SciFact")
    parser.add_argument("--collection", help="with --reading: the collection (default SET)")
    args = parser.parse_args()
    if args.reading:
        return main_reading(args)
    if not (DATA / "queries.jsonl").is_file():
        print(f"skipped: no SciFact data at {DATA}")
        return 0
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

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


def main_reading(args) -> int:  # noqa: ANN001
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, args.collection or args.reading, make_encoder(settings))
    report = {"set": args.reading, "depth": args.depth, "sentences": args.sentences,
              **reading_first(Retriever(store), args.reading, args.depth, args.sentences)}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.reading}: {report['facts']} facts, rerank p50 {report['rerank_ms_p50']} ms;"
              " right paper first: " + ", ".join(
                  f"w={w}: {v}" for w, v in report["right_paper_first"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
