"""How the chat's selection rule (ragqa/answering/followups.selected) picks among papers, on the
select turns of the blind conversations, apart from the rest of the chat: each "which one …"
turn is given the papers its writer listed for the turn before (not ragqa's answer), so that
only the selection is measured; or, with `--shown`, the papers ragqa showed (the `before` of
each select turn in `blind.py --cases` output, whose lists are longer and hold papers beyond
the writer's topic).

    python bench/reading/select_eval.py --home DIR [--rounds 1,2] [--cases] [--no-reader]
    python bench/reading/blind.py --home DIR --round N --split all --only chats --cases \
        2> CASES_N.jsonl
    python bench/reading/select_eval.py --home DIR --rounds N --shown CASES_N.jsonl
    python bench/reading/select_eval.py --home DIR --rounds 1,2 --mismatched

A turn is right, as in blind.py, when the picked papers hold one of the writer's and none of
the topic's papers the writer left out; `exact` counts turns whose picks are exactly the
writer's (what a following "the second one" needs). `--no-reader` leaves the cross-encoder
out (the words alone); `--code DIR` measures another checkout's rule (e.g. a worktree of the
version before).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "--code" in sys.argv:
    os.environ["RAGQA_CODE"] = sys.argv[sys.argv.index("--code") + 1]
sys.path.insert(0, os.environ.get("RAGQA_CODE") or str(HERE.parents[1]))
sys.path.insert(1, str(HERE))

from blind import shows_a_list  # noqa: E402  (as blind.py judges)
from facts import DEFAULT_DATA, slice_path  # noqa: E402

ROUNDS = {1: "chats_blind.jsonl", **{r: f"chats_blind{r}.jsonl" for r in range(2, 19)}}


def select_turns(rounds: list[int], split: str = "all"):
    """(chat id, slice, turn, the writer's last list, the topic's papers): a selection
    picks among the papers of the last list, switch or selection of two or more (after a
    selection of one, "which of those …" picks among the list before)."""
    for r in rounds:
        for line in (HERE / ROUNDS[r]).open():
            chat = json.loads(line)
            if r >= 13 and split != "all" and chat["split"] != split:
                continue  # rounds 13-18 were split on import (blind.py); 1-12 count whole
            previous: list[str] = []
            topic: set[str] = set()
            for turn in chat["turns"]:
                if turn["kind"] == "select" and previous:
                    yield chat["id"], chat["slice"], turn, previous, topic
                if turn["kind"] in ("list", "switch"):
                    topic = set(turn["papers"])
                if shows_a_list(turn["kind"], turn["papers"]):
                    previous = list(turn["papers"])


def shown_turns(rounds: list[int], cases: list[Path], split: str = "all"):
    """The same select turns with the papers ragqa showed before each (blind.py --cases)."""
    shown = {}
    for path in cases:
        for line in path.open():
            case = json.loads(line)
            if case.get("kind") == "select":
                shown[(case["chat"], case["say"])] = case["before"]
    for chat_id, name, turn, _, topic in select_turns(rounds, split):
        if shown.get((chat_id, turn["say"])):
            yield chat_id, name, turn, shown[(chat_id, turn["say"])], topic


def mismatched_turns(turns):
    """Each select turn with another conversation's list on the same slice that shares no
    paper with its own (one chosen by a hash of the chat id, so every run puts the same):
    the papers it asks for are not there."""
    for chat_id, name, turn, previous, _ in turns:
        others = [t[3] for t in turns
                  if t[1] == name and t[0] != chat_id and not set(t[3]) & set(previous)]
        if others:
            yield chat_id, name, turn, others[zlib.crc32(chat_id.encode()) % len(others)], set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", default="1,2")
    parser.add_argument("--split", choices=("all", "dev", "heldout"), default="all",
                        help="of rounds 13-18, one half only (blind.py's split)")
    parser.add_argument("--shown", type=Path, nargs="+", help="blind.py --cases output")
    parser.add_argument("--mismatched", action="store_true",
                        help="put each turn to another conversation's list (answer: none)")
    parser.add_argument("--no-reader", action="store_true")
    parser.add_argument("--code", type=Path, help="measure another checkout's rule")
    parser.add_argument("--cases", action="store_true")
    args = parser.parse_args()
    import inspect

    from ragqa.answering.followups import selected
    from ragqa.app import open_for_query
    from ragqa.config import load_settings

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    rounds = [int(r) for r in args.rounds.split(",")]
    turns = list(shown_turns(rounds, args.shown, args.split) if args.shown
                 else select_turns(rounds, args.split))
    if args.mismatched:
        turns = list(mismatched_turns(turns))
    papers, indexes = {}, {}
    for name in {t[1] for t in turns}:
        for line in slice_path(args.home, args.data, name).open():
            paper = json.loads(line)
            papers[paper["_id"]] = (paper["title"], paper["text"])
        indexes[name] = open_for_query(settings, name).lexical
    parameters = inspect.signature(selected).parameters
    read = None
    if "read" in parameters and not args.no_reader:
        from ragqa.models.rerank import cross_encoder
        read = cross_encoder().score
    right = exact = 0
    for chat_id, name, turn, previous, topic in turns:
        if "weights" in parameters:  # the rule before session 15: the idf of its own words
            from ragqa.answering.followups import content_terms
            pick = selected(turn["say"], [" ".join(papers[p]) for p in previous],
                            indexes[name].idf(content_terms(turn["say"])))
        elif "read" in parameters:  # session 17: (title, abstract) pairs and a reader
            pick = selected(turn["say"], [papers[p] for p in previous], indexes[name],
                            read).picks
        else:
            pick = selected(turn["say"], [" ".join(papers[p]) for p in previous],
                            indexes[name])
        picked = {previous[i] for i in pick}
        wanted = set() if args.mismatched else set(turn["papers"])
        ok = not picked if args.mismatched else \
            bool(picked & wanted) and not picked & (topic - wanted)
        right += ok
        exact += picked == wanted
        if args.cases and not ok:
            print(json.dumps({"chat": chat_id, "say": turn["say"], "wanted": sorted(wanted),
                              "picked": sorted(picked)}), file=sys.stderr)
    print(json.dumps({"rounds": args.rounds, "shown": bool(args.shown),
                      "mismatched": args.mismatched,
                      "reader": read is not None, "select_turns": len(turns), "right": right,
                      "exact": exact}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
