"""Papers added after a map was laid out: placed among their neighbours (ragqa's
`layout.place`, the medoid of the points of their 5 nearest laid-out papers; `--variants`
also the other rules tried) against openTSNE's own `transform` (which starts from about there
and optimises), and against laying everything out again. Neighbourhood kept = the share of a
placed paper's 10 nearest papers in the vectors (cosine) that are among its 10 nearest on the
map.

    python bench/maps/placing.py --vectors /tmp/v38k.npz --sizes 5000,37932 --placed 200
    (the vectors: python bench/maps/dump_vectors.py --home H --collection C --out F.npz)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ragqa.maps.layout import fit_layout, place  # noqa: E402


def kept(vectors: np.ndarray, points: np.ndarray, rows: np.ndarray, k: int = 10) -> float:
    shares = []
    for i in rows:
        near_v = np.argsort(-(vectors @ vectors[i]))[1:k + 1]
        near_p = np.argsort(((points - points[i]) ** 2).sum(axis=1))[1:k + 1]
        shares.append(len(set(near_v) & set(near_p)) / k)
    return float(np.mean(shares))


def variants(vectors: np.ndarray, base: np.ndarray, early: np.ndarray,
             late: np.ndarray) -> dict:
    order = np.argsort(-(vectors[late] @ vectors[early].T), axis=1)
    jitter = np.random.default_rng(0).normal(0, 0.002, (len(late), 2))

    def score(placed: np.ndarray) -> float:
        points = np.zeros((len(vectors), 2))
        points[early], points[late] = base, placed
        return round(kept(vectors, points, late), 4)

    out = {"kept_nearest1": score(base[order[:, 0]] + jitter),
           "kept_median10": score(np.median(base[order[:, :10]], axis=1))}
    for k in (3, 5, 10):
        out[f"kept_mean{k}"] = score(base[order[:, :k]].mean(axis=1))
    for k in (3, 5, 10):
        near = base[order[:, :k]]
        spread = ((near[:, :, None] - near[:, None]) ** 2).sum(-1).sum(-1)
        out[f"kept_medoid{k}"] = score(near[np.arange(len(near)), np.argmin(spread, 1)] + jitter)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vectors", default="/tmp/v38k.npz")
    parser.add_argument("--sizes", default="5000")
    parser.add_argument("--placed", type=int, default=200)
    parser.add_argument("--variants", action="store_true",
                        help="also the placing rules tried: nearest, mean of k, median, medoid")
    args = parser.parse_args()
    everything = np.load(args.vectors)["vectors"].astype(np.float32)
    everything /= np.linalg.norm(everything, axis=1, keepdims=True)
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        rng = np.random.default_rng(0)
        vectors = everything[rng.choice(len(everything), n, replace=False)] \
            if n < len(everything) else everything
        late = np.random.default_rng(2).choice(n, args.placed, replace=False)
        early = np.setdiff1d(np.arange(n), late)
        started = time.perf_counter()
        base = fit_layout(vectors[early])
        fit_seconds = time.perf_counter() - started
        started = time.perf_counter()
        placed = place(vectors[late], vectors[early], base)
        place_seconds = time.perf_counter() - started
        points = np.zeros((n, 2))
        points[early], points[late] = base, placed
        row = {"n": n, "fit_s": round(fit_seconds, 1), "place_s": round(place_seconds, 3),
               "kept_placed": kept(vectors, points, late),
               "kept_laid_out_sample": kept(vectors, points, early[:args.placed])}
        if args.variants:
            row.update(variants(vectors, base, early, late))
        # openTSNE's transform needs its own embedding object: fitted again, as the library does.
        from openTSNE import TSNE

        from ragqa.maps.layout import FFT_FROM

        fitted = TSNE(perplexity=30, metric="cosine", n_jobs=2 if n >= FFT_FROM else 1,
                      random_state=0, negative_gradient_method="fft" if n >= FFT_FROM else "bh",
                      verbose=False).fit(vectors[early])
        started = time.perf_counter()
        moved = np.asarray(fitted.transform(vectors[late]))
        row["transform_s"] = round(time.perf_counter() - started, 2)
        own = np.zeros((n, 2))
        own[early], own[late] = np.asarray(fitted), moved
        row["kept_transform"] = kept(vectors, own, late)
        results.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
