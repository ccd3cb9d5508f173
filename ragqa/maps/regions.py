"""Themes that are regions of the map: the papers grouped where the layout shows them.

The themes used to be the summaries' (k-means on the vectors), which t-SNE's layout does not
keep together: on ACL 2021+2022 and ACML (2,555 papers) a paper's 10 nearest points on the map
shared its theme 0.636 of the time, and every colour was mixed with every other. Grouped on the
map itself (Ward's agglomerative clustering of the 2-D points, merging only neighbours on a
10-nearest-neighbour graph, so that each theme is one contiguous region), they share it 0.963,
and the themes are tighter in the vectors too (0.702 against 0.660 of the 10 nearest by
cosine); 12,842 papers of 17 conferences: 0.716 → 0.990 (`python bench/maps/regions.py`,
docs/benchmarks.md, "Maps"). The number of themes is the
summaries' rule (the silhouette on the vectors, answering.summarize.choose_themes).
"""

from __future__ import annotations

import warnings

import numpy as np

NEIGHBOURS = 10  # of the connectivity graph, and of the purity measure


def map_regions(points: np.ndarray, count: int) -> np.ndarray:
    """`count` themes over the 2-D points, each a contiguous region: a label per point."""
    n = len(points)
    if count < 2 or n < 2 * count:
        return np.zeros(n, dtype=np.int64)
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.neighbors import kneighbors_graph

    graph = kneighbors_graph(points, min(NEIGHBOURS, n - 1), include_self=False)
    with warnings.catch_warnings():
        # A graph of several components is joined by sklearn itself, which says so.
        warnings.simplefilter("ignore", UserWarning)
        labels = AgglomerativeClustering(count, linkage="ward",
                                         connectivity=graph).fit_predict(points)
    return labels.astype(np.int64)


def label_by_neighbours(points: np.ndarray, placed_points: np.ndarray,
                        placed_labels: np.ndarray) -> np.ndarray:
    """The theme of each of `points` (papers placed on an existing map): the one most of its
    nearest placed papers have."""
    nearest = _nearest(placed_points, points, min(NEIGHBOURS, len(placed_points)))
    return np.array([np.bincount(placed_labels[row]).argmax() for row in nearest],
                    dtype=np.int64)


def map_purity(points: np.ndarray, labels: np.ndarray, k: int = NEIGHBOURS) -> float:
    """The share of each paper's k nearest other points on the map that are of its theme,
    averaged: 1.0 when every theme is a region apart, about the largest theme's share when
    colours are mixed at random."""
    n = len(points)
    if n < 2:
        return 1.0
    nearest = _nearest(points, points, min(k, n - 1) + 1)[:, 1:]  # itself first
    return float((labels[nearest] == labels[:, None]).mean())


def _nearest(among: np.ndarray, of: np.ndarray, k: int) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=k).fit(among).kneighbors(of, return_distance=False)
