"""Write a collection's paper vectors (chunk 0, as summaries and maps read them) and their
years to an .npz, so that layout benchmarks compare libraries on the same input.

    python bench/maps/dump_vectors.py --home /tmp/home38k --collection scale --out /tmp/v38k.npz
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", required=True)
    parser.add_argument("--collection", default="papers")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.environ["RAGQA_HOME"] = args.home
    from ragqa.app import open_for_query, settings_for

    settings, name = settings_for(args.collection)
    retriever = open_for_query(settings, name, quiet=True)
    papers = retriever.lexical.all_papers()
    started = time.perf_counter()
    vectors = retriever.store.paper_vectors([p.paper_id for p in papers])
    print(f"{len(papers)} vectors in {time.perf_counter() - started:.1f} s")
    np.savez(args.out, vectors=vectors, ids=np.array([p.paper_id for p in papers]),
             years=np.array([p.year or 0 for p in papers]),
             venues=np.array([p.venue or "" for p in papers]))


if __name__ == "__main__":
    main()
