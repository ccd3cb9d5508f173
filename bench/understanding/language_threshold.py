"""Issue 46: the language of a Latin-script question, by fastText's identifier
(ragqa/models/language.py: MIN_WORDS, ENGLISH_UNLESS, LONG_WORDS, ENGLISH_AT_MOST). How long must
a question be, and how sure the identifier of a language other than English (or how unsure of
English), before the question is read as in it?

Calibration texts (the settings are chosen on these, and the grid is shown on these only): the
English questions and turns of the development sets (blind chat rounds 1-12 and the calibrate
halves of 13 on, the calibrate halves of the follow-up wordings sets, the list questions of
nips2018 and acl2022 and their keywords and topics, fact rounds 1-3) and the calibrate halves of
the follow-up sets in other languages
(bench/understanding/followups/followup_multilingual_*.jsonl). Reported apart: the same kinds of
text from the report halves (chat rounds 13 on, the wordings sets, the sets in other languages),
with the shipped settings only. "before" is detect_language of `--before CHECKOUT` (the word
lists it replaced), on the same texts: a text counts as read right when English is read as
English and another language as not English.

    python bench/understanding/language_threshold.py [--before CHECKOUT]
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

FIRST_SPLIT_CHAT_ROUND = 13
THRESHOLDS = (0.5, 0.6, 0.7)  # ENGLISH_UNLESS
MIN_WORDS = (1, 2, 3)
ENGLISH_AT_MOST = (0.05, 0.1, 0.2)  # in LONG_WORDS (4) words or more


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
    parts["calibrate"] += [("en", k) for k in keywords(("nips2018", "acl2022"))]
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


def rule(probabilities: dict[str, float], words: int, unless: float, min_words: int,
         at_most: float) -> bool:
    """Whether a Latin-script text is read as another language (models/language.py's rule at
    these settings)."""
    from ragqa.models.language import _NAMES, LONG_WORDS

    code, top = max(probabilities.items(), key=lambda kv: kv[1])
    return words >= min_words and code in _NAMES and (
        top >= unless or (words >= LONG_WORDS and probabilities.get("en", 0.0) < at_most))


def keywords(names: tuple[str, ...]) -> list[str]:
    """The keywords and topics of the list questions of these slices (short English strings,
    as users type them as a topic: "diffusion", "posterior sampling")."""
    found: set[str] = set()
    for name in names:
        for question in _lines(ROOT / "bench" / "lists" / f"{name}.questions.jsonl"):
            for key in ("keywords", "topic"):
                value = question.get(key)
                found |= set(value) if isinstance(value, list) else {value} if value else set()
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout whose detect_language to compare")
    args = parser.parse_args()
    from ragqa.models import language

    report: dict = {"shipped": {"MIN_WORDS": language.MIN_WORDS,
                                "ENGLISH_UNLESS": language.ENGLISH_UNLESS,
                                "LONG_WORDS": language.LONG_WORDS,
                                "ENGLISH_AT_MOST": language.ENGLISH_AT_MOST}}
    for part, items in texts().items():
        english = [t for c, t in items if c == "en"]
        other = [(c, t) for c, t in items if c != "en"]
        entry: dict = {"english": len(english), "other": len(other)}
        if part == "calibrate":  # the settings are chosen here, and only here
            latin = [t for c, t in other if language.detect_language(t) not in
                     ("Chinese", "Japanese", "Korean", "Russian")]
            seen_english = [(identified_words(t)) for t in english]
            seen_other = [(identified_words(t)) for t in latin]
            entry["latin_script_other"] = len(latin)
            entry["settings"] = {}
            for unless in THRESHOLDS:
                for min_words in MIN_WORDS:
                    entry["settings"][f"{min_words}+ words: {unless} alone"] = _counts(
                        seen_english, seen_other, unless, min_words, -1.0)
                    for at_most in ENGLISH_AT_MOST:
                        entry["settings"][f"{min_words}+ words: {unless}, or English below "
                                          f"{at_most}"] = _counts(
                            seen_english, seen_other, unless, min_words, at_most)
        entry["shipped"] = {
            "english_read_as_other": sum(language.detect_language(t) != "English"
                                         for t in english),
            "other_read_as_other": sum(language.detect_language(t) != "English"
                                       for _, t in other)}
        entry["english_read_as_other"] = [t for t in english
                                          if language.detect_language(t) != "English"]
        if args.before:
            got = before(args.before, english + [t for _, t in other])
            entry["before"] = {
                "english_read_as_other": sum(g != "English" for g in got[:len(english)]),
                "other_read_as_other": sum(g != "English" for g in got[len(english):])}
        by_language: dict[str, list[int]] = {}
        for code, text in other:
            counts = by_language.setdefault(code, [0, 0])
            counts[0] += language.detect_language(text) != "English"
            counts[1] += 1
        entry["other_by_language"] = {c: f"{n}/{m}" for c, (n, m) in sorted(by_language.items())}
        report[part] = entry
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


def identified_words(text: str) -> tuple[dict[str, float], int]:
    from ragqa.models.language import identified

    return identified(text), len(text.split())


def _counts(english: list, other: list, unless: float, min_words: int, at_most: float) -> str:
    misread = sum(rule(p, n, unless, min_words, at_most) for p, n in english)
    caught = sum(rule(p, n, unless, min_words, at_most) for p, n in other)
    return f"English read as other {misread}/{len(english)}, other caught {caught}/{len(other)}"


if __name__ == "__main__":
    sys.exit(main())
