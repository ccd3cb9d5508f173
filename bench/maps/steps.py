"""What each step of a map's themes costs after its layout, on a collection's cached map.

    python bench/maps/steps.py --home HOME --collection NAME [--json]

Reads the collection's map (`ragqa map` computes it first if there is none) and times, once
each, the steps `ragqa map` runs after the layout: the number of themes (the summaries' rule on
the vectors), the regions (Ward on the map), the papers apart, the sub-themes (a count and the
regions of each theme of collection_map.SPLIT_FROM papers or more), the themes' names and the
sub-themes' names (each from its collection_map.NAMING_PAPERS most central papers).
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
from ragqa.maps import collection_map as maps  # noqa: E402
from ragqa.maps.regions import NOISE, apart, map_regions  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    retriever = ragqa.open(args.collection, home=args.home)._app.retriever()
    cmap = maps.collection_map(retriever)
    vectors = retriever.store.paper_vectors([p.paper_id for p in cmap.papers])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points, seconds = cmap.points, {}

    def timed(step, work):
        started = time.perf_counter()
        value = work()
        seconds[step] = round(time.perf_counter() - started, 2)
        return value

    count = timed("count", lambda: len(np.unique(choose_themes(vectors))))
    labels = timed("regions", lambda: map_regions(points, count))
    labels[timed("apart", lambda: apart(points))] = NOISE
    labels = maps._by_size(labels)
    sub, parents = timed("subthemes", lambda: maps._subthemes(points, vectors, labels))
    timed("names", lambda: maps._names(cmap.papers, vectors, [
        np.flatnonzero(labels == t) for t in range(int(labels.max()) + 1)]))
    timed("subtheme_names", lambda: [maps._names(cmap.papers, vectors, [
        np.flatnonzero(sub == j) for j, parent in enumerate(parents) if parent == theme])
        for theme in sorted(set(parents))])
    result = {"papers": len(cmap.papers), "themes": count, "subthemes": len(parents),
              "seconds": seconds}
    print(json.dumps(result, indent=1) if args.json else
          f"{len(cmap.papers):,} papers, {count} themes, {len(parents)} sub-themes: "
          + ", ".join(f"{step} {s} s" for step, s in seconds.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
