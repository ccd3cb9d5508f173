"""How often can any sentence chooser ragqa has quote a SciFact rationale sentence, given the
evidence paper? The ceiling under bench/reading/scifact_quotes.py's `rationale_quoted`.

For every (claim, evidence abstract) of claims_dev_rationales.jsonl, each chooser picks one
sentence of the abstract (SciFact's own segmentation); reported is the share that is a rationale
sentence, on the `dev` part (claims not at positions 0, 3, 6, …) and the `report` part (those).
Choosers: the cross-encoder alone, the word overlap alone, their mix, the fact answer's fitted
signals (ragqa/answering/facts.py), and the cross-encoder with a later-sentence prior and the
abstract's own RESULTS/CONCLUSIONS labels (weights set by hand on the dev part).

    python bench/reading/scifact_ceiling.py [--data ../shared/data/scifact]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "scifact"
EVERY = 3  # as scifact_quotes.py: every third claim is the report part
_LABEL = re.compile(r"^\s*(?:CONCLUSIONS?|RESULTS?|FINDINGS|INTERPRETATION)\b")


def cases(data: Path):
    """(part, labels, signals per sentence) for each claim's evidence abstract."""
    from ragqa.answering.answer import lexical_sentence_scores
    from ragqa.answering.facts import fact_scores, sentence_signals
    from ragqa.models.rerank import cross_encoder

    with gzip.open(data / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as lines:
        sentences = {str(r["_id"]): r["sentences"] for r in map(json.loads, lines)}
    claims = [json.loads(line) for line in (data / "claims_dev_rationales.jsonl").open()]
    for i, claim in enumerate(claims):
        for doc, evidence in claim["evidence"].items():
            ss = sentences.get(doc)
            if not ss:
                continue
            rationale = {j for e in evidence for j in e["sentences"]}
            labels = np.array([j in rationale for j in range(len(ss))], dtype=float)
            ce = cross_encoder().score(claim["claim"], ss)
            yield ("report" if i % EVERY == 0 else "dev", labels, {
                "cross_encoder": ce,
                "overlap": lexical_sentence_scores(claim["claim"], ss),
                "facts": fact_scores(sentence_signals(claim["claim"], ss, " ".join(ss), ""), ce),
                "position": np.arange(len(ss)) / max(len(ss) - 1, 1),
                "label": np.array([bool(_LABEL.match(s)) for s in ss], dtype=float)})


CHOOSERS = {
    "cross-encoder": lambda s: s["cross_encoder"],
    "overlap": lambda s: s["overlap"],
    "cross-encoder + 2 x overlap": lambda s: s["cross_encoder"] + 2 * s["overlap"],
    "fact answer (facts.py)": lambda s: s["facts"],
    "cross-encoder + 2 x overlap + 3 x position + 2 x label":
        lambda s: s["cross_encoder"] + 2 * s["overlap"] + 3 * s["position"] + 2 * s["label"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if not (args.data / "corpus_sentences.jsonl.gz").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0
    rows = list(cases(args.data))
    report = {}
    for name, choose in CHOOSERS.items():
        report[name] = {part: round(float(np.mean([y[int(np.argmax(choose(s)))]
                                                   for p, y, s in rows if p == part])), 3)
                        for part in ("dev", "report")}
    report["evidence abstracts"] = {part: sum(p == part for p, _, _ in rows)
                                    for part in ("dev", "report")}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
