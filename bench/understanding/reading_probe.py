"""Issue 46, item 2: whether a merge of detectors reads questions as before. Runs the
question-reading functions of a checkout (the topic, frame, chat lead, exclusions, pointing
words, place, property, follow-up cues, fact kinds, artifacts asked) over every question string
of the bench sets (bench/**/*.jsonl: chat turns, near misses, facts, list and wording
questions) and writes one JSON line per question; `--diff` counts and shows where two such
files read a question otherwise.

    python bench/understanding/reading_probe.py --code CHECKOUT --out FILE
    python bench/understanding/reading_probe.py --diff BEFORE AFTER [--show N]

Session 39: 7,996 questions; the pointing-word and trailing-request merges read all alike, the
request-frame merge one otherwise ("review of X").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def questions() -> list[str]:
    """Every question string of the bench sets, once, sorted."""
    texts = set()
    for path in ROOT.glob("bench/**/*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict):
                continue
            texts |= {row.get(k) for k in ("question", "say", "text", "query", "q")}
            texts |= {t.get("say") for t in row.get("turns") or [] if isinstance(t, dict)}
    return sorted(t for t in texts if isinstance(t, str) and t.strip())


def readings(code: Path) -> dict[str, object]:
    """The reading functions of the checkout at `code`, by name."""
    sys.path.insert(0, str(code))
    from ragqa.answering import artifacts, chat, facts, followups
    from ragqa.retrieval import question

    def pointing(text: str) -> list:
        if hasattr(question, "PLURAL_REF"):  # before session 39
            return [bool(question.PLURAL_REF.search(text)),
                    question.PLURAL_REF.sub("@", text, count=1),
                    question.SINGULAR_REF.sub("@", text, count=1)]
        return [question.points_at_several(text),
                question.replace_pointer(text, lambda m: "@", plural=True),
                question.replace_pointer(text, lambda m: "@", plural=False)]

    def cues(text: str) -> dict:
        return {k: v for k, v in followups.kind_features(text, [], None).items()
                if k.startswith("cue:") and k != "cue:asks_for_papers"}

    return {"understand": question.understand, "topic_of": question.topic_of,
            "is_list": question.is_list_question, "lead": question.without_chat_lead,
            "excluded": question.without_excluded, "strip_frame": question.strip_frame,
            "described": question.described_paper, "pointing": pointing,
            "refers": lambda t: question.REFERS.sub(" ", t), "place": followups.list_place,
            "announces": followups.announces_new_topic, "content": followups.content_terms,
            "property": followups.property_phrase, "without_refs": followups.without_references,
            "cues": cues, "asked": lambda t: sorted(facts.asked(t)), "figure": facts.asks_figure,
            "artifact": artifacts.asked_artifact, "released": artifacts.asks_whether_released,
            "many": artifacts.asked_many, "strip_refs": chat.strip_references}


def _value(function, text: str) -> object:  # noqa: ANN001
    try:
        value = function(text)
    except Exception as error:  # noqa: BLE001  (a reading that fails is a reading too)
        return f"error: {type(error).__name__}"
    return value if isinstance(value, (str, bool, int, float, type(None), list, dict)) \
        else repr(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="the checkout whose ragqa reads")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--show", type=int, default=5, help="questions shown per reading")
    args = parser.parse_args()
    if args.diff:
        before, after = ([json.loads(line) for line in path.open()] for path in args.diff)
        changed: Counter = Counter()
        for old, new in zip(before, after, strict=True):
            for name in old:
                if old[name] != new[name]:
                    changed[name] += 1
                    if changed[name] <= args.show:
                        print(f"{name}: {old['q'][:100]!r}\n  {old[name]!s:.200}\n  "
                              f"{new[name]!s:.200}")
        print(json.dumps({"questions": len(before), "read_otherwise": dict(changed)}))
        return 0
    if not (args.code and args.out):
        parser.error("--code and --out, or --diff BEFORE AFTER")
    functions = readings(args.code.resolve())
    texts = questions()
    with args.out.open("w", encoding="utf-8") as out:
        for text in texts:
            row = {"q": text, **{name: _value(f, text) for name, f in functions.items()}}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(texts)} questions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
