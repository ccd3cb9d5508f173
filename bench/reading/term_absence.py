"""The near-miss rule for ML terms (retrieval/decide.py, names_absent_term), decisions only: of
the blind near misses, the misses it silences beyond the rules shipped before it
(names_unknown_subject, names_absent_name), the controls it silences wrongly, and the real
list topics it silences wrongly (the blind chats' list and switch turns, the list sets'
questions: every one of them has papers), for the term list as shipped (ragqa/data/
ml_phrases.tsv) and for others (`--phrases FILE ...`: bench/glossary/title_phrases.py
--min-titles N).

Chosen on development data only: near misses and chats of rounds 1-12 whole and the `dev`
halves of rounds 13 on; the list sets but the held-out ones. `--report` reads the `heldout`
halves of rounds 13 on instead (figures to report, nothing chosen on them).

    python bench/reading/term_absence.py --home DIR [--phrases FILE ...] [--report] [--cases]
        [--json]

DIR holds the slices as bench/reading/blind.py ingests them (run it first for each round).
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

FIRST_SPLIT_ROUND = 13
# List sets whose figures are held out (bench/lists/eval.py: the blind sets' report halves are
# read only by their own scripts; the second set is reported whole).
HELD_OUT_LIST_SETS = {"www2025", "iclr2018"}


def _round(path: str) -> int:
    found = re.search(r"blind(\d*)\.jsonl$", path)
    return int(found.group(1) or 1) if found else 0


def _wanted(path: str, split: str, report: bool) -> bool:
    if _round(path) < FIRST_SPLIT_ROUND:
        return not report
    return (split == "heldout") == report


def rows(report: bool) -> list[tuple[str, str, str]]:
    """(slice, kind, question): near misses "miss"/"control", real topics "topic"."""
    out = []
    for path in sorted(glob.glob(str(HERE / "near_misses_blind*.jsonl"))):
        out += [(r["slice"], r["kind"], r["question"])
                for r in map(json.loads, Path(path).read_text().splitlines())
                if _wanted(path, r.get("split", "dev"), report)]
    for path in sorted(glob.glob(str(HERE / "chats_blind*.jsonl"))):
        for chat in map(json.loads, Path(path).read_text().splitlines()):
            if _wanted(path, chat.get("split", "dev"), report):
                out += [(chat["slice"], "topic", t["say"]) for t in chat["turns"]
                        if t["kind"] in ("list", "switch")]
    if not report:
        for path in sorted(glob.glob(str(HERE.parent / "lists" / "*.questions.jsonl"))):
            name = Path(path).name.split(".")[0]
            if name in HELD_OUT_LIST_SETS or name in ("scifact150", "seeds", "tiny"):
                continue
            out += [(name, "topic", r["question"])
                    for r in map(json.loads, Path(path).read_text().splitlines())
                    if r["kind"] == "list"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--phrases", nargs="*", default=[])
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from ragqa.app import open_for_query
    from ragqa.config import load_settings
    from ragqa.errors import UserError
    from ragqa.index import lexical
    from ragqa.retrieval.decide import names_absent_name, names_absent_term, names_unknown_subject

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    indexes: dict = {}

    def index(name: str):  # noqa: ANN202
        if name not in indexes:
            try:
                indexes[name] = open_for_query(settings, name).lexical
            except UserError:  # (not ingested: blind.py ingests a round's slices)
                indexes[name] = None
        return indexes[name]

    items = [(s, k, q) for s, k, q in rows(args.report) if index(s) is not None]
    missing = sorted({s for s, _, _ in rows(args.report)} - {s for s, _, _ in items})
    shipped = [names_unknown_subject(index(s), q) or names_absent_name(index(s), q)
               for s, _, q in items]
    table: dict[str, dict[str, str]] = {}
    variants = [("shipped list", lexical.PHRASES_FILE)] + [(p, Path(p)) for p in args.phrases]
    for label, path in variants:
        lexical.PHRASES_FILE = path
        lexical.known_phrases.cache_clear()
        counts: dict[str, list[int]] = {}
        for (name, kind, question), before in zip(items, shipped, strict=True):
            added = not before and names_absent_term(index(name), question)
            cell = counts.setdefault(kind, [0, 0, 0])
            cell[0] += before
            cell[1] += added
            cell[2] += 1
            if args.cases and added:
                print(json.dumps({"variant": label, "slice": name, "kind": kind,
                                  "question": question}), file=sys.stderr)
        table[label] = {kind: f"{a} -> {a + b} of {n}" for kind, (a, b, n) in
                        sorted(counts.items())}
    report = {"split": "heldout" if args.report else "dev", "silenced": table,
              "slices_not_ingested": missing}
    print(json.dumps(report, indent=1 if args.json else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
