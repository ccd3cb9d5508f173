"""Issue 46, item 1: the follow-up kind model for chat turns in other languages
(ragqa/answering/followups.py `resolve_multilingual`;
ragqa/data/followup_kind_multilingual_model.json, which `--write` writes with its provenance).

The English model (fit_followup_kind.py) reads English words; a turn in German or Japanese has
none of them, and before this model most such turns were read as a new topic (and a Chinese one
by its own phrase rules). This model reads what no language's words make: the turn's
multilingual-e5 embedding (as a query), whether one paper was shown ("cue:one_paper") and the
turn's last mark. A place ("the second one") is then read by followups.multilingual_place.

Data:
- the English turns the English model is fitted on (fit_followup_kind.labelled and fitted_mask:
  blind chat rounds 1-11, the calibrate halves of rounds 13 on and of the follow-up wordings
  sets), as they are: e5 maps a language's turn near its English meaning;
- the follow-up sets in other languages
  (bench/understanding/followups/followup_multilingual_*.jsonl, session 33: two helpers who
  never saw ragqa, 240 turns each, uai2023 in Chinese, Japanese, Korean and Russian,
  corl2024 in German, French, Spanish and Portuguese), split by
  eval.blind_half of each id before anything was read: the calibrate half is fitted on, the
  report half only reported.

Reported on the report halves, by language: the classifier's kind ("model"), and what the chat
decides ("chat": followups.resolve of this checkout, which reads the place too; "before": that of
`--before CHECKOUT`), each as the kind right and as the papers right (a position: the paper at
that place; about: the shown papers; select and leave: the kind). "en only" is the classifier
fitted on the English turns alone (no turn in another language).

    python bench/understanding/fit_followup_kind_multilingual.py --home DIR --before CHECKOUT \
        --write

    python bench/understanding/fit_followup_kind_multilingual.py --home DIR [--data DIR/mlconf]
        [--before CHECKOUT] [--scales 3,6] [--foreign-weight 3] [--json] [--write]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "reading"))
sys.path.insert(0, str(HERE))

from choice_fit import Fit, show  # noqa: E402
from facts import DEFAULT_DATA, lists_eval  # noqa: E402
from fit_followup_kind import (  # noqa: E402
    KINDS,
    L2,
    _commit,
    fitted_mask,
    labelled,
    write_choice_model,
)

MULTILINGUAL_ROUND = 201
# Chosen by each language's calibrate turns left out in turn (figures["left out (kind)"]):
# scale 3 with the fitted turns in other languages weighed 3 reads 0.819 of them, scales 6 and
# 10 0.797 and 0.784; weighed 1, 0.797, 0.784 and 0.789 (session 33).
SENSE_SCALE = 3.0
FOREIGN_WEIGHT = 3.0


def multilingual_sets() -> list[tuple[int, str, list[dict]]]:
    files = sorted((HERE / "followups").glob("followup_multilingual_*.jsonl"))
    return [(MULTILINGUAL_ROUND + i, path.stem.removeprefix("followup_multilingual_"),
             [json.loads(line) for line in path.open() if line.strip()])
            for i, path in enumerate(files)]


def foreign_rows() -> list[dict]:
    rows = []
    for round_no, name, items in multilingual_sets():
        for item in items:
            rows.append({"round": round_no, "source": f"multilingual {name}", "slice": name,
                         "last": item["shown"], "text": item["say"], "kind": item["kind"],
                         "papers": item["papers"], "lang": item["lang"],
                         "half": lists_eval().blind_half(item["id"])})
    return rows


def with_features(rows: list[dict]) -> None:
    """Each row's named multilingual features (followups.multilingual_kind_features)."""
    from ragqa.answering.followups import multilingual_kind_features

    for row in rows:
        row["features"] = multilingual_kind_features(row["text"], len(row["last"]))


CHAT_CODE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ragqa.answering.followups import resolve
try:  # a Chinese turn was read by its own phrase rules before session 33
    from ragqa.answering.chat import _resolve_chinese
except ImportError:
    _resolve_chinese = None
try:
    from ragqa.models.language import detect_language
except ImportError:
    from ragqa.answering.answer import detect_language
from ragqa.app import open_for_query
from ragqa.config import load_settings
settings = load_settings({"RAGQA_HOME": sys.argv[2], "RAGQA_ENV_FILE": "/nonexistent"})
out, indexes = [], {}
for item in json.load(sys.stdin):
    name = item["slice"]
    if name not in indexes:
        indexes[name] = open_for_query(settings, name).lexical
    if _resolve_chinese is not None and detect_language(item["text"]) == "Chinese":
        r = _resolve_chinese(item["text"], item["last"])
    else:
        r = resolve(item["text"], item["last"], indexes[name])
    out.append([r.kind, list(r.papers)])
print(json.dumps(out))
"""


def chat_readings(checkout: Path, home: Path, rows: list[dict]) -> list[tuple[str, list[str]]]:
    """What the chat of `checkout` does with each turn: (kind, papers) of its Resolution."""
    items = [{"slice": r["slice"], "text": r["text"], "last": r["last"]} for r in rows]
    result = subprocess.run([sys.executable, "-c", CHAT_CODE, str(checkout), str(home)],
                            input=json.dumps(items), capture_output=True, text=True, check=True)
    return [tuple(x) for x in json.loads(result.stdout)]


def as_kind(kind: str, papers: list[str], last: list[str]) -> str:
    """A Resolution read as a labelled kind: an "about" one paper of several is a position."""
    return "position" if kind == "about" and len(papers) == 1 and len(last) > 1 else kind


def papers_right(kind: str, papers: list[str], row: dict) -> bool:
    if row["kind"] in ("leave", "select"):
        return kind == row["kind"]
    return kind == "about" and sorted(papers) == sorted(row["papers"])


def model_readings(predicted: np.ndarray, rows: list[dict]) -> list[tuple[str, list[str]]]:
    """The classifier's kinds with the place read as the chat reads it (resolve_multilingual)."""
    from ragqa.answering.followups import multilingual_place

    out = []
    for k, row in zip(predicted, rows, strict=True):
        kind, last = KINDS[k], row["last"]
        if kind == "leave":
            out.append(("leave", []))
            continue
        place = multilingual_place(row["text"]) if kind == "position" else None
        if place is not None and -len(last) <= place < len(last):
            out.append(("about", [last[place]]))
        elif kind == "select":
            out.append(("select", list(last)))
        else:
            out.append(("about", list(last)))
    return out


def score(readings: list[tuple[str, list[str]]], rows: list[dict], mask: np.ndarray) -> dict:
    picked = [(r, row) for r, row, m in zip(readings, rows, mask, strict=True) if m]
    kind = np.mean([as_kind(k, p, row["last"]) == row["kind"] for (k, p), row in picked])
    papers = np.mean([papers_right(k, p, row) for (k, p), row in picked])
    return {"kind": round(float(kind), 3), "papers": round(float(papers), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--before", type=Path, help="a checkout whose chat reading to compare")
    parser.add_argument("--scales", default=str(SENSE_SCALE),
                        help="embedding scales to compare by each set left out in turn; the "
                             "model is fitted with the first")
    parser.add_argument("--foreign-weight", type=float, default=FOREIGN_WEIGHT,
                        help="the weight of a fitted turn in another language against an "
                             "English one's 1")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help="write the model to ragqa/data/followup_kind_multilingual_model.json")
    args = parser.parse_args()
    from ragqa.retrieval.kinds import multilingual_question_vectors

    english = labelled(args.home, args.data)
    english_fitted = fitted_mask(english)
    english = [r for r, f in zip(english, english_fitted, strict=True) if f]
    foreign = foreign_rows()
    rows = english + foreign
    with_features(rows)
    vectors = multilingual_question_vectors([r["text"] for r in rows])
    is_foreign = np.array([r["source"].startswith("multilingual") for r in rows])
    fit = Fit(rows, vectors, KINDS, L2, np.where(is_foreign, args.foreign_weight, 1.0))
    halves = np.array([r["half"] for r in rows])
    fitted = ~is_foreign | (halves == "calibrate")
    scales = [float(s) for s in args.scales.split(",")]
    args.scale = scales[0]
    model = fit.fit(fitted, args.scale)
    english_only = fit.fit(~is_foreign, args.scale)
    report = is_foreign & (halves == "report")
    calibrate = is_foreign & (halves == "calibrate")
    langs = np.array([r.get("lang", "en") for r in rows])
    # Each language's calibrate turns read by a model fitted without them (the English turns and
    # the other languages' calibrate turns): how a language no fitted turn is in fares; chooses
    # the scale and the weight.
    left_out: dict = {}
    for scale in scales:
        right = 0.0
        for lang in sorted(set(langs[calibrate])):
            out = calibrate & (langs == lang)
            accuracy = fit.accuracy(fit.fit(fitted & ~out, scale), out)
            left_out.setdefault(lang, {})[f"scale {scale}"] = round(accuracy, 3)
            right += accuracy * out.sum()
        left_out.setdefault("all", {})[f"scale {scale}"] = round(right / calibrate.sum(), 3)

    readings = {"model": model_readings(fit.predict(model, np.ones(len(rows), bool)), rows),
                "en only": model_readings(fit.predict(english_only, np.ones(len(rows), bool)),
                                          rows)}
    foreign_idx = np.flatnonzero(is_foreign)
    for name, checkout in (("before", args.before), ("chat", ROOT if args.write else None)):
        if checkout is None:
            continue
        if name == "chat":
            write_model(model, fitted, {}, args)  # the chat reads the file just written
        got = chat_readings(checkout, args.home, [rows[i] for i in foreign_idx])
        full: list = [("", [])] * len(rows)
        for i, g in zip(foreign_idx, got, strict=True):
            full[i] = g
        readings[name] = full
    figures: dict = defaultdict(dict)
    for part, mask in (("report", report), ("calibrate (fitted)", calibrate)):
        for lang in ["all", *sorted(set(langs[mask]))]:
            sub = mask & ((langs == lang) if lang != "all" else True)
            figures[f"{part} half"][lang] = {
                "turns": int(sub.sum()),
                **{name: score(r, rows, sub) for name, r in readings.items()}}
    figures["left out (kind)"] = left_out
    figures["fit"] = {"english_turns": int((~is_foreign).sum()),
                      "foreign_turns_fitted": int(calibrate.sum()),
                      "features": len(model["names"]), "scale": args.scale}
    figures = dict(figures)
    show(figures, as_json=args.json)
    if args.write:
        write_model(model, fitted, figures, args)
    return 0


def write_model(chosen: dict, fitted: np.ndarray, figures: dict, args) -> None:  # noqa: ANN001
    from ragqa.answering.followups import FOLLOWUP_KIND_MULTILINGUAL_MODEL
    from ragqa.models.encoders import MultilingualE5

    write_choice_model(FOLLOWUP_KIND_MULTILINGUAL_MODEL, chosen, MultilingualE5.embedder_id, {
        "script": "bench/understanding/fit_followup_kind_multilingual.py",
        "command": f"--before <checkout of {_commit(args.before)}> --scales {args.scales} "
                   f"--foreign-weight {args.foreign_weight} --write",
        "data": "the English model's fitted turns (fit_followup_kind.py: blind chat rounds "
                "1-11, calibrate halves of rounds 13 on and of the follow-up wordings sets) "
                "and the calibrate halves of the follow-up sets in other languages "
                "(bench/understanding/followups/followup_multilingual_*.jsonl); their "
                "report halves kept out",
        "turns_fitted": int(fitted.sum()),
        "figures": {k: v for k, v in figures.items() if k != "fit"}})


if __name__ == "__main__":
    sys.exit(main())
