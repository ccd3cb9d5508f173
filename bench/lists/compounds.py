"""A hyphenated compound as one phrase term (issue 45, a word's sense from its compound): the
reading rounds' short list and switch turns that hold one ("code-switching / code-mixing
work?", "text-to-SQL?"), each searched with the compound's words apart and as one phrase
(lexical.LexicalIndex._with_phrases), side by side in one run. Scored against the papers the
turn's writer named (a subset of the relevant ones: precision is relative):

    python bench/lists/compounds.py --home DIR [--cases]

DIR is a RAGQA_HOME with the reading rounds' slices ingested under their names
(bench/reading/blind.py builds it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
COMPOUND = re.compile(r"\b\w+(?:-\w+)+\b")
SHORT = 8  # words: a turn that names its topic, not one that describes it


def turns() -> list[tuple[str, str, set[str]]]:
    """(slice, what was said, the writer's papers) of every short list or switch turn with a
    compound, in the chat rounds."""
    out = []
    for path in sorted((HERE.parent / "reading").glob("chats_blind*.jsonl")):
        for chat in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            for turn in chat["turns"]:
                said = turn["say"]
                if turn["kind"] in ("list", "switch") and COMPOUND.search(said) \
                        and len(said.split()) <= SHORT and turn.get("papers"):
                    out.append((chat["slice"], said, set(turn["papers"])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cases", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAGQA_ENV_FILE", "/nonexistent")
    from ragqa.config import load_settings
    from ragqa.index.lexical import LexicalIndex
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    encoder = make_encoder(settings)
    phrases = LexicalIndex._with_phrases
    retrievers: dict[str, Retriever] = {}
    scores: dict[str, list] = {"words apart": [], "a compound as one phrase": []}
    for name, said, papers in turns():
        retriever = retrievers.get(name) or retrievers.setdefault(
            name, Retriever(Store(settings, name, encoder)))
        shown = []
        for label in scores:
            LexicalIndex._with_phrases = phrases if "phrase" in label \
                else (lambda self, query, terms: terms)
            hits = retriever.search(said, sentences=False).hits
            core = {h.paper.paper_id for h in hits if h.tier != "tail"}
            every = {h.paper.paper_id for h in hits}
            row = (len(papers & core) / len(core) if core else 0.0,
                   len(papers & core) / len(papers), len(papers & every) / len(papers))
            scores[label].append(row)
            shown.append(f"P {row[0]:.2f} R {row[1]:.2f}")
        LexicalIndex._with_phrases = phrases
        if args.cases:
            print(f"{name:10} {said[:60]:60} {' -> '.join(shown)}")
    print(f"{len(next(iter(scores.values())))} turns")
    for label, rows in scores.items():
        mean = np.mean(rows, axis=0)
        print(f"  {label:26} core P {mean[0]:.3f}  core R {mean[1]:.3f}  core+tail R "
              f"{mean[2]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
