"""Theme names by an LLM against ragqa's own (issue 48): a blind judgement on the same regions.

    OPENAI_BASE_URL=http://127.0.0.1:8088/v1 OPENAI_API_KEY=none RAGQA_LLM_MODEL=MODEL \\
        python bench/maps/llm_naming.py items --map naacl2021=/work/benchhome:naacl2021 --out DIR
    (a judge who never sees ragqa's output fills DIR/verdicts.jsonl from DIR/items.jsonl, as
    naming_judgement.py's judges did)
    python bench/maps/llm_naming.py score --out DIR [--json]

`items` asks each map (`LABEL=HOME:NAME`) through the Python API twice: `map(llm="none")`
(ragqa's own names) and `map(llm="auto")` (the configured LLM's, maps.naming), so both ways
name the same regions. Each theme and sub-theme of each way becomes one item: its name and 10 of
its papers' titles drawn at random (the same draw for both ways of a theme, so that only the
name differs). The items are shuffled with no word of which way made them; the way is in
DIR/key.jsonl, which the judge is not given. A theme the LLM gave no usable name (it keeps
ragqa's) is still an item of the "llm" way: the way is judged as the product shows it.
`score` is naming_judgement.py's.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import naming_judgement  # noqa: E402

import ragqa  # noqa: E402

TITLES = naming_judgement.TITLES


def items_for(label: str, home: str, name: str, rng: random.Random) -> list[dict]:
    library = ragqa.open(name, home=home)
    offline, named = library.map(llm="none"), library.map(llm="auto")
    if named["naming"]["mode"] != "llm":
        raise SystemExit(f"{label}: no LLM named the themes ({named['naming']}): configure one")
    points = named["points"]
    out = []
    for field, groups in (("theme", "themes"), ("subtheme", "subthemes")):
        for mine, theirs in zip(offline[groups], named[groups], strict=True):
            rows = [i for i, t in enumerate(points[field]) if t == mine[field]]
            picked = rng.sample(rows, min(TITLES, len(rows)))
            titles = [points["title"][i] for i in picked]
            kind = "" if field == "theme" else ", sub-theme"
            for way, group in (("ragqa" + kind, mine), ("llm" + kind, theirs)):
                out.append({"way": way, "map": label, "name": group["name"],
                            "papers": len(rows), "titles": titles})
    return out


def make_items(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(48)
    every = []
    for spec in args.map:
        label, _, source = spec.partition("=")
        home, _, name = source.rpartition(":")
        every += items_for(label, home, name, rng)
        print(f"{label}: {len(every)} items so far", file=sys.stderr)
    return naming_judgement.write_items(out, every, rng, "n")


def main() -> int:
    return naming_judgement.run(__doc__, make_items, "LABEL=HOME:NAME")


if __name__ == "__main__":
    sys.exit(main())
