"""Whether a question asks for papers (a list) or for something else (a claim to check, a fact
about one paper, a place in the last answer): a logistic model over named features of the
question's wording, fitted on labelled questions by bench/understanding/fit_list_question.py,
which writes ragqa/data/list_question_model.json with its provenance (data, split, figures).

Features are named, never positional: a word ("w:papers"), a pair of words ("b:has been"),
the first one or two words ("first:which", "first2:what has"), the last mark ("last:?"), the
length in words ("len:4-6") and the two together ("end:.|1-3": a short topic typed with a full
stop is no claim). Only words common across the labelled sets are features, so
that a topic's own words (a field's vocabulary) never decide the form of the question.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache

from ragqa.resources import DATA_DIR

_TOKEN = re.compile(r"[a-z0-9]+(?:['’-][a-z0-9]+)*|[?.:!;—]")
_LENGTHS = ((3, "1-3"), (6, "4-6"), (10, "7-10"), (16, "11-16"))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _length_bin(words: int) -> str:
    return next((label for top, label in _LENGTHS if words <= top), "17+")


def wording_features(text: str) -> set[str]:
    """Every feature name the question has (each counts once)."""
    toks = tokens(text)
    words = [t for t in toks if t[0].isalnum()]
    out = {f"w:{w}" for w in words}
    out |= {f"b:{a} {b}" for a, b in zip(toks, toks[1:], strict=False)}
    if words:
        out.add(f"first:{words[0]}")
        out.add(f"first2:{' '.join(words[:2])}")
    last = toks[-1] if toks and not toks[-1][0].isalnum() else "word"
    length = _length_bin(len(words))
    out |= {f"last:{last}", f"len:{length}", f"end:{last}|{length}"}
    return out


@dataclass(frozen=True)
class WordingModel:
    """A logistic model over wording_features: P(yes) = sigmoid(bias + sum of weights)."""

    weights: dict[str, float]
    bias: float
    threshold: float

    def probability(self, text: str) -> float:
        z = self.bias + sum(self.weights.get(f, 0.0) for f in wording_features(text))
        return 1.0 / (1.0 + math.exp(-z))

    def decides(self, text: str) -> bool:
        return self.probability(text) >= self.threshold

    @classmethod
    def from_json(cls, record: dict) -> WordingModel:
        return cls({k: float(v) for k, v in record["weights"].items()}, float(record["bias"]),
                   float(record["threshold"]))


@cache
def list_question_model() -> WordingModel:
    """The shipped model: does a question ask for the papers on a topic?"""
    record = json.loads((DATA_DIR / "list_question_model.json").read_text(encoding="utf-8"))
    return WordingModel.from_json(record)
