"""Issue 46, item 1: the fitted model of what a chat turn does with the last answer's papers
(ragqa/answering/followups.py `resolve`; ragqa/data/followup_kind_model.json, which `--write`
writes with its provenance). Tried in session 24 on the blind rounds alone, it read a fresh round
worse than the rules it would replace (a small logistic over cues, then SELECTS and ORDINAL);
with the follow-up wordings sets' calibrate halves (608 of their 1,200 turns, session 32) it
reads the kept-out turns better than they did (all but round 13's report half), and replaced
them (docs/benchmarks.md, "The follow-up kind model").

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

The follow-up wordings sets (bench/understanding/followups/followup_wordings_*.jsonl, four
helpers who never saw ragqa, 300 turns each over NeurIPS 2015, AISTATS 2022, CoRL 2025 and UAI
2024): single turns after papers the writer chose as shown, labelled the same way.

Fitted: rounds 1-11 whole and the calibrate halves of rounds 13 on and of the wordings sets
(eval.blind_half of each id, fixed before anything was read); kept out: round 12 whole and
every report half. Reported: accuracy with each fitted round left out in turn and on what was
kept out; with `--before CHECKOUT`, the rules of that checkout (followups.resolve; an "about"
of one paper of several counts as a position) on the same turns, and this checkout's resolve
(the model with the rules around it: "resolve"). End to end, compare
`bench/reading/blind.py` runs. The shipped model:

    python bench/understanding/fit_followup_kind.py --home DIR --before CHECKOUT --scales 3 --write

    python bench/understanding/fit_followup_kind.py --home DIR [--data DIR/mlconf]
        [--before CHECKOUT] [--scales 3,0] [--drop CUES] [--json] [--write]
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

from choice_fit import Fit, model_record, show  # noqa: E402  (bench/understanding/choice_fit.py)
from facts import DEFAULT_DATA, lists_eval, slice_path  # noqa: E402  (bench/reading/facts.py)

KINDS = ("leave", "select", "position", "about")
FITTED_ROUNDS = tuple(range(1, 12))
# From this round on, a round is split by eval.blind_half before anything is read: its calibrate
# half is fitted on, its report half only reported (round 12 stays out whole: its figures are
# comparable with the sessions before).
FIRST_SPLIT_CHAT_ROUND = 13
L2 = 1.0
SENSE_SCALE = 3.0  # as the list-question model's (fit_list_question.py SENSE_SCALE)


def turn_features(question: str, last_rows: list[int], index) -> dict[str, float]:  # noqa: ANN001
    """The turn's named features, as the chat computes them (followups.kind_features)."""
    from ragqa.answering.followups import kind_features

    return kind_features(question, last_rows, index)


def _chats(round_no: int) -> list[dict]:
    name = "chats_blind.jsonl" if round_no == 1 else f"chats_blind{round_no}.jsonl"
    path = ROOT / "bench" / "reading" / name
    return [json.loads(line) for line in path.open() if line.strip()] if path.is_file() else []


def rounds_present() -> list[int]:
    return [r for r in range(1, 30) if _chats(r)]


# The follow-up wordings sets (bench/understanding/followups/, session 32): single turns after
# papers a helper chose as shown, each labelled by its writer; as a round numbered from
# WORDINGS_ROUND, split by eval.blind_half of the item's id (calibrate fitted, report reported).
WORDINGS_DIR = HERE / "followups"
WORDINGS_ROUND = 101


def wordings_sets() -> list[tuple[int, str, list[dict]]]:
    """(round number, name, items) of each follow-up wordings set."""
    files = sorted(WORDINGS_DIR.glob("followup_wordings_*.jsonl")) if WORDINGS_DIR.is_dir() else []
    return [(WORDINGS_ROUND + i, path.stem.removeprefix("followup_wordings_"),
             [json.loads(line) for line in path.open() if line.strip()])
            for i, path in enumerate(files)]


def _wordings_half(item_id: str) -> str:
    return lists_eval().blind_half(item_id)  # bench/lists/eval.py


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
                                 "slice": name, "last": last, "text": turn["say"], "kind": kind,
                                 "features": turn_features(turn["say"], held, index),
                                 "half": "report" if chat["split"] == "heldout" else "calibrate"})
                if turn["papers"]:
                    last = turn["papers"]
            previous_last[name] = last
    for round_no, name, items in wordings_sets():
        slice_path(home, data, name)
        index = indexes.setdefault(name, open_for_query(settings, name).lexical)
        for item in items:
            held = [r for r in map(index.index_of, item["shown"]) if r is not None]
            rows.append({"round": round_no, "source": f"wordings {name}", "slice": name,
                         "last": item["shown"], "text": item["say"],
                         "kind": item["kind"], "features": turn_features(item["say"], held, index),
                         "half": _wordings_half(item["id"])})
    return rows


def fitted_mask(rows: list[dict]) -> np.ndarray:
    """The rows fitted on: rounds 1-11 whole; a later round, or a wordings set, by its
    calibrate half (its report half is never fitted)."""
    rounds = np.array([r["round"] for r in rows])
    halves = np.array([r["half"] for r in rows])
    return np.isin(rounds, FITTED_ROUNDS) | ((rounds >= FIRST_SPLIT_CHAT_ROUND) &
                                             (halves == "calibrate"))


def before_kinds(checkout: Path, home: Path, data: Path) -> list[str]:
    """followups.resolve of another checkout, read as a kind (an "about" of one paper that
    list_place found is a position), on the same turns; run there."""
    code = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ragqa.answering.followups import resolve
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
    if kind == "about" and len(r.papers) == 1 and len(item["last"]) > 1:
        kind = "position"  # one paper of several, not selected: by its place
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
    for _, name, items in wordings_sets():
        for item in items:
            yield {"slice": name, "text": item["say"], "last": item["shown"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--before", type=Path, help="a checkout whose resolve() to compare")
    parser.add_argument("--scales", default="3", help="embedding scales to compare (0: none)")
    parser.add_argument("--drop", default="",
                        help="cues left out of the fit, comma-separated (e.g. refers,selects,"
                             "announces: the rules' phrase cues), to measure the model without")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help="write the model of the first scale, fitted on every fitted turn, to "
                             "ragqa/data/followup_kind_model.json with its provenance")
    args = parser.parse_args()
    from ragqa.retrieval.kinds import question_vectors

    rows = labelled(args.home, args.data)
    for name in filter(None, args.drop.split(",")):
        for row in rows:
            row["features"].pop(f"cue:{name}", None)
    fit = Fit(rows, question_vectors([r["text"] for r in rows]), KINDS, L2)
    rounds = np.array([r["round"] for r in rows])
    halves = np.array([r["half"] for r in rows])
    fitted = fitted_mask(rows)
    before = np.array(before_kinds(args.before, args.home, args.data)) if args.before else None
    # What this checkout's chat decides (followups.resolve: the shipped model, and the rules
    # around it), on the same turns: the figure a user gets, beside the classifier's own.
    shipped = np.array(before_kinds(ROOT, args.home, args.data)) if args.before else None
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
            if not mask.any():
                continue
            entry = {"turns": int(mask.sum()),
                     **{f"scale {s}": round(fit.accuracy(m, mask), 3)
                        for s, m in models.items()}}
            if before is not None:
                entry["before"] = round(float(np.mean(before[mask] == truth[mask])), 3)
                entry["resolve"] = round(float(np.mean(shipped[mask] == truth[mask])), 3)
            label = rows[int(np.argmax(rounds == round_no))]["source"]
            figures["reports"][f"{label} {half}"] = entry
    # Every report half together (the split rounds' and the wordings sets'): never fitted on.
    pooled = (rounds >= FIRST_SPLIT_CHAT_ROUND) & (halves == "report")
    entry = {"turns": int(pooled.sum()),
             **{f"scale {s}": round(fit.accuracy(m, pooled), 3) for s, m in models.items()}}
    if before is not None:
        entry["before"] = round(float(np.mean(before[pooled] == truth[pooled])), 3)
        entry["resolve"] = round(float(np.mean(shipped[pooled] == truth[pooled])), 3)
    figures["reports"]["all report halves"] = entry
    chosen = models[scales[0]]
    confusion = Counter(zip(truth[~fitted], np.array(KINDS)[fit.predict(chosen, ~fitted)],
                            strict=True))
    figures["confusion_kept_out"] = {f"{a}->{b}": n for (a, b), n in sorted(confusion.items())
                                     if a != b}
    show(figures, as_json=args.json)
    if args.write:
        write_model(chosen, fitted, figures, args)
    return 0


def _commit(checkout: Path | None) -> str:
    if checkout is None:
        return "none"
    result = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True)
    return result.stdout.strip() or str(checkout)


def write_choice_model(file_name: str, chosen: dict, embedder: str, provenance: dict) -> None:
    """A follow-up kind model file the chat reads (retrieval/kinds.py ChoiceModel, in
    ragqa/data), with its provenance."""
    from ragqa.answering.followups import KINDS as CHAT_KINDS
    from ragqa.models.linear import write_model_record
    from ragqa.resources import DATA_DIR

    assert KINDS == CHAT_KINDS, "the kinds fitted are not the ones the chat reads"
    record = {**model_record(chosen, KINDS, embedder), "provenance": provenance}
    write_model_record(DATA_DIR / file_name, record)


def write_model(chosen: dict, fitted: np.ndarray, figures: dict, args) -> None:  # noqa: ANN001
    from ragqa.answering.followups import FOLLOWUP_KIND_MODEL
    from ragqa.retrieval.kinds import sense_embedder_id

    write_choice_model(FOLLOWUP_KIND_MODEL, chosen, sense_embedder_id(), {
        "script": "bench/understanding/fit_followup_kind.py",
        "command": f"--before <checkout of {_commit(args.before)}> --scales {args.scales} "
                   "--write" + (f" --drop {args.drop}" if args.drop else ""),
        "data": "every turn after some papers of the blind chat rounds 1-11 and the "
                "calibrate halves of rounds 13 on (bench/reading/chats_blind*.jsonl), and "
                "the calibrate halves of the follow-up wordings sets "
                "(bench/understanding/followups/); labelled leave, select, position, about "
                "by their writers; round 12 and every report half kept out",
        "turns_fitted": int(fitted.sum()),
        "figures": {"left_out_mean": figures["left_out"]["mean"],
                    "reports": figures["reports"]}})


if __name__ == "__main__":
    sys.exit(main())
