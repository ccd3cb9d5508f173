"""Issue 46: the language of a Latin-script question, by fastText's identifier
(ragqa/models/language.py, ENGLISH_UNLESS). How sure must it be of a language other than
English before a question is read as in it?

Calibration texts (the threshold is chosen on these): the English questions and turns of the
development sets (blind chat rounds 1-12 and the calibrate halves of 13 on, the calibrate halves
of the follow-up wordings sets, the list questions of nips2018 and acl2022, fact rounds 1-3) and
the calibrate halves of the follow-up sets in other languages
(bench/understanding/followups/followup_multilingual_*.jsonl). Reported apart: the same kinds of
text from the report halves (chat rounds 13 on, the wordings sets, the sets in other languages),
never looked at to choose. "before" is detect_language of `--before CHECKOUT` (the word lists
it replaced), on the same texts: a text counts as read right when English is read as English
and another language as not English.

    python bench/understanding/language_threshold.py [--before CHECKOUT] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "reading"))

from facts import lists_eval  # noqa: E402  (bench/reading/facts.py)

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
FIRST_SPLIT_CHAT_ROUND = 13


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def texts() -> dict[str, list[tuple[str, str]]]:
    """(language code, text) by part: "calibrate" or "report"."""
    half = lists_eval().blind_half
    parts: dict[str, list[tuple[str, str]]] = {"calibrate": [], "report": []}
    reading = ROOT / "bench" / "reading"
    for path in sorted(reading.glob("chats_blind*.jsonl")):
        number = path.stem.removeprefix("chats_blind") or "1"
        for chat in _lines(path):
            part = "report" if int(number) >= FIRST_SPLIT_CHAT_ROUND and \
                chat["split"] == "heldout" else "calibrate"
            parts[part] += [("en", turn["say"]) for turn in chat["turns"]]
    for path in sorted((HERE / "followups").glob("followup_wordings_*.jsonl")):
        for item in _lines(path):
            parts[half(item["id"])].append(("en", item["say"]))
    for name in ("nips2018", "acl2022"):
        parts["calibrate"] += [("en", q["question"]) for q in
                               _lines(ROOT / "bench" / "lists" / f"{name}.questions.jsonl")]
    for path in sorted(reading.glob("facts*.jsonl")):
        if path.stem.startswith(("facts_", "facts2_", "facts3_")):
            parts["calibrate"] += [("en", q["question"]) for q in _lines(path)]
    for path in sorted((HERE / "followups").glob("followup_multilingual_*.jsonl")):
        for item in _lines(path):
            parts[half(item["id"])].append((item["lang"], item["say"]))
    return parts


BEFORE_CODE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
try:
    from ragqa.models.language import detect_language
except ImportError:
    from ragqa.answering.answer import detect_language
print(json.dumps([detect_language(t) for t in json.load(sys.stdin)]))
"""


def before(checkout: Path, items: list[str]) -> list[str]:
    result = subprocess.run([sys.executable, "-c", BEFORE_CODE, str(checkout)],
                            input=json.dumps(items), capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def right(code: str, english: bool) -> bool:
    return english == (code == "en")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout whose detect_language to compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from ragqa.models.language import ENGLISH_UNLESS, detect_language, identified

    report: dict = {"chosen": ENGLISH_UNLESS}
    for part, items in texts().items():
        english = [t for c, t in items if c == "en"]
        other = [(c, t) for c, t in items if c != "en"]
        read = [identified(t) for _, t in other]
        entry: dict = {"english": len(english), "other": len(other), "thresholds": {}}
        read_english = [identified(t) for t in english]
        for threshold in THRESHOLDS:
            entry["thresholds"][str(threshold)] = {
                "english_read_as_other": sum(c != "en" and p >= threshold
                                             for c, p in read_english),
                "other_read_as_other": sum(c != "en" and p >= threshold for c, p in read)}
        # The shipped detect_language (script first, then the identifier at ENGLISH_UNLESS).
        entry["detect_language"] = {
            "english_read_as_other": sum(detect_language(t) != "English" for t in english),
            "other_read_as_other": sum(detect_language(t) != "English" for _, t in other)}
        if args.before:
            got = before(args.before, english + [t for _, t in other])
            entry["before"] = {
                "english_read_as_other": sum(g != "English" for g in got[:len(english)]),
                "other_read_as_other": sum(g != "English" for g in got[len(english):])}
        by_language: dict[str, list[int]] = {}
        for (code, text) in other:
            counts = by_language.setdefault(code, [0, 0])
            counts[0] += detect_language(text) != "English"
            counts[1] += 1
        entry["other_by_language"] = {c: f"{n}/{m}" for c, (n, m) in sorted(by_language.items())}
        report[part] = entry
    print(json.dumps(report, indent=1) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
