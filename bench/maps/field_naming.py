"""Theme names from research fields against names from the papers' own phrases (issue 48): a
blind judgement of both on the same themes, side by side.

    python bench/maps/field_naming.py items --map icml2015=HOME:icml2015 [--map ...] --out DIR
    (a judge who never sees ragqa's output reads DIR/brief.txt and fills DIR/verdicts.jsonl
    from DIR/items.jsonl)
    python bench/maps/field_naming.py score --out DIR [--json]

`items` lays out each map (`LABEL=HOME:NAME[+HOME:NAME...]`, several collections together) as
`ragqa map` does (collection_map._computed) and names each theme two ways:
- phrases: the papers' own key phrases (summarize.theme_names, as shipped before session 31);
- fields: the research field nearest the theme's papers (ragqa.maps.fields, shipped).
Each theme is one item: 10 of its papers' titles drawn at random and its distinct names under
letters in random order (a name both ways give is shown once). Items of all maps are shuffled;
which way gave which letter is in DIR/key.jsonl, which the judge is not given. With
`--subthemes`, the sub-themes of maps of 2,000 papers or more are items as well, named both ways
among their siblings.

`score` reports, per way, the share of names accepted and the mean score (1-5), over all maps
and per map, and how often each way alone was accepted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from naming_judgement import papers_and_vectors  # noqa: E402

import ragqa  # noqa: E402
from ragqa.maps import collection_map as maps  # noqa: E402
from ragqa.maps.fields import field_names, field_vectors  # noqa: E402

TITLES = 10
WAYS = ("phrases", "fields")
BRIEF = """You are judging names for groups of research papers, as a reader of machine learning /
NLP / AI research would. Work only in this folder; do not read any other file of this machine,
do not run any program other than to read the items and write your verdicts, and do not use git.

items.jsonl has one JSON object a line:
  {"id": "...", "titles": [10 paper titles drawn at random from one group],
   "names": {"A": "...", ...}}
Each group is one region of a "map" of a conference's accepted papers, as it would be labelled
in a report or talk. The names are candidate labels for that group, from different namers, in
random order (the letters mean nothing).

For EVERY item and EVERY name letter, decide:
- "accept": true if you, as a researcher in the field, would accept this name as the label of
  this group on a map in a report: it says what most of these papers are about, in words the
  field uses, without being wrong, empty ("Neural networks", "State-of-the-art methods") or
  about only a small minority of the titles. Otherwise false.
- "score": 1 to 5. 5 = names what most of the papers are about, precisely and naturally;
  4 = good, a little broad or a little partial; 3 = acceptable-ish but vague or half right;
  2 = mostly misleading, generic or about few of them; 1 = wrong or meaningless.
Judge each name on its own merits against the titles (two names may both be accepted, or
neither). Read the titles carefully; ten titles are a sample of a larger group.

Write verdicts.jsonl, one line per item and name letter:
  {"id": "...", "name": "A", "accept": true, "score": 4}
Every (id, letter) pair in items.jsonl must have exactly one line. Check the count of lines
equals the total number of names. Do not try to guess which namer made which name.
"""


def themes_both_ways(label: str, spec: str, subthemes: bool) -> tuple[list, list[dict]]:
    papers, vectors = papers_and_vectors(spec)
    home, _, name = spec.split("+")[0].rpartition(":")
    fields = field_vectors(ragqa.open(name, home=home)._app.retriever().store.encoder)
    data = maps._computed(papers, vectors, lambda text: None)
    labels = data["labels"]
    groups = [np.flatnonzero(labels == t) for t in range(int(labels.max()) + 1)]
    rows = [{"map": label, "theme": str(t), "members": g, "phrases": phrase, "fields": field}
            for t, (g, phrase, field) in enumerate(zip(
                groups, maps._names(papers, vectors, groups),
                field_names(vectors, groups, fields), strict=True))]
    if subthemes:
        sub, parents = data["sublabels"], list(data["subparents"])
        for theme in sorted(set(parents)):
            siblings = [j for j, parent in enumerate(parents) if parent == theme]
            members = [np.flatnonzero(sub == j) for j in siblings]
            rows += [{"map": label, "theme": f"{theme}.{j}", "members": g, "phrases": phrase,
                      "fields": field}
                     for j, g, phrase, field in zip(
                         siblings, members, [data["subnames"][j] for j in siblings],
                         field_names(vectors, members, fields), strict=True)]
    return papers, rows


def make_items(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(48_31)
    items, keys = [], []
    for spec in args.map:
        label, _, source = spec.partition("=")
        papers, rows = themes_both_ways(label, source, args.subthemes)
        print(f"{label}: {len(papers):,} papers, {len(rows)} themes", file=sys.stderr)
        for row in rows:
            members = [int(i) for i in row["members"]]
            titles = [papers[i].title for i in rng.sample(members, min(TITLES, len(members)))]
            distinct = sorted({row[way] for way in WAYS})
            rng.shuffle(distinct)
            letters = {name: "AB"[k] for k, name in enumerate(distinct)}
            items.append({"titles": titles, "names": {letters[n]: n for n in distinct}})
            keys.append({"map": row["map"], "theme": row["theme"], "papers": len(members),
                         "ways": {way: letters[row[way]] for way in WAYS}})
    order = list(range(len(items)))
    rng.shuffle(order)
    with open(out / "items.jsonl", "w", encoding="utf-8") as item_file, \
            open(out / "key.jsonl", "w", encoding="utf-8") as key_file:
        for n, i in enumerate(order):
            ident = f"f{n:03d}"
            item_file.write(json.dumps({"id": ident, **items[i]}, ensure_ascii=False) + "\n")
            key_file.write(json.dumps({"id": ident, **keys[i]}, ensure_ascii=False) + "\n")
    (out / "brief.txt").write_text(BRIEF, encoding="utf-8")
    print(f"{len(items)} items in {out / 'items.jsonl'}; the judge's brief in "
          f"{out / 'brief.txt'}", file=sys.stderr)
    return 0


def score(args: argparse.Namespace) -> int:
    out = Path(args.out)
    with open(out / "key.jsonl", encoding="utf-8") as lines:
        keys = [json.loads(line) for line in lines]
    verdicts = {}
    with open(out / "verdicts.jsonl", encoding="utf-8") as lines:
        for row in (json.loads(line) for line in lines if line.strip()):
            verdicts[(row["id"], row["name"])] = row
    tally: dict[tuple[str, str], list[dict]] = defaultdict(list)
    alone = {way: 0 for way in WAYS}
    for key in keys:
        got = {way: verdicts[(key["id"], letter)] for way, letter in key["ways"].items()}
        kind = "sub-themes" if "." in key["theme"] else "themes"
        for way, verdict in got.items():
            tally[(way, kind, "all maps")].append(verdict)
            tally[(way, kind, key["map"])].append(verdict)
        for way in WAYS:
            if got[way]["accept"] and not any(got[w]["accept"] for w in WAYS if w != way):
                alone[way] += 1
    result = {"rows": {f"{way} | {kind} | {where}": {
        "names": len(rows), "accepted": round(sum(r["accept"] for r in rows) / len(rows), 3),
        "mean_score": round(sum(r["score"] for r in rows) / len(rows), 2)}
        for (way, kind, where), rows in sorted(tally.items())},
        "accepted_only_this_way": alone}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for what, row in result["rows"].items():
        print(f"{what:45s} {row['names']:3d} names  accepted {row['accepted']:.2f}  "
              f"mean score {row['mean_score']:.2f}")
    print("accepted one way only:", ", ".join(f"{w} {n}" for w, n in alone.items()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    items = commands.add_parser("items")
    items.add_argument("--map", action="append", required=True, help="LABEL=HOME:NAME[+...]")
    items.add_argument("--out", required=True)
    items.add_argument("--subthemes", action="store_true")
    scored = commands.add_parser("score")
    scored.add_argument("--out", required=True)
    scored.add_argument("--json", action="store_true")
    args = parser.parse_args()
    return make_items(args) if args.command == "items" else score(args)


if __name__ == "__main__":
    sys.exit(main())
