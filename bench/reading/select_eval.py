"""How the chat's selection rule (ragqa/answering/followups.selected) picks among papers, on the
select turns of the blind conversations (rounds 1-2: development data), apart from the rest of
the chat: each "which one …" turn is given the papers its writer listed for the turn before
(not ragqa's answer), so that only the selection is measured.

    python bench/reading/select_eval.py --home DIR [--rounds 1,2] [--cases]

A turn is right, as in blind.py, when the picked papers hold one of the writer's and none of
the topic's papers the writer left out; `exact` counts turns whose picks are exactly the
writer's (what a following "the second one" needs). `--code DIR` measures another checkout's
rule (e.g. a worktree of the version before).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "--code" in sys.argv:
    os.environ["RAGQA_CODE"] = sys.argv[sys.argv.index("--code") + 1]
sys.path.insert(0, os.environ.get("RAGQA_CODE") or str(HERE.parents[1]))
sys.path.insert(1, str(HERE))

from blind import shows_a_list  # noqa: E402  (as blind.py judges)
from facts import DEFAULT_DATA, slice_path  # noqa: E402

ROUNDS = {1: "chats_blind.jsonl", **{r: f"chats_blind{r}.jsonl" for r in range(2, 10)}}


def select_turns(rounds: list[int]):
    """(chat id, slice, turn, the writer's last list, the topic's papers): a selection
    picks among the papers of the last list, switch or selection of two or more (after a
    selection of one, "which of those …" picks among the list before)."""
    for r in rounds:
        for line in (HERE / ROUNDS[r]).open():
            chat = json.loads(line)
            previous: list[str] = []
            topic: set[str] = set()
            for turn in chat["turns"]:
                if turn["kind"] == "select" and previous:
                    yield chat["id"], chat["slice"], turn, previous, topic
                if turn["kind"] in ("list", "switch"):
                    topic = set(turn["papers"])
                if shows_a_list(turn["kind"], turn["papers"]):
                    previous = list(turn["papers"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", default="1,2")
    parser.add_argument("--code", type=Path, help="measure another checkout's rule")
    parser.add_argument("--cases", action="store_true")
    args = parser.parse_args()
    import inspect

    from ragqa.answering.followups import selected
    from ragqa.app import open_for_query
    from ragqa.config import load_settings

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    turns = list(select_turns([int(r) for r in args.rounds.split(",")]))
    texts, indexes = {}, {}
    for name in {t[1] for t in turns}:
        for line in slice_path(args.home, args.data, name).open():
            paper = json.loads(line)
            texts[paper["_id"]] = paper["title"] + " " + paper["text"]
        indexes[name] = open_for_query(settings, name).lexical
    # The rule before this one took the collection's idf of its own content words.
    old_rule = "weights" in inspect.signature(selected).parameters
    right = exact = 0
    for chat_id, name, turn, previous, topic in turns:
        if old_rule:
            from ragqa.answering.followups import content_terms
            pick = selected(turn["say"], [texts[p] for p in previous],
                            indexes[name].idf(content_terms(turn["say"])))
        else:
            pick = selected(turn["say"], [texts[p] for p in previous], indexes[name])
        picked = {previous[i] for i in pick}
        wanted = set(turn["papers"])
        ok = bool(picked & wanted) and not picked & (topic - wanted)
        right += ok
        exact += picked == wanted
        if args.cases and not ok:
            print(json.dumps({"chat": chat_id, "say": turn["say"], "wanted": sorted(wanted),
                              "picked": sorted(picked)}), file=sys.stderr)
    print(json.dumps({"rounds": args.rounds, "select_turns": len(turns), "right": right,
                      "exact": exact}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
