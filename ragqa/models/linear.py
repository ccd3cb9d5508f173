"""Linear models over named features, each read from a JSON file in ragqa/data that the bench
script which fitted it wrote, with its provenance (the data, the split, the figure).

A model file holds `{"weights": {feature name: weight}, "bias": b, "provenance": {...}}`. The
code that computes a model's features names each one; `NamedLinearModel.vector(names)` puts the
weights in the order of those names, and refuses a file whose names are not the code's: a
feature added, renamed or dropped without a refit fails at load, never silently shifts a
weight onto another feature.

Here: ragqa/data/fact_sentence_model.json, which sentence of an abstract answers a fact
question (answering/facts.py), written by `bench/reading/fit_facts.py --write`. The models over
a question's wording and embedding (whether it asks for papers; what a chat turn does with the
last papers) are retrieval/kinds.py's, with files of the same kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from ragqa.resources import DATA_DIR


@dataclass(frozen=True)
class NamedLinearModel:
    """score = bias + the sum over features of weight x value."""

    weights: Mapping[str, float]
    bias: float = 0.0
    provenance: Mapping = field(default_factory=dict)

    def vector(self, names: Sequence[str]) -> np.ndarray:
        """The weights in the order of `names`, which must be exactly the model's features."""
        if set(names) != set(self.weights) or len(set(names)) != len(names):
            missing = sorted(set(names) - set(self.weights))
            unknown = sorted(set(self.weights) - set(names))
            raise ValueError(f"the model's features are not the code's (missing {missing}, "
                             f"unknown {unknown}): refit it with the script its provenance names")
        return np.array([self.weights[name] for name in names], dtype=np.float64)

    def score(self, features: Mapping[str, float]) -> float:
        return self.bias + float(self.vector(list(features)) @ np.array(
            [float(v) for v in features.values()]))

    def to_json(self) -> dict:
        return {"weights": {k: round(float(v), 4) for k, v in self.weights.items()},
                "bias": round(float(self.bias), 4), "provenance": dict(self.provenance)}

    @classmethod
    def from_json(cls, record: Mapping) -> NamedLinearModel:
        return cls({str(k): float(v) for k, v in record["weights"].items()},
                   float(record.get("bias", 0.0)), dict(record.get("provenance", {})))


def write_model(path: Path, model: NamedLinearModel) -> None:
    """Write a model file whole (a temporary file renamed over it: never half a model)."""
    write_model_record(path, model.to_json())


def write_model_record(path: Path, record: dict) -> None:
    """Write any model file's JSON record whole (the bench scripts that fit models use it)."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    temporary.replace(path)


@cache
def shipped_model(file_name: str) -> NamedLinearModel:
    """A model file of ragqa/data, read once."""
    return NamedLinearModel.from_json(json.loads((DATA_DIR / file_name).read_text(
        encoding="utf-8")))
