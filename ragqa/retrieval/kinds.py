"""Whether a question asks for papers (a list) or for something else (a claim to check, a fact
about one paper, a place in the last answer): a logistic model fitted on labelled questions by
bench/understanding/fit_list_question.py, which writes ragqa/data/list_question_model.json with
its provenance (data, split, figures).

Two parts, summed before the sigmoid:
- the wording, as named features (never positional): a word ("w:papers"), a pair of words
  ("b:has been"), the first one or two words ("first:which", "first2:what has"), the last mark
  ("last:?"), the length in words ("len:4-6") and the two together ("end:.|1-3": a short topic
  typed with a full stop is no claim). Only words common across the labelled sets are features,
  so that a field's own words never decide the form of a question;
- the sense: one weight vector over the question's embedding by the bundled MiniLM (whatever
  embedder the collection uses). It reads what no listed word covers: each labelled source
  left out in turn is read right 0.974 of the time with it, 0.961 without; a blind set of new
  wordings 0.926 against 0.831 (`fit_list_question.py --compare`, docs/benchmarks.md).
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from ragqa.resources import DATA_DIR

_TOKEN = re.compile(r"[a-z0-9]+(?:['’-][a-z0-9]+)*|[?.:!;—]")
_LENGTHS = ((3, "1-3"), (6, "4-6"), (10, "7-10"), (16, "11-16"))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _length_bin(words: int) -> str:
    return next((label for top, label in _LENGTHS if words <= top), "17+")


def wording_features(text: str) -> set[str]:
    """Every wording feature the question has (each counts once)."""
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


_ENCODER_LOCK = threading.Lock()


@cache
def _encoder():  # noqa: ANN202 - models.encoders.LocalMiniLM, imported late (onnxruntime)
    from ragqa.models.encoders import LocalMiniLM

    return LocalMiniLM(workers=1)


def question_vectors(texts: list[str]) -> np.ndarray:
    """The questions' embeddings by the bundled MiniLM, the model's sense features."""
    with _ENCODER_LOCK:
        return _encoder().embed(texts).astype(np.float64)


@lru_cache(maxsize=512)
def _question_vector(text: str) -> np.ndarray:
    return question_vectors([text])[0]


@dataclass(frozen=True)
class WordingModel:
    """P(yes) = sigmoid(bias + the weights of the question's wording features + the sense
    weights . its MiniLM embedding)."""

    weights: dict[str, float]
    bias: float
    threshold: float
    sense: np.ndarray | None = None

    def logit(self, text: str) -> float:
        z = self.bias + sum(self.weights.get(f, 0.0) for f in wording_features(text))
        if self.sense is not None:
            z += float(_question_vector(text) @ self.sense)
        return z

    def probability(self, text: str) -> float:
        return 1.0 / (1.0 + math.exp(-self.logit(text)))

    def decides(self, text: str) -> bool:
        return self.probability(text) >= self.threshold

    @classmethod
    def from_json(cls, record: dict) -> WordingModel:
        sense = record.get("sense")
        return cls({k: float(v) for k, v in record["weights"].items()}, float(record["bias"]),
                   float(record["threshold"]),
                   np.asarray(sense["weights"], dtype=np.float64) if sense else None)


@cache
def list_question_model() -> WordingModel:
    """The shipped model: does a question ask for the papers on a topic?"""
    record = json.loads((DATA_DIR / "list_question_model.json").read_text(encoding="utf-8"))
    return WordingModel.from_json(record)
