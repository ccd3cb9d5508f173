"""A map's themes named from each theme's most central papers against from all of its papers:
the names and the time each takes (collection_map.NAMING_PAPERS).

    python bench/maps/naming.py --home /tmp/home38k --collection scale [--central 400]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", required=True)
    parser.add_argument("--collection", default="default")
    parser.add_argument("--central", type=int, default=400)
    args = parser.parse_args()
    os.environ["RAGQA_HOME"] = args.home
    from ragqa.answering.summarize import choose_themes, theme_names
    from ragqa.app import open_for_query, settings_for

    settings, name = settings_for(args.collection)
    retriever = open_for_query(settings, name, quiet=True)
    papers = retriever.lexical.all_papers()
    vectors = retriever.store.paper_vectors([p.paper_id for p in papers])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    started = time.perf_counter()
    labels = choose_themes(vectors)
    print(f"{len(papers)} papers, {labels.max() + 1} themes in "
          f"{time.perf_counter() - started:.1f} s")
    groups, central = [], []
    for label in range(labels.max() + 1):
        members = np.flatnonzero(labels == label)
        centre = vectors[members].mean(axis=0)
        order = members[np.argsort(-(vectors[members] @ centre))]
        groups.append([papers[i] for i in order])
        central.append([papers[i] for i in order[: args.central]])
    started = time.perf_counter()
    all_names = theme_names(groups)
    all_seconds = time.perf_counter() - started
    started = time.perf_counter()
    central_names = theme_names(central)
    central_seconds = time.perf_counter() - started
    print(f"named from all papers: {all_seconds:.1f} s; from the {args.central} most central: "
          f"{central_seconds:.1f} s")
    same = sum(a == b for a, b in zip(all_names, central_names, strict=True))
    print(f"same name: {same} of {len(groups)}")
    for group, a, b in zip(groups, all_names, central_names, strict=True):
        print(f"{len(group):6d}  {a:45s} | {b}")


if __name__ == "__main__":
    main()
