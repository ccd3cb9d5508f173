"""A fitted selection model, tried against the chat's selection rule (followups.selected) and not
shipped (docs/benchmarks.md, "Session 36"): which of the last papers a selecting turn ("which
one is the FP4 one?", "any of those that don't need labels?") picks.

Each paper of the list is scored by a logistic model over named features (`features`: the share
of the asked property's words it holds, the cross-encoder's score of it for the property, each
against the list's best, the reader's lead over the best other paper, the list's length); the
best-scored paper is picked when the model gives it a floor or more, with every paper within
`near` of its score and every paper that holds as much of the words unless the reader scores it
READER_TIE below. The data: the select turns of blind conversation rounds 1-12 and the dev
halves of rounds 13-17 (never a held-out half), each with the papers its writer listed the turn
before (select_eval.py's turns); a paper the writer picked is a positive, the others negatives;
and the same turns put to another conversation's list on the same slice (select_eval.py
--mismatched), all negatives, whose right answer is none. Turns the rule decides before any
reading (released code or data, "lots of languages", no property words) are left out.

    python bench/reading/fit_selection.py --home DIR [--json]

Prints the shipped rule's figures on the same turns and the model's, 5-fold cross-validated
(folds by a hash of the conversation id), over a grid of floors and nears.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("RAGQA_CODE") or str(HERE.parents[1]))
sys.path.insert(1, str(HERE))

from facts import DEFAULT_DATA, lists_eval, slice_path  # noqa: E402
from select_eval import mismatched_turns, select_turns  # noqa: E402

from ragqa.answering.followups import READER_TIE  # noqa: E402

ROUNDS = list(range(1, 18))
FOLDS = 5
FLOORS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
NEARS = (0.25, 0.5, 1.0)


def features(held: list[float], scores: list[float]) -> list[dict[str, float]]:
    shares, reads = np.asarray(held), np.asarray(scores)
    out = []
    for i in range(len(shares)):
        others = np.delete(reads, i)
        lead = reads[i] - (others.max() if len(others) else reads[i])
        out.append({"share": shares[i], "share_gap": shares[i] - shares.max(),
                    "share_none": float(shares.max() == 0), "reader": reads[i],
                    "reader_gap": reads[i] - reads.max(),
                    "reader_lead": float(np.clip(lead, -5, 5)),
                    "log_papers": float(np.log(len(shares)))})
    return out


NAMES = ("share", "share_gap", "share_none", "reader", "reader_gap", "reader_lead", "log_papers")


def examples(home: Path, data: Path) -> list[dict]:
    """Each select turn (writers' lists and mismatched lists) with its papers' features and
    the shipped rule's picks; the reader's scores are those the rule asked for."""
    from ragqa.answering.followups import _held_share, asked_property, paper_terms, selected
    from ragqa.app import open_for_query
    from ragqa.config import load_settings
    from ragqa.models.rerank import cross_encoder

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    turns = list(select_turns(ROUNDS, "dev"))
    put = [(t, False) for t in turns] + [(t, True) for t in mismatched_turns(turns)]
    papers, indexes = {}, {}
    for name in sorted({t[1] for t in turns}):
        for line in slice_path(home, data, name).open():
            paper = json.loads(line)
            papers[paper["_id"]] = (paper["title"], paper["text"])
        indexes[name] = open_for_query(settings, name).lexical
    out = []
    for n, ((chat_id, name, turn, listed, topic), mismatched) in enumerate(put):
        scores: list[float] = []

        def read(query, texts, scores=scores):  # noqa: ANN001, ANN202
            found = cross_encoder().score(query, texts)
            scores.append(float(np.max(found)))
            return found

        shown = [papers[p] for p in listed]
        rule = selected(turn["say"], shown, indexes[name], read).picks
        if len(scores) != len(listed):
            continue  # decided before any reading
        alternatives = asked_property(turn["say"], indexes[name])
        held = [_held_share(alternatives, paper_terms(f"{t} {x}")) for t, x in shown]
        out.append({"chat": chat_id, "mismatched": mismatched, "listed": listed,
                    "wanted": [] if mismatched else turn["papers"], "topic": sorted(topic),
                    "rule": [listed[i] for i in rule], "features": features(held, scores)})
        if n % 100 == 0:
            print(f"{n}/{len(put)} turns read", file=sys.stderr)
    return out


def matrix(example: dict) -> np.ndarray:
    return np.array([[f[k] for k in NAMES] for f in example["features"]], dtype=np.float64)


def picks(example: dict, values: np.ndarray, floor: float, near: float) -> set[str]:
    """The model's picks from its scores of the example's papers (`values`)."""
    top = int(np.argmax(values))
    if 1.0 / (1.0 + np.exp(-values[top])) < floor:
        return set()
    held = [f["share"] for f in example["features"]]
    read = [f["reader"] for f in example["features"]]
    return {p for i, p in enumerate(example["listed"]) if values[i] >= values[top] - near
            or (held[top] > 0 and held[i] >= held[top] - 1e-9
                and read[i] >= read[top] - READER_TIE)}


def right(example: dict, picked: set[str]) -> bool:
    """As select_eval.py judges: none for a mismatched list; else one of the writer's papers
    and none of the topic's papers the writer left out."""
    if example["mismatched"]:
        return not picked
    wanted = set(example["wanted"])
    return bool(picked & wanted) and not picked & (set(example["topic"]) - wanted)


def fit(rows: list[dict]) -> tuple[np.ndarray, float]:
    x = np.vstack([matrix(r) for r in rows])
    y = np.concatenate([[float(p in r["wanted"]) for p in r["listed"]] for r in rows])
    return lists_eval().fit_logistic(x, y, l2=1.0)  # Newton; the classes weighted alike


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = examples(args.home, args.data)
    kind = {False: "writers_lists", True: "mismatched"}
    fold = {r["chat"]: zlib.crc32(r["chat"].encode()) % FOLDS for r in rows}
    rule = {"writers_lists": 0, "mismatched": 0}
    for r in rows:
        rule[kind[r["mismatched"]]] += right(r, set(r["rule"]))
    grid = {(floor, near): {"writers_lists": 0, "mismatched": 0}
            for floor in FLOORS for near in NEARS}
    for k in range(FOLDS):
        weights, bias = fit([r for r in rows if fold[r["chat"]] != k])
        for r in rows:
            if fold[r["chat"]] == k:
                values = matrix(r) @ weights + bias
                for (floor, near), tally in grid.items():
                    tally[kind[r["mismatched"]]] += right(r, picks(r, values, floor, near))
    counts = {name: sum(kind[r["mismatched"]] == name for r in rows) for name in rule}
    weights, bias = fit(rows)
    report = {"turns": counts, "rule": rule, "folds": FOLDS,
              "weights_on_all": dict(zip(NAMES, np.round(weights, 4).tolist(), strict=True)),
              "bias_on_all": round(bias, 4),
              "model": [{"floor": f, "near": n, **t} for (f, n), t in grid.items()]}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"turns: {counts}; the shipped rule right: {rule}")
        for row in report["model"]:
            print(f"model, floor {row['floor']:.2f} near {row['near']:.2f}: writers' lists "
                  f"{row['writers_lists']}, mismatched {row['mismatched']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
