"""Calibrate the citation support threshold (ragqa.answering.answer.SUPPORT_THRESHOLD) on SciFact.

A cited sentence is "supported" when its best cosine similarity to a sentence of the abstract it
cites reaches the threshold. SciFact's claims_dev_rationales.jsonl says, for 188 claims, which
abstract sentences SUPPORT them: those pairs are the positives. The negatives are what a wrong
citation looks like: the same claim against the sentences of the abstract BM25 ranks highest
among those that are not its evidence (a hard negative: same topic, other paper).

    python bench/calibrate_support.py [--data ../shared/data/scifact] [--json]

Prints, per threshold, the share of supported claims that would be flagged (false alarms) and
the share of wrong citations caught, and the threshold that keeps false alarms at or under 5 %.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def load(data: Path) -> tuple[list[dict], dict[str, list[str]]]:
    claims = [json.loads(line) for line in (data / "claims_dev_rationales.jsonl").open()]
    with gzip.open(data / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as handle:
        sentences = {r["_id"]: r["sentences"] for r in map(json.loads, handle)}
    return claims, sentences


def hard_negatives(claims: list[dict], sentences: dict[str, list[str]]) -> dict[str, str]:
    """claim id -> the best BM25 match among abstracts that are not its evidence."""
    import bm25s
    import Stemmer

    ids = list(sentences)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([" ".join(sentences[i]) for i in ids], stopwords="en",
                                   stemmer=stemmer, show_progress=False), show_progress=False)
    out = {}
    for claim in claims:
        tokens = bm25s.tokenize([claim["claim"]], stopwords="en", stemmer=stemmer,
                                return_ids=False, show_progress=False)[0]
        scores = retriever.get_scores(tokens)
        for index in np.argsort(-scores)[:10]:
            if ids[index] not in claim["evidence"]:
                out[claim["id"]] = ids[index]
                break
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.data / "claims_dev_rationales.jsonl").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0

    from ragqa.answering.answer import SUPPORT_THRESHOLD
    from ragqa.models.encoders import LocalMiniLM

    claims, sentences = load(args.data)
    negatives = hard_negatives(claims, sentences)
    encoder = LocalMiniLM()
    positive, negative = [], []
    for claim in claims:
        vector = encoder.embed([claim["claim"]])[0]
        support = []
        for doc_id, rationales in claim["evidence"].items():
            indices = {i for r in rationales if r["label"] == "SUPPORT" for i in r["sentences"]}
            chosen = [sentences[doc_id][i] for i in sorted(indices) if i < len(sentences[doc_id])]
            if chosen:
                support.append(float(np.max(encoder.embed(chosen) @ vector)))
        if support:
            positive.append(max(support))
        other = negatives.get(claim["id"])
        if other and sentences.get(other):
            negative.append(float(np.max(encoder.embed(sentences[other]) @ vector)))
    pos, neg = np.array(positive), np.array(negative)
    rows = []
    for threshold in np.arange(0.20, 0.71, 0.05):
        rows.append({"threshold": round(float(threshold), 2),
                     "supported_flagged": round(float((pos < threshold).mean()), 3),
                     "wrong_citations_caught": round(float((neg < threshold).mean()), 3)})
    allowed = [r for r in rows if r["supported_flagged"] <= 0.05]
    chosen = max(allowed, key=lambda r: r["threshold"]) if allowed else rows[0]
    report = {"positives": len(pos), "negatives": len(neg),
              "positive_median": round(float(np.median(pos)), 3),
              "negative_median": round(float(np.median(neg)), 3),
              "rows": rows, "suggested": chosen["threshold"], "in_use": SUPPORT_THRESHOLD}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(pos)} supported claims (median best cosine {report['positive_median']}), "
          f"{len(neg)} wrong citations (median {report['negative_median']})")
    print(f"{'threshold':>9}  {'supported flagged':>17}  {'wrong caught':>12}")
    for r in rows:
        print(f"{r['threshold']:>9.2f}  {r['supported_flagged']:>17.1%}  "
              f"{r['wrong_citations_caught']:>12.1%}")
    print(f"suggested (<= 5 % false alarms): {chosen['threshold']}; in use: {SUPPORT_THRESHOLD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
