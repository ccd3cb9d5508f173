"""Issue 46, item 1, tried: a fitted model of what a chat turn does with the last answer's
papers, in place of the chat's follow-up rules (ragqa/answering/followups.py `resolve`: a
small logistic over positional cues, then SELECTS and ORDINAL). Not shipped: on a fresh blind
round it reads fewer turns right than the rules (docs/benchmarks.md, "A fitted follow-up
model"); this script keeps the experiment repeatable.

Each turn of the blind conversation rounds (bench/reading/chats_blind*.jsonl) that comes after
some papers is labelled by what its writer meant:
- "leave": a switch of topic, or a conversation's first question asked after the previous
  conversation's papers (a user who starts a new topic);
- "select": picks among the last papers ("which of them use RL?");
- "position": a place in the last list ("the second one");
- "about": asks about the paper(s) just shown ("what is its accuracy?").
The last papers are the writer's for the previous turn, so the fit does not depend on what
ragqa answered.

Features, all named (`turn_features`): the wording features of the list-question model
(retrieval/kinds.py), the turn's MiniLM embedding (x `--scales`), and cues against the last
papers and the collection. One L2-penalised multinomial logistic fit (choice_fit.py).

Fitted: rounds 1-11 whole and the calibrate half of round 13 on (eval.blind_half, fixed before
anything was read); kept out: round 12 whole and the report halves. Reported: accuracy with
each fitted round left out in turn and on what was kept out; with `--before CHECKOUT`, the
rules of that checkout (followups.resolve; an "about" of one paper that list_place found
counts as a position) on the same turns. End to end, compare `bench/reading/blind.py` runs.

    python bench/understanding/fit_followup_kind.py --home DIR [--data DIR/mlconf]
        [--before CHECKOUT] [--scales 3,0] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "reading"))
sys.path.insert(0, str(HERE))

from choice_fit import Fit, show  # noqa: E402  (bench/understanding/choice_fit.py)
from facts import DEFAULT_DATA, slice_path  # noqa: E402  (bench/reading/facts.py)

KINDS = ("leave", "select", "position", "about")
FITTED_ROUNDS = tuple(range(1, 12))
# From this round on, a round is split by eval.blind_half before anything is read: its calibrate
# half is fitted on, its report half only reported (round 12 stays out whole: its figures are
# comparable with the sessions before).
FIRST_SPLIT_CHAT_ROUND = 13
L2 = 1.0
SENSE_SCALE = 3.0  # as the list-question model's (fit_list_question.py SENSE_SCALE)


def turn_features(question: str, last_rows: list[int], index) -> dict[str, float]:  # noqa: ANN001
    """The turn's named features: its wording (kinds.wording_features) and cues measured
    against the last papers ("cue:in_last", "cue:lift", "cue:no_content": as the chat's
    follow-up cues), whether it names a place ("cue:place"), points back ("cue:refers"),
    selects ("cue:selects"), announces a new topic ("cue:announces"), and the list-question
    model's probability ("cue:asks_for_papers")."""
    import math

    from ragqa.answering.followups import (
        REFERS,
        SELECTS,
        announces_new_topic,
        content_terms,
        list_place,
    )
    from ragqa.retrieval.kinds import list_question_model, wording_features

    features = dict.fromkeys(wording_features(question), 1.0)
    terms = content_terms(question)
    features["cue:no_content"] = float(not terms)
    if terms and index is not None and last_rows and index.size:
        held = index.coverage(terms, last_rows)
        features["cue:in_last"] = float(np.max(held))
        everywhere = np.mean([index.document_frequency(t) for t in terms]) / index.size
        features["cue:lift"] = math.log((float(np.mean(held)) + 0.01) / (everywhere + 0.01))
    features["cue:place"] = float(list_place(question) is not None)
    features["cue:refers"] = float(bool(REFERS.search(question)))
    features["cue:selects"] = float(bool(SELECTS.search(question)))
    features["cue:announces"] = float(announces_new_topic(question))
    features["cue:asks_for_papers"] = list_question_model().probability(question)
    return features


def _chats(round_no: int) -> list[dict]:
    name = "chats_blind.jsonl" if round_no == 1 else f"chats_blind{round_no}.jsonl"
    path = ROOT / "bench" / "reading" / name
    return [json.loads(line) for line in path.open() if line.strip()] if path.is_file() else []


def rounds_present() -> list[int]:
    return [r for r in range(1, 30) if _chats(r)]


def labelled(home: Path, data: Path) -> list[dict]:
    """One row per turn that has last papers: round, text, kind, its features, its half."""
    from ragqa.app import open_for_query
    from ragqa.config import load_settings

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    rows, indexes = [], {}
    for round_no in rounds_present():
        previous_last: dict[str, list[str]] = {}
        for chat in _chats(round_no):
            name = chat["slice"]
            if name not in indexes:
                slice_path(home, data, name)
                indexes[name] = open_for_query(settings, name).lexical
            index = indexes[name]
            last = previous_last.get(name, [])
            for turn in chat["turns"]:
                if last:
                    kind = "leave" if turn["kind"] in ("list", "switch") else turn["kind"]
                    held = [r for r in map(index.index_of, last) if r is not None]
                    rows.append({"round": round_no, "source": f"round {round_no}",
                                 "text": turn["say"], "kind": kind,
                                 "features": turn_features(turn["say"], held, index),
                                 "half": "report" if chat["split"] == "heldout" else "calibrate"})
                if turn["papers"]:
                    last = turn["papers"]
            previous_last[name] = last
    return rows


def before_kinds(checkout: Path, home: Path, data: Path) -> list[str]:
    """followups.resolve of another checkout, read as a kind (an "about" of one paper that
    list_place found is a position), on the same turns; run there."""
    code = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ragqa.answering.followups import resolve, list_place
from ragqa.app import open_for_query
from ragqa.config import load_settings
sys.path.insert(0, sys.argv[4])
from facts import slice_path  # after ragqa: facts.py puts this checkout's root first
from pathlib import Path
settings = load_settings({"RAGQA_HOME": sys.argv[2], "RAGQA_ENV_FILE": "/nonexistent"})
out, indexes = [], {}
for item in json.load(sys.stdin):
    name = item["slice"]
    if name not in indexes:
        slice_path(Path(sys.argv[2]), Path(sys.argv[3]), name)
        indexes[name] = open_for_query(settings, name).lexical
    r = resolve(item["text"], item["last"], indexes[name])
    kind = r.kind
    if kind == "about" and len(r.papers) == 1 and list_place(item["text"]) is not None:
        kind = "position"
    out.append(kind)
print(json.dumps(out))
"""
    items = list(_turns_with_last())
    result = subprocess.run(
        [sys.executable, "-c", code, str(checkout), str(home), str(data),
         str(ROOT / "bench" / "reading")],
        input=json.dumps(items), capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _turns_with_last():
    for round_no in rounds_present():
        previous_last: dict[str, list[str]] = {}
        for chat in _chats(round_no):
            last = previous_last.get(chat["slice"], [])
            for turn in chat["turns"]:
                if last:
                    yield {"slice": chat["slice"], "text": turn["say"], "last": last}
                if turn["papers"]:
                    last = turn["papers"]
            previous_last[chat["slice"]] = last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--before", type=Path, help="a checkout whose resolve() to compare")
    parser.add_argument("--scales", default="3", help="embedding scales to compare (0: none)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from ragqa.retrieval.kinds import question_vectors

    rows = labelled(args.home, args.data)
    fit = Fit(rows, question_vectors([r["text"] for r in rows]), KINDS, L2)
    rounds = np.array([r["round"] for r in rows])
    halves = np.array([r["half"] for r in rows])
    # Rounds 1-11 whole; a later round by its calibrate half (its report half is never fitted)
    fitted = np.isin(rounds, FITTED_ROUNDS) | ((rounds >= FIRST_SPLIT_CHAT_ROUND) &
                                               (halves == "calibrate"))
    before = np.array(before_kinds(args.before, args.home, args.data)) if args.before else None
    truth = np.array([r["kind"] for r in rows])
    scales = [float(s) for s in args.scales.split(",")]
    figures: dict = {"left_out": {}, "reports": {}}
    for scale in scales:
        right = 0
        for held in FITTED_ROUNDS + tuple(sorted(set(rounds[rounds >= FIRST_SPLIT_CHAT_ROUND]))):
            out = (rounds == held) & fitted
            acc = fit.accuracy(fit.fit(fitted & ~out, scale), out)
            right += acc * out.sum()
            figures["left_out"].setdefault(f"round {held}", {})[f"scale {scale}"] = round(acc, 3)
        figures["left_out"].setdefault("mean", {})[f"scale {scale}"] = \
            round(right / fitted.sum(), 3)
    if before is not None:
        for held in FITTED_ROUNDS + tuple(sorted(set(rounds[rounds >= FIRST_SPLIT_CHAT_ROUND]))):
            out = (rounds == held) & fitted
            figures["left_out"][f"round {held}"]["before"] = \
                round(float(np.mean(before[out] == truth[out])), 3)
        figures["left_out"]["mean"]["before"] = \
            round(float(np.mean(before[fitted] == truth[fitted])), 3)
    models = {scale: fit.fit(fitted, scale) for scale in scales}
    for round_no in sorted(set(rounds) - set(FITTED_ROUNDS)):
        for half in ("calibrate", "report", "all") if round_no < FIRST_SPLIT_CHAT_ROUND \
                else ("report",):
            mask = (rounds == round_no) & np.array([half in ("all", r["half"]) for r in rows])
            entry = {"turns": int(mask.sum()),
                     **{f"scale {s}": round(fit.accuracy(m, mask), 3)
                        for s, m in models.items()}}
            if before is not None:
                entry["before"] = round(float(np.mean(before[mask] == truth[mask])), 3)
            figures["reports"][f"round {round_no} {half}"] = entry
    chosen = models[scales[0]]
    confusion = Counter(zip(truth[~fitted], np.array(KINDS)[fit.predict(chosen, ~fitted)],
                            strict=True))
    figures["confusion_kept_out"] = {f"{a}->{b}": n for (a, b), n in sorted(confusion.items())
                                     if a != b}
    show(figures, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
