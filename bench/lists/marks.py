"""The user as the judge, simulated (issue 26, 7c): after `ragqa chat`'s offline list, a user
reads the first 10 papers they have not judged yet and marks each (`/more` the relevant and
partly relevant ones, `/not` the others); the list is re-ranked and re-cut, new candidates
offered apart "to review" (screening/feedback.py), and they read the next 10 (the list's
unread papers first, then those to review). Recall and precision (eval.py's) of the list
shown after each round (never of what is offered for review), against the offline list, on
the dev sets' and the blind set's list questions.
Nothing is fitted here: EXTEND (10) is what one round of this user reads.

    python bench/lists/marks.py --home DIR [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval as lists  # noqa: E402

READ_PER_ROUND = 10


def listed(answer) -> list[str]:  # noqa: ANN001
    """The answer's list: its cited papers less those offered "to review" (never part of it
    until marked: issue 45)."""
    review = {h.paper.paper_id for h in answer.hits if h.tier == "review"}
    return [c.paper_id for c in answer.citations if c.paper_id not in review]


def rounds_of(retriever, q: lists.Question, rounds: int) -> list[list[str]]:  # noqa: ANN001
    """The list after the question and after each round of marks, through the chat turn. The
    user reads the unread papers of the list first, then those offered for review."""
    from ragqa.answering.chat import ask_in_session, new_session

    session = new_session(retriever.store.name)
    answer, _ = ask_in_session(session, q.text, retriever, None)
    shown = [listed(answer)]
    judged: set[str] = set()
    for _ in range(rounds):
        numbers = {c.paper_id: c.n for c in answer.citations}
        offered = [c.paper_id for c in answer.citations]  # the list, then "to review"
        unread = [pid for pid in offered if pid not in judged][:READ_PER_ROUND]
        if not unread:
            shown.append(shown[-1])
            continue
        more = [numbers[p] for p in unread if q.grades.get(p, 0) >= 1]
        rejected = [numbers[p] for p in unread if q.grades.get(p, 0) == 0]
        judged.update(unread)
        marks = " ".join([*(["/more", *map(str, more)] if more else []),
                          *(["/not", *map(str, rejected)] if rejected else [])])
        answer, _ = ask_in_session(session, marks, retriever, None)
        shown.append(listed(answer))
    return shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=lists.DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return 0
    os.environ.setdefault("RAGQA_ENV_FILE", "/nonexistent")
    report = {}
    for name in [*lists.SLICES, *lists.BLIND_SLICES]:
        retriever = lists.retriever_for(args.home, name,
                                        lists.sources_of(args.home, args.data, name))
        per_round: list[list[dict]] = [[] for _ in range(args.rounds + 1)]
        for q in (q for q in lists.load_questions(name) if q.kind == "list" and q.grades):
            for r, listed in enumerate(rounds_of(retriever, q, args.rounds)):
                per_round[r].append(lists.question_scores(listed, q))
        report[name] = {}
        for r, rows in enumerate(per_round):
            s = lists.summarise(rows)
            s["f1"] = lists.f1(s)
            report[name]["offline" if r == 0 else f"round {r}"] = s
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, rounds in report.items():
        for label, s in rounds.items():
            print(f"{name:9} {label:8} recall {s['recall']:.3f}  precision {s['precision']:.3f}"
                  f"  F1 {s['f1']:.3f}  listed {s['mean_listed']:5.1f}  "
                  f"empty {s['empty_lists']}/{s['questions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
