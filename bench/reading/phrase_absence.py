"""A near miss named in common words ("anything on slice sampling?", "papers that use sparse
autoencoders to interpret …"): every word is in the collection, never together. For each
variant of the rule "a short part of the question whose words no paper holds close together
names a subject the collection lacks" (names_unheld_phrase below: parts of 2 to K content
words, the words within `len + slack` of one another in one of the best BM25 papers for them),
the blind near misses it silences, the controls it silences wrongly, and the real list topics
(chat lists and switches, the list sets' questions) it silences wrongly, beside the rules
already shipped (names_unknown_subject, names_absent_name). Decision rules only: no search.

Rounds 1-13 and round 14's calibrate half (`dev`) choose the variant; round 14's report half
(`heldout`) is only reported, with --report.

    python bench/reading/phrase_absence.py --homes /work/readhome /work/benchhome [--report]
        [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


def names_unheld_phrase(index, query: str, most_words: int = 3,  # noqa: ANN001
                        slack: int = 2) -> bool:
    """Whether a "which papers" question names its subject in common words that no paper
    holds together: "anything on slice sampling?" over papers that write "slice" and
    "sampling", never side by side. Every short part of the question (2 to `most_words`
    content words: the topic, an alternative, an example) must be so, its words within
    `len + slack` of one another in none of the best BM25 papers for them
    (tried, not shipped: docs/benchmarks.md)."""
    from ragqa.retrieval.decide import _LATIN, _term_groups
    from ragqa.retrieval.question import understand

    parts = [[g for g in _term_groups(index, sub) if _LATIN.search(g[0])]
             for sub in understand(query).subqueries]
    short = [groups for groups in parts if 0 < len(groups) <= most_words]
    if not short or not 0 < len(parts[0]) <= most_words:
        return False
    return all(len(groups) > 1 and not _held_together(index, groups, len(groups) + slack)
               for groups in short)


def _held_together(index, groups: list[list[str]], window: int) -> bool:  # noqa: ANN001
    from ragqa.index import lexical
    from ragqa.retrieval.decide import NAME_CANDIDATES, _within

    rows = [row for row, _ in index.search(" ".join(g[0] for g in groups), NAME_CANDIDATES)]
    for paper in index.papers_by_index(rows):
        positions: dict[str, list[int]] = {}
        for i, term in enumerate(lexical.terms(lexical.paper_document(paper))):
            positions.setdefault(term, []).append(i)
        found = [sorted(i for t in g for i in positions.get(t, [])) for g in groups]
        if _within(found, window):
            return True
    return False


VARIANTS = [(k, slack) for k in (2, 3, 4) for slack in (1, 2, 4)]


def _wanted(path: str, split: str, report: bool) -> bool:
    """Round 14 by the half asked for; the earlier rounds only when choosing (not --report)."""
    if path.endswith("blind14.jsonl"):
        return (split == "heldout") == report
    return not report


def rows(report: bool) -> list[tuple[str, str, str]]:
    """(slice, kind, question): near misses "miss"/"control", real topics "topic"."""
    out = []
    for path in sorted(glob.glob(str(HERE / "near_misses_blind*.jsonl"))):
        out += [(r["slice"], r["kind"], r["question"])
                for r in map(json.loads, Path(path).read_text().splitlines())
                if _wanted(path, r["split"], report)]
    for path in sorted(glob.glob(str(HERE / "chats_blind*.jsonl"))):
        for chat in map(json.loads, Path(path).read_text().splitlines()):
            if _wanted(path, chat["split"], report):
                out += [(chat["slice"], "topic", t["say"]) for t in chat["turns"]
                        if t["kind"] in ("list", "switch")]
    if not report:
        for path in sorted(glob.glob(str(HERE.parent / "lists" / "*.questions.jsonl"))):
            name = Path(path).name.split(".")[0]
            if name == "scifact150":
                continue
            for r in map(json.loads, Path(path).read_text().splitlines()):
                out.append((name, "topic" if r["kind"] == "list" else "absent-topic",
                            r["question"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--homes", nargs="+", required=True)
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from ragqa.app import open_for_query
    from ragqa.config import load_settings
    from ragqa.retrieval.decide import names_absent_name, names_unknown_subject

    indexes: dict = {}

    def index(name: str):  # noqa: ANN202
        if name not in indexes:
            for home in args.homes:
                if (Path(home) / "slices" / f"{name}.jsonl").is_file():
                    settings = load_settings({"RAGQA_HOME": home,
                                              "RAGQA_ENV_FILE": "/nonexistent"})
                    indexes[name] = open_for_query(settings, name).lexical
                    break
            else:
                indexes[name] = None  # (the seeds' own chats: not a conference slice)
        return indexes[name]

    counts: dict[str, dict[str, list[int]]] = {}
    for name, kind, question in rows(args.report):
        idx = index(name)
        if idx is None:
            continue
        shipped = names_unknown_subject(idx, question) or names_absent_name(idx, question)
        for label, fired in [("shipped", shipped)] + [
                (f"K={k} slack={slack}", shipped or names_unheld_phrase(idx, question, k, slack))
                for k, slack in VARIANTS]:
            cell = counts.setdefault(label, {}).setdefault(kind, [0, 0])
            cell[0] += fired
            cell[1] += 1
    table = {label: {kind: f"{a}/{b}" for kind, (a, b) in sorted(by_kind.items())}
             for label, by_kind in counts.items()}
    print(json.dumps(table, indent=None if not args.json else 1))
    if not args.json:
        for label, by_kind in table.items():
            print(label, by_kind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
