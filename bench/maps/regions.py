"""Are a map's themes regions of it? The themes as shipped before (the summaries' k-means on the
vectors) against the map's own regions (ragqa.maps.regions), on the same layout.

    python bench/maps/regions.py --collection /work/readhome:acl2021 --collection \\
        /work/readhome:acl2022 --collection /work/maphome:acml [--json]

Each `--collection HOME:NAME` adds a collection's papers (vectors as the map reads them); the
layout is ragqa's (openTSNE, seed 0). Reported for each way of making themes: how many, the map
purity (the share of each paper's 10 nearest points on the map that are of its theme) and the
vector purity (the same for its 10 nearest papers by cosine in the vectors: whether a region is
still a subject).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ragqa  # noqa: E402
from ragqa.answering.summarize import choose_themes  # noqa: E402
from ragqa.maps.layout import fit_layout  # noqa: E402
from ragqa.maps.regions import NEIGHBOURS, NOISE, apart, map_purity, map_regions  # noqa: E402


def vectors_of(spec: str) -> np.ndarray:
    home, _, name = spec.rpartition(":")
    retriever = ragqa.open(name, home=home)._app.retriever()
    papers = retriever.lexical.all_papers()
    return retriever.store.paper_vectors([p.paper_id for p in papers])


def vector_purity(vectors: np.ndarray, labels: np.ndarray) -> float:
    """The share of each themed paper's 10 nearest papers by cosine that share its theme (in
    blocks: 37,932 papers' similarities at once would take 11 GB)."""
    vectors = vectors.astype(np.float32)
    same = []
    for start in range(0, len(vectors), 2000):
        similarity = vectors[start:start + 2000] @ vectors.T
        rows = np.arange(len(similarity))
        similarity[rows, start + rows] = -np.inf
        nearest = np.argpartition(-similarity, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
        mine = labels[start:start + 2000]
        same.append((labels[nearest] == mine[:, None])[mine != NOISE])
    return float(np.concatenate(same).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", action="append", required=True, help="HOME:NAME")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    vectors = np.vstack([vectors_of(spec) for spec in args.collection])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = time.perf_counter()
    points = fit_layout(vectors)
    layout_seconds = time.perf_counter() - started
    before = choose_themes(vectors)
    count = len(np.unique(before))
    started = time.perf_counter()
    after = map_regions(points, count)
    region_seconds = time.perf_counter() - started
    shipped = after.copy()
    shipped[apart(points)] = NOISE
    rows = {name: {"themes": int(len(np.unique(labels[labels != NOISE]))),
                   "apart": int((labels == NOISE).sum()),
                   "map_purity": round(map_purity(points, labels), 3),
                   "vector_purity": round(vector_purity(vectors, labels), 3),
                   "largest_share": round(float(np.bincount(labels[labels != NOISE]).max()
                                                / len(labels)), 3)}
            for name, labels in (("k-means on the vectors (before)", before),
                                 ("regions of the map", after),
                                 ("regions, papers apart grey (shipped)", shipped))}
    result = {"collections": args.collection, "papers": len(vectors),
              "layout_seconds": round(layout_seconds, 1),
              "regions_seconds": round(region_seconds, 2), "themes": rows}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{len(vectors):,} papers ({', '.join(args.collection)}); layout "
          f"{layout_seconds:.0f} s, regions {region_seconds:.1f} s")
    for name, row in rows.items():
        print(f"  {name:38s} themes {row['themes']:2d}  apart {row['apart']:3d}  "
              f"map purity {row['map_purity']:.3f}  "
              f"vector purity {row['vector_purity']:.3f}  largest {row['largest_share']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
