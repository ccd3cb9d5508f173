"""Fit the chat's follow-up decision (ragqa/answering/followups.py FOLLOW_WEIGHTS) on the
development half of the blind conversations (bench/reading/chats_blind.jsonl).

Each turn after the first is labelled by what its writer meant: a selection, a position or a
question about the last papers follows up (1); a switch of topic does not (0). A conversation's
first question, asked after the previous conversation's last papers, is a switch too (a user
who starts a new topic). The last papers are the writer's for the previous turn (the topic's or
the selection's), so the fit does not depend on what ragqa answered. A logistic model over
followups.CUES, L2-penalised; reported: its accuracy 5-fold cross-validated and the weights.

    python bench/reading/fit_followups.py --home DIR [--split dev]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from facts import DEFAULT_DATA, slice_path  # noqa: E402

ROUNDS = {1: "chats_blind.jsonl", **{r: f"chats_blind{r}.jsonl" for r in range(2, 13)}}


def labelled_turns(home: Path, data: Path, split: str, rounds: list[int]):
    """(cues, label, say) of each turn that has last papers."""
    from ragqa.answering.followups import cues
    from ragqa.app import open_for_query
    from ragqa.config import load_settings

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    chats = [json.loads(line) for r in rounds for line in (HERE / ROUNDS[r]).open()
             if line.strip()]
    chats = [c for c in chats if split == "all" or c["split"] == split]
    indexes = {}
    for name in {c["slice"] for c in chats}:
        slice_path(home, data, name)
        indexes[name] = open_for_query(settings, name).lexical
    previous_last: dict[str, list[str]] = {}
    for chat in chats:
        index = indexes[chat["slice"]]
        last = previous_last.get(chat["slice"], [])
        for turn in chat["turns"]:
            if last:
                rows = [r for r in map(index.index_of, last) if r is not None]
                label = 0 if turn["kind"] in ("list", "switch") else 1
                yield cues(turn["say"], rows, index), label, turn["say"]
            if turn["papers"]:
                last = turn["papers"]
        previous_last[chat["slice"]] = last


def fit(x: np.ndarray, y: np.ndarray, l2: float = 0.1, steps: int = 4000) -> np.ndarray:
    """Weights and bias (last) of an L2-penalised logistic regression, by gradient ascent."""
    xb = np.column_stack([x, np.ones(len(x))])
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        w += 0.1 * (xb.T @ (y - p) - l2 * np.r_[w[:-1], 0]) / len(y)
    return w


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="dev", choices=["dev", "heldout", "all"])
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--rounds", default="1,2",
                        help="which blind rounds to fit on (1: chats_blind.jsonl, 2: "
                             "chats_blind2.jsonl; both are development data since round 3)")
    args = parser.parse_args()
    from ragqa.answering.followups import CUES

    rows = list(labelled_turns(args.home, args.data, args.split,
                               [int(r) for r in args.rounds.split(",")]))
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=float)
    folds = 5
    held = np.zeros(len(y))
    for f in range(folds):
        train = np.arange(len(y)) % folds != f
        w = fit(x[train], y[train])
        held[~train] = (np.column_stack([x[~train], np.ones((~train).sum())]) @ w) > 0
    w = fit(x, y)
    if args.cases:
        for (cue, label, say), guess in zip(rows, held, strict=True):
            if guess != label:
                print(json.dumps({"say": say, "label": label,
                                  "cues": dict(zip(CUES, np.round(cue, 2).tolist(),
                                                   strict=True))}), file=sys.stderr)
    print(json.dumps({"turns": len(y), "follow_ups": int(y.sum()), "split": args.split,
                      "rounds": args.rounds,
                      "accuracy, 5-fold cross-validated": round(float(np.mean(held == y)), 3),
                      "weights": dict(zip([*CUES, "bias"], np.round(w, 3).tolist(),
                                          strict=True))}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
