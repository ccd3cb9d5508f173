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

Two more layers, as the data maps people put in reports have them (datamapplot, Nomic Atlas):
papers far from every group are apart (`NOISE`, grey on the map, in no theme), and the themes
of a large collection are split into sub-themes, regions inside their region, whose names the
page shows when it is zoomed in.
"""

from __future__ import annotations

import warnings

import numpy as np

NEIGHBOURS = 10  # of the connectivity graph, and of the purity measure
NOISE = -1  # the label of a paper apart from every theme
# A map of fewer papers has none apart: t-SNE spreads 29 papers evenly, and each is its own.
NOISE_FROM = 100
# A paper is apart when its NEIGHBOURS-th nearest point on the map is farther than Tukey's
# far-out fence of those distances (third quartile + 3 interquartile ranges): a rule, not a
# fitted figure. It leaves 5 of ACML's 814 papers apart and 2 of NeurIPS 2018's 1,001.
FAR_OUT = 3.0


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


def apart(points: np.ndarray) -> np.ndarray:
    """Which papers lie apart from every group on the map (a mask)."""
    n = len(points)
    if n < NOISE_FROM:
        return np.zeros(n, dtype=bool)
    from sklearn.neighbors import NearestNeighbors

    distances, _ = NearestNeighbors(n_neighbors=NEIGHBOURS + 1).fit(points).kneighbors(points)
    reach = distances[:, -1]  # itself first, at 0
    low, high = np.percentile(reach, [25, 75])
    return reach > high + FAR_OUT * (high - low)


def split_regions(points: np.ndarray, labels: np.ndarray, counts: dict[int, int]
                  ) -> tuple[np.ndarray, list[int]]:
    """Sub-themes: each theme `t` of `counts` cut into counts[t] regions of its own points (a
    count below 2 leaves it whole, with no sub-theme). A sub-theme label per point (NOISE where
    none) and each sub-theme's theme."""
    sub = np.full(len(points), NOISE, dtype=np.int64)
    parents: list[int] = []
    for theme, count in sorted(counts.items()):
        members = np.flatnonzero(labels == theme)
        if count < 2:
            continue
        inner = map_regions(points[members], count)
        for part in np.unique(inner):
            sub[members[inner == part]] = len(parents)
            parents.append(theme)
    return sub, parents


def label_by_neighbours(points: np.ndarray, placed_points: np.ndarray,
                        placed_labels: np.ndarray) -> np.ndarray:
    """The theme of each of `points` (papers placed on an existing map): the one most of its
    nearest placed papers have."""
    nearest = _nearest(placed_points, points, min(NEIGHBOURS, len(placed_points)))
    shifted = placed_labels - NOISE  # bincount counts from 0; NOISE is -1
    return np.array([np.bincount(shifted[row]).argmax() for row in nearest],
                    dtype=np.int64) + NOISE


def map_purity(points: np.ndarray, labels: np.ndarray, k: int = NEIGHBOURS) -> float:
    """The share of each paper's k nearest other points on the map that are of its theme,
    averaged over the papers in a theme (not those apart): 1.0 when every theme is a region
    apart, about the largest theme's share when colours are mixed at random."""
    n = len(points)
    if n < 2:
        return 1.0
    nearest = _nearest(points, points, min(k, n - 1) + 1)[:, 1:]  # itself first
    themed = labels != NOISE
    if not themed.any():
        return 1.0
    return float((labels[nearest] == labels[:, None])[themed].mean())


def _nearest(among: np.ndarray, of: np.ndarray, k: int) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=k).fit(among).kneighbors(of, return_distance=False)
