"""Check the independent fact sets (facts_*.jsonl … facts9_*.jsonl) against the
corpus they were written from (../shared/data/mlconf).

Per file: ids unique, fields present, a known kind and split; every paper is in the slice its id
names (nips2018-…: venue nips, year 2018; acl2022-…, aistats2024-…; none held out: no ICML 2019
or COLM 2025 paper)
with the corpus's title; every answer sentence is a verbatim part of the paper's text and the phrase
a part of one answer sentence. Across files: no paper is asked about by two sets (each later set
was written on papers the earlier ones had not used).

    python bench/reading/check_facts.py [--data ../shared/data/mlconf] [FILE ...]

Exit 1 with one line per problem when anything fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "mlconf"
# Held out of every set (kept for independent evaluation).
HELD_OUT = {("icml", 2019), ("colm", 2025)}
KINDS = {"quantity", "comparison", "propose", "condition", "dataset", "other"}
SPLITS = {"dev", "heldout"}
FIELDS = ("id", "question", "kind", "paper_id", "title", "answer_sentences", "phrase", "split")
SETS = sorted(p.stem for p in HERE.glob("facts*_*.jsonl"))


def problems_of(fact: dict, corpus: dict[str, dict]) -> list[str]:
    if missing := [k for k in FIELDS if k not in fact]:
        return [f"missing fields {missing}"]
    found = []
    if fact["kind"] not in KINDS:
        found.append(f"unknown kind {fact['kind']!r}")
    if fact["split"] not in SPLITS:
        found.append(f"unknown split {fact['split']!r}")
    paper = corpus.get(fact["paper_id"])
    if paper is None or f"{paper['venue']}{paper['year']}" != fact["paper_id"].split("-")[0] \
            or (paper["venue"], paper["year"]) in HELD_OUT:
        return [*found, f"paper {fact['paper_id']} is not in a named slice"]
    if fact["title"] != paper["title"]:
        found.append("title differs from the corpus")
    sentences = fact["answer_sentences"]
    if not 1 <= len(sentences) <= 3:
        found.append(f"{len(sentences)} answer sentences")
    found += [f"answer sentence not in the text: {s[:60]!r}" for s in sentences
              if s not in paper["text"]]
    if not any(fact["phrase"] in s for s in sentences):
        found.append(f"phrase in no answer sentence: {fact['phrase']!r}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("files", nargs="*", type=Path,
                        default=[HERE / f"{name}.jsonl" for name in SETS])
    args = parser.parse_args()
    with gzip.open(args.data / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        corpus = {r["_id"]: r for r in map(json.loads, lines)}
    bad, asked_in = 0, {}
    for path in args.files:
        facts = [json.loads(line) for line in path.open() if line.strip()]
        found = []
        for fact in facts:
            found += [f"{fact.get('id')}: {p}" for p in problems_of(fact, corpus)]
            if (earlier := asked_in.setdefault(fact.get("paper_id"), path.name)) != path.name:
                found.append(f"{fact.get('id')}: paper {fact['paper_id']} is asked about in "
                             f"{earlier} too")
        if len({f.get("id") for f in facts}) != len(facts):
            found.append("ids are not unique")
        print(f"{path.name}: {len(facts)} questions, {len(found)} problems")
        for problem in found:
            print(f"  {problem}")
        bad += len(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
