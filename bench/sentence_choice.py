"""Which sentence holds the evidence? Word overlap against the cross-encoder, on SciFact.

For each of SciFact's dev claims with rationale sentences (claims_dev_rationales.jsonl), and
each abstract that holds its evidence, every method ranks the abstract's sentences (the data
set's own segmentation, corpus_sentences.jsonl.gz); a method is right when its first sentence
is one of the rationale sentences. Methods:
- overlap: ragqa's word-overlap score (answer.lexical_sentence_scores);
- cross-encoder: the reading stage (rerank.CrossEncoder) on every sentence;
- cross-encoder + w x overlap, for a few w, on the sentences overlap ranks in its top K (what
  `ask` did before ragqa/answering/facts.py: answer.READ_SENTENCES, and the weight
  bench/reading/fit_facts.py keeps as BEFORE_LEXICAL_WEIGHT).
Half the claims (even ids) choose the weight, the other half (odd ids) report it.

    python bench/sentence_choice.py [--data ../shared/data/scifact]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
WEIGHTS = (0.0, 2.0, 5.0, 10.0, 20.0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if not (args.data / "claims_dev_rationales.jsonl").is_file():
        print(f"skipped: no SciFact rationales at {args.data}")
        return 0
    from calibrate_support import load  # the same claims and sentences

    from ragqa.answering.answer import READ_SENTENCES, lexical_sentence_scores
    from ragqa.models.rerank import cross_encoder

    claims, sentences = load(args.data)
    encoder = cross_encoder()
    cases, started, pairs = [], time.perf_counter(), 0
    for claim in claims:
        for doc, groups in claim["evidence"].items():
            gold = {i for group in groups for i in group["sentences"]}
            text = sentences.get(doc)
            if not text or not gold:
                continue
            overlap = lexical_sentence_scores(claim["claim"], text)
            read = encoder.score(claim["claim"], text)
            pairs += len(text)
            cases.append((int(claim["id"]), gold, overlap, read))
    per_pair = (time.perf_counter() - started) / max(pairs, 1) * 1000

    def right(scores: np.ndarray, gold: set[int]) -> float:
        return float(int(np.argmax(scores)) in gold)

    def mixed(overlap: np.ndarray, read: np.ndarray, weight: float) -> np.ndarray:
        top = np.argsort(-overlap)[:READ_SENTENCES]
        out = np.full(len(overlap), -np.inf)
        out[top] = read[top] + weight * overlap[top]
        return out

    calibration = [c for c in cases if c[0] % 2 == 0]
    report = [c for c in cases if c[0] % 2 == 1]
    best_weight = max(WEIGHTS, key=lambda w: np.mean([right(mixed(o, r, w), g)
                                                      for _, g, o, r in calibration]))
    figures = {
        "pairs (claim, abstract)": len(report),
        "overlap": np.mean([right(o, g) for _, g, o, _ in report]),
        "cross-encoder, all sentences": np.mean([right(r, g) for _, g, _, r in report]),
        f"cross-encoder on overlap's top {READ_SENTENCES} + {best_weight} x overlap":
            np.mean([right(mixed(o, r, best_weight), g) for _, g, o, r in report]),
        "weight chosen on the even claims": best_weight,
        "ms per (claim, sentence) pair": per_pair,
    }
    if args.json:
        print(json.dumps({k: round(float(v), 3) for k, v in figures.items()}))
        return 0
    print(f"SciFact rationales, odd claims ({len(report)} claim-abstract pairs); first sentence "
          "right:")
    for name, value in figures.items():
        print(f"  {name:55} {value:.3f}" if isinstance(value, float) else f"  {name:55} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
