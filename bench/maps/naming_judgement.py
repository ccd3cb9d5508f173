"""Do a map's theme names name their papers? A blind judgement, before and after issue 48.

    python bench/maps/naming_judgement.py items --map acml=/work/s25/maphome:acml \\
        --map nips2018=/work/benchhome:nips2018 --out DIR
    (a judge who never sees ragqa's output fills DIR/verdicts.jsonl from DIR/items.jsonl)
    python bench/maps/naming_judgement.py score --out DIR [--json]

`items` makes, for each map (`LABEL=HOME:NAME[+HOME:NAME...]`, several collections laid out
together), the themes two ways on the same vectors:
- before: the themes as shipped before issue 48 (the summaries' k-means on the vectors, named
  by the summaries' namer as it was at 6a7a4d9: `--before-namer` points at that file);
- after: the map's regions (ragqa.maps.collection_map, as `ragqa map` makes them), and, on maps
  of 2,000 papers or more, their sub-themes.
Each theme becomes one item: its name and 10 of its papers' titles drawn at random. The items
of all maps and both ways are shuffled into DIR/items.jsonl with no word of which way made
them; which way made each item is in DIR/key.jsonl, which the judge is not given.

`score` reads DIR/verdicts.jsonl (`{"id", "accept": true|false, "score": 1-5}` a line) and
reports, per way, the share of names accepted and the mean score, over all maps and per map.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ragqa  # noqa: E402
from ragqa.answering.summarize import choose_themes  # noqa: E402
from ragqa.maps import collection_map as maps  # noqa: E402

TITLES = 10  # per item
NAMING_PAPERS = maps.NAMING_PAPERS


def papers_and_vectors(spec: str) -> tuple[list, np.ndarray]:
    papers, vectors = [], []
    for part in spec.split("+"):
        home, _, name = part.rpartition(":")
        retriever = ragqa.open(name, home=home)._app.retriever()
        found = retriever.lexical.all_papers()
        papers += found
        vectors.append(retriever.store.paper_vectors([p.paper_id for p in found]))
    stacked = np.vstack(vectors)
    return papers, stacked / np.linalg.norm(stacked, axis=1, keepdims=True)


def old_namer(path: Path):
    spec = importlib.util.spec_from_file_location("summarize_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.theme_names


def central(papers: list, vectors: np.ndarray, members: np.ndarray) -> list:
    centre = vectors[members].mean(axis=0)
    return [papers[i] for i in members[np.argsort(-(vectors[members] @ centre))][:NAMING_PAPERS]]


def items_for(label: str, papers: list, vectors: np.ndarray, namer, rng: random.Random
              ) -> list[dict]:
    out = []
    before = choose_themes(vectors)
    groups = [np.flatnonzero(before == t) for t in range(int(before.max()) + 1)]
    names = namer([central(papers, vectors, g) for g in groups])
    out += [{"way": "before", "map": label, "name": n, "members": g}
            for n, g in zip(names, groups, strict=True)]
    data = maps._computed(papers, vectors, lambda text: None)
    labels, sub = data["labels"], data["sublabels"]
    out += [{"way": "after", "map": label, "name": n, "members": np.flatnonzero(labels == t)}
            for t, n in enumerate(data["names"])]
    out += [{"way": "after, sub-theme", "map": label, "name": n,
             "members": np.flatnonzero(sub == j)} for j, n in enumerate(data["subnames"])]
    for item in out:
        rows = [int(i) for i in item.pop("members")]
        picked = rng.sample(rows, min(TITLES, len(rows)))
        item["papers"] = len(rows)
        item["titles"] = [papers[i].title for i in picked]
    return out


def make_items(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(48)
    namer = old_namer(Path(args.before_namer))
    every = []
    for spec in args.map:
        label, _, source = spec.partition("=")
        papers, vectors = papers_and_vectors(source)
        print(f"{label}: {len(papers):,} papers", file=sys.stderr)
        every += items_for(label, papers, vectors, namer, rng)
    return write_items(out, every, rng, "t")


def write_items(out: Path, every: list[dict], rng: random.Random, prefix: str) -> int:
    """The items shuffled into out/items.jsonl (id, name, titles: what the judge sees) and
    out/key.jsonl (which way made each: what the judge is not given)."""
    rng.shuffle(every)
    with open(out / "items.jsonl", "w", encoding="utf-8") as items, \
            open(out / "key.jsonl", "w", encoding="utf-8") as key:
        for n, item in enumerate(every):
            ident = f"{prefix}{n:03d}"
            items.write(json.dumps({"id": ident, "name": item["name"],
                                    "titles": item["titles"]}, ensure_ascii=False) + "\n")
            key.write(json.dumps({"id": ident, "way": item["way"], "map": item["map"],
                                  "name": item["name"], "papers": item["papers"]},
                                 ensure_ascii=False) + "\n")
    print(f"{len(every)} items in {out / 'items.jsonl'}", file=sys.stderr)
    return 0


def score(args: argparse.Namespace) -> int:
    out = Path(args.out)
    with open(out / "key.jsonl", encoding="utf-8") as lines:
        key = {row["id"]: row for row in (json.loads(line) for line in lines)}
    with open(out / "verdicts.jsonl", encoding="utf-8") as lines:
        verdicts = [json.loads(line) for line in lines if line.strip()]
    tally: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for verdict in verdicts:
        row = key[verdict["id"]]
        tally[(row["way"], "all maps")].append(verdict)
        tally[(row["way"], row["map"])].append(verdict)
    result = {f"{way} | {where}": {
        "themes": len(rows),
        "accepted": round(sum(r["accept"] for r in rows) / len(rows), 3),
        "mean_score": round(sum(r["score"] for r in rows) / len(rows), 2)}
        for (way, where), rows in sorted(tally.items())}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for what, row in result.items():
        print(f"{what:45s} {row['themes']:3d} themes  accepted {row['accepted']:.2f}  "
              f"mean score {row['mean_score']:.2f}")
    return 0


def run(doc: str, make, map_help: str, *more: tuple[str, str]) -> int:  # noqa: ANN001
    """The `items` and `score` commands of a naming judgement (`more`: required options of
    `items`, as (flag, help))."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    items = commands.add_parser("items")
    items.add_argument("--map", action="append", required=True, help=map_help)
    items.add_argument("--out", required=True)
    for flag, text in more:
        items.add_argument(flag, required=True, help=text)
    scored = commands.add_parser("score")
    scored.add_argument("--out", required=True)
    scored.add_argument("--json", action="store_true")
    args = parser.parse_args()
    return make(args) if args.command == "items" else score(args)


def main() -> int:
    return run(__doc__, make_items, "LABEL=HOME:NAME[+...]", (
        "--before-namer", "ragqa/answering/summarize.py as it was before (git show)"))


if __name__ == "__main__":
    sys.exit(main())
