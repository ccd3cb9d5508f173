"""Re-ranking from papers judged relevant or not (Rocchio): candidates near the accepted
papers' centre rise, those near the rejected papers' centre sink, and the first ranking still
counts. Screening re-orders what it has not read yet this way after every wave of batches (so
that relevant papers ranked deep are read before the depth rule stops), and a user's marks
(`/more 2 5`, `/not 3` in chat, a click in the web page) re-rank and re-cut a list with it,
offering new candidates for review apart from it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The weights of the rejected centre and of the first ranking against the accepted centre:
# bench/lists/screening.py's grid (docs/benchmarks.md, "Screening"): 0.5 and 1.0 held the most
# relevant papers in the first 100 read on both dev slices.
NEGATIVE_WEIGHT = 0.5
RANK_WEIGHT = 1.0


def unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def centre(vectors: np.ndarray) -> np.ndarray | None:
    return unit(vectors.mean(axis=0)) if len(vectors) else None


def rocchio_scores(vectors: np.ndarray, ranks: Sequence[int], total: int,
                   accepted: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """The score that orders candidates (`vectors`, unit rows, at first-ranking positions
    `ranks` of `total`) once `accepted` and `rejected` papers' vectors are known."""
    vectors = unit(vectors)
    first = 1.0 - np.asarray(ranks, dtype=np.float64) / max(total, 1)
    score = RANK_WEIGHT * first
    positive, negative = centre(accepted), centre(rejected)
    if positive is not None:
        score = score + vectors @ positive
    if negative is not None:
        score = score - NEGATIVE_WEIGHT * (vectors @ negative)
    return score


# New candidates a marking round offers for review, apart from the list: the simulated user of
# bench/lists/marks.py reads ten a round (docs/benchmarks.md, "The user as the judge").
EXTEND = 10


def refine(ranked: Sequence, vectors: np.ndarray, confirmed: set[str], rejected: set[str],
           listed: set[str]) -> tuple[list, list, list]:
    """A list re-ranked and re-cut by the user's marks (issue 45: marks refine, never pad).
    Returns (the papers marked relevant, in ranked order; the unmarked papers of the list that
    the marks keep, by their Rocchio score; up to EXTEND new candidates to review, apart from
    the list). Papers marked not relevant are gone. An unmarked paper of the list stays while
    it lies at least as close to the relevant papers' centre as to the rejected ones' (with no
    rejection, every one stays). `ranked`: the question's candidates, best first; `vectors`
    theirs; `listed`: the ids of the list the marks were made on."""
    ids = [h.paper.paper_id for h in ranked]
    positive = [i for i, pid in enumerate(ids) if pid in confirmed]
    negative = [i for i, pid in enumerate(ids) if pid in rejected]
    rest = [i for i, pid in enumerate(ids) if pid not in confirmed and pid not in rejected]
    if not rest:
        return [ranked[i] for i in positive], [], []
    scores = rocchio_scores(vectors[rest], rest, len(ranked), vectors[positive],
                            vectors[negative])
    order = [rest[j] for j in np.argsort(-scores, kind="stable")]
    near, far = centre(vectors[positive]), centre(vectors[negative])
    units = unit(vectors)

    def stays(i: int) -> bool:
        if far is None:
            return True
        return near is not None and float(units[i] @ near) >= float(units[i] @ far)

    kept = [ranked[i] for i in order if ids[i] in listed and stays(i)]
    review = [ranked[i] for i in order if ids[i] not in listed][:EXTEND]
    return [ranked[i] for i in positive], kept, review
