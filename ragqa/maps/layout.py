"""Papers' vectors to points in two dimensions.

The layout is t-SNE as openTSNE computes it (FFT-accelerated, cosine neighbours): of the
libraries measured it keeps the most of each paper's ten nearest neighbours next to it on the
map (`bench/maps/layouts.py`, figures in docs/benchmarks.md#maps). Papers added to a collection
later are placed among the neighbours they have in the vectors (`place`), without laying
everything out again, until they are too many (`collection_map.RELAYOUT_SHARE`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Below this many papers t-SNE has too few neighbours to weigh: the two main axes of the
# vectors (PCA) place them instead.
MIN_TSNE_PAPERS = 10
PERPLEXITY = 30  # openTSNE's default; capped at (n - 1) / 3 for small collections
PLACE_NEIGHBOURS = 5
NUDGE = 0.002  # of the map's width: a placed paper beside its neighbour, not on top of it
# Barnes-Hut below this many papers, FFT above (openTSNE's own advice): FFT has a fixed cost per
# step that makes 1,000 papers take 10.6 s against BH's 2.6 s, one thread, on the nips2018 +
# acl2022 vectors (bench/maps/layouts.py --methods opentsne-bh,opentsne).
FFT_FROM = 10_000
METHOD = "openTSNE"

Progress = Callable[[str], None]


def method_name(n: int) -> str:
    """How `fit_layout` lays out n papers, as the map's JSON reports it."""
    from importlib.metadata import version

    if n < 2:
        return "one paper"
    if n < MIN_TSNE_PAPERS:
        return "PCA"
    return f"{METHOD} {version('openTSNE')}" + (" (FFT)" if n >= FFT_FROM else "")


def fit_layout(vectors: np.ndarray, seed: int = 0, progress: Progress | None = None
               ) -> np.ndarray:
    """One (x, y) per vector, scaled into the unit square (aspect kept). Deterministic per
    seed."""
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2))
    if n == 1:
        return np.full((1, 2), 0.5)
    if n < MIN_TSNE_PAPERS:
        return unit_square(_pca(vectors))
    return unit_square(_tsne(vectors, seed, progress))


def _pca(vectors: np.ndarray) -> np.ndarray:
    centred = vectors - vectors.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    out = centred @ axes[:2].T
    return out if out.shape[1] == 2 else np.column_stack([out, np.zeros(len(out))])


def _tsne(vectors: np.ndarray, seed: int, progress: Progress | None) -> np.ndarray:
    from openTSNE import TSNE

    n = len(vectors)
    callbacks = None
    if progress is not None:
        total = 750  # openTSNE: 250 early-exaggeration iterations, then 500
        done = [0]

        def report(iteration: int, error: float, embedding: object) -> bool:
            done[0] += 50
            progress(f"Laying out {n:,} papers: {min(done[0], total)} of {total} steps")
            return False  # go on

        callbacks = report
    # One thread below FFT_FROM: with two, the optimiser's threads wait on each other (29 papers
    # took 17 s on a busy machine, 0.26 s on one thread).
    tsne = TSNE(n_components=2, perplexity=min(PERPLEXITY, (n - 1) / 3), metric="cosine",
                n_jobs=2 if n >= FFT_FROM else 1, random_state=seed, verbose=False,
                negative_gradient_method="fft" if n >= FFT_FROM else "bh",
                callbacks=callbacks, callbacks_every_iters=50)
    return np.asarray(tsne.fit(np.asarray(vectors, dtype=np.float32)), dtype=np.float64)


def unit_square(points: np.ndarray) -> np.ndarray:
    """Points moved and scaled into [0, 1]², centred, the longer side spanning it."""
    low, high = points.min(axis=0), points.max(axis=0)
    span = float((high - low).max()) or 1.0
    return (points - (low + high) / 2) / span + 0.5


def place(new_vectors: np.ndarray, vectors: np.ndarray, points: np.ndarray,
          neighbours: int = PLACE_NEIGHBOURS) -> np.ndarray:
    """Where papers added after the layout go: at the medoid of the points of their nearest
    laid-out papers (the one of them closest to the others), nudged so as not to hide it.
    A mean of those points lands between clusters: chosen on a 5,000-paper sample
    (bench/maps/placing.py), placed papers kept 0.33 of their 10 nearest neighbours with the
    medoid of 5, 0.19 with the mean of 5, 0.34 with openTSNE's own transform (which needs its
    fitted model kept), 0.40 for papers laid out with the rest."""
    if len(new_vectors) == 0 or len(vectors) == 0:
        return np.full((len(new_vectors), 2), 0.5)
    k = min(neighbours, len(vectors))
    nudge = np.random.default_rng(0).normal(0.0, NUDGE, (len(new_vectors), 2))
    out = np.zeros((len(new_vectors), 2))
    for start in range(0, len(new_vectors), 512):
        similarity = new_vectors[start:start + 512] @ vectors.T
        nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        near = points[nearest]  # (batch, k, 2)
        spread = ((near[:, :, None, :] - near[:, None, :, :]) ** 2).sum(axis=-1).sum(axis=-1)
        out[start:start + 512] = near[np.arange(len(near)), np.argmin(spread, axis=1)]
    return out + nudge
