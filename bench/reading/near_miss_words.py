"""How many content words a list topic may have for a word no paper uses to make it a near
miss (retrieval/decide.py NEAR_MISS_TOPIC_WORDS): for each size, the blind near misses caught
and controls lost (rounds 1-2, or --sets), and bench/lists' real questions silenced, counting
the name rule too. Decision rules only: no search runs.

    python bench/reading/near_miss_words.py --home /tmp/lists_home [--sets F.jsonl ...]
        [--word-similarity]   # instead: each absent word alone, its nearest paper's cosine
    (HOME holds the nips2018 and acl2022 collections: bench/reading/blind.py ingests them)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUNDS = ("near_misses_blind.jsonl", "near_misses_blind2.jsonl")


def word_similarity(rows: list[tuple[str, str, str]], index) -> None:
    """Whether the embedder tells an absent thing from a paraphrase by the word alone."""
    import numpy as np

    from ragqa.app import open_for_query, settings_for
    from ragqa.index import lexical
    from ragqa.retrieval.decide import _term_groups
    from ragqa.retrieval.question import understand

    stores = {}
    for name, kind, question in rows:
        idx = index(name)
        absent = {g[0] for sub in understand(question).subqueries
                  for g in _term_groups(idx, sub)
                  if all(idx.document_frequency(t) == 0 for t in g)}
        words = [w for w in question.replace("?", " ").replace(",", " ").split()
                 if lexical.terms(w) and lexical.terms(w)[0] in absent]
        if not words:
            continue
        if name not in stores:
            settings, collection = settings_for(name)
            stores[name] = open_for_query(settings, collection, quiet=True).store
        vectors = stores[name].encoder.embed(words)
        nearest = [max(s for _, _, s in stores[name].query(v / np.linalg.norm(v), 5))
                   for v in vectors]
        print(json.dumps({"kind": kind, "words": words,
                          "nearest": [round(x, 3) for x in nearest], "question": question}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--sets", nargs="*", default=[str(HERE / f) for f in ROUNDS])
    parser.add_argument("--sizes", default="3,4,5,6,7,8")
    parser.add_argument("--word-similarity", action="store_true",
                        help="for each question with a topic word no paper holds: that word "
                        "embedded alone, and the cosine of its nearest paper")
    args = parser.parse_args()
    os.environ["RAGQA_HOME"] = args.home
    from ragqa.app import open_for_query, settings_for
    from ragqa.retrieval.decide import names_absent_name, names_unknown_subject

    indexes = {}

    def index(name: str):
        if name not in indexes:
            settings, collection = settings_for(name)
            indexes[name] = open_for_query(settings, collection, quiet=True).lexical
        return indexes[name]

    rows = [(r["slice"], r["kind"], r["question"]) for f in args.sets
            for r in map(json.loads, Path(f).read_text().splitlines()) if r]
    for name in ("nips2018", "acl2022"):
        rows += [(name, f"lists-{r['kind']}", r["question"])
                 for r in map(json.loads, (HERE.parent / "lists" / f"{name}.questions.jsonl")
                              .read_text().splitlines())]
    if args.word_similarity:
        word_similarity(rows, index)
        return
    for size in (int(x) for x in args.sizes.split(",")):
        fired: dict[str, list[int]] = {}
        for name, kind, question in rows:
            idx = index(name)
            hit = names_unknown_subject(idx, question, size) or names_absent_name(idx, question)
            count = fired.setdefault(kind, [0, 0])
            count[0] += hit
            count[1] += 1
        print(size, json.dumps({k: f"{a}/{b} fire" for k, (a, b) in sorted(fired.items())}),
              flush=True)


if __name__ == "__main__":
    main()
