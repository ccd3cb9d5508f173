"""The multinomial fit shared by the choice models (retrieval/kinds.py ChoiceModel):
fit_followup_kind.py and fit_fact_kind.py. Rows are dicts with "features" (named values), a
"kind" and a "source" (which labelled set: a feature must occur in MIN_SOURCES of them, so
that a topic's own words never decide a kind)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

MIN_COUNT = 4
MIN_SOURCES = 2


def vocabulary(rows: list[dict]) -> list[str]:
    count, sources = Counter(), {}
    for row in rows:
        for f in row["features"]:
            count[f] += 1
            sources.setdefault(f, set()).add(row["source"])
    return sorted(f for f, n in count.items() if f.startswith("cue:") or
                  (n >= MIN_COUNT and len(sources[f]) >= MIN_SOURCES))


def design(rows: list[dict], names: list[str], vectors: np.ndarray, scale: float) -> np.ndarray:
    where = {n: i for i, n in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    for r, row in enumerate(rows):
        for f, v in row["features"].items():
            if f in where:
                x[r, where[f]] = v
    return np.hstack([x, scale * vectors]) if scale else x


def fit_softmax(x: np.ndarray, y: np.ndarray, k: int, l2: float,
                sample: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Weights (features x kinds) and biases by L-BFGS on the L2-penalised log-loss, each kind
    weighted to equal total mass, each row also by its `sample` weight (default 1)."""
    from scipy.optimize import minimize

    n, d = x.shape
    onehot = np.eye(k)[y]
    mass = (n / (k * np.maximum(onehot.sum(0), 1)))[y]
    if sample is not None:
        mass = mass * sample

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:d * k].reshape(d, k), theta[d * k:]
        z = x @ w + b
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        value = -float(np.sum(mass * np.log(p[np.arange(n), y] + 1e-12))) + \
            0.5 * l2 * float(np.sum(w * w))
        g = (p - onehot) * mass[:, None]
        return value, np.concatenate([(x.T @ g + l2 * w).ravel(), g.sum(0)])

    theta = minimize(loss, np.zeros(d * k + k), jac=True, method="L-BFGS-B",
                     options={"maxiter": 3000}).x
    return theta[:d * k].reshape(d, k), theta[d * k:]


class Fit:
    """Rows, their vectors (MiniLM's or multilingual-e5's), kinds and weights; fits on a mask,
    predicts on another."""

    def __init__(self, rows: list[dict], vectors: np.ndarray, kinds: tuple[str, ...],
                 l2: float, sample: np.ndarray | None = None) -> None:
        self.rows, self.vectors, self.kinds, self.l2 = rows, vectors, kinds, l2
        self.y = np.array([kinds.index(r["kind"]) for r in rows])
        self.sample = np.ones(len(rows)) if sample is None else sample

    def _rows(self, mask: np.ndarray) -> list[dict]:
        return [r for r, m in zip(self.rows, mask, strict=True) if m]

    def fit(self, mask: np.ndarray, scale: float) -> dict:
        names = vocabulary(self._rows(mask))
        x = design(self._rows(mask), names, self.vectors[mask], scale)
        w, b = fit_softmax(x, self.y[mask], len(self.kinds), self.l2, self.sample[mask])
        return {"names": names, "w": w, "b": b, "scale": scale}

    def predict(self, fitted: dict, mask: np.ndarray) -> np.ndarray:
        x = design(self._rows(mask), fitted["names"], self.vectors[mask], fitted["scale"])
        return np.argmax(x @ fitted["w"] + fitted["b"], axis=1)

    def accuracy(self, fitted: dict, mask: np.ndarray) -> float:
        return float(np.mean(self.predict(fitted, mask) == self.y[mask]))


def model_record(chosen: dict, kinds: tuple[str, ...], embedder: str) -> dict:
    """A fitted model as retrieval/kinds.py ChoiceModel reads it (the embedding's scale folded
    into its sense weights; `embedder` names whose vectors they weigh), before its provenance."""
    names, w = chosen["names"], chosen["w"]
    return {
        "kinds": list(kinds),
        "weights": {name: [round(float(v), 5) for v in w[i]] for i, name in enumerate(names)},
        "bias": [round(float(v), 5) for v in chosen["b"]],
        "sense": None if not chosen["scale"] else {
            "embedder": embedder, "scale": chosen["scale"],
            "weights": [[round(float(v) * chosen["scale"], 6) for v in row]
                        for row in w[len(names):]]}}


def show(figures: dict, as_json: bool) -> None:
    """The figures as JSON, or one line per entry under each heading."""
    if as_json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        print(key)
        for k, v in value.items():
            print(f"  {k:24} {v}")
