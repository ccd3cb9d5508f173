"""Would the cross-encoder tell near misses from controls? (issue 46, session 35: tried, not
shipped; docs/benchmarks.md, "Round 17").

For each near miss and control of the chosen rounds (the `dev` halves of rounds split on import,
13 on; every item of earlier rounds), `ragqa ask` as the user would, then the highest
cross-encoder logit of the question against the title and sentences of each paper it cites.
Prints, per floor, how many near misses that cite papers it would silence and how many
controls it would lose.

    python bench/reading/near_miss_reader.py --home DIR --rounds 13,14,15,16 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from eval import cli  # noqa: E402
from facts import DEFAULT_DATA, slice_path  # noqa: E402

FLOORS = (-8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0)
FIRST_SPLIT_ROUND = 13


def items(rounds: list[int]) -> list[dict]:
    out = []
    for r in rounds:
        path = HERE / f"near_misses_blind{'' if r == 1 else r}.jsonl"
        rows = [json.loads(line) for line in path.open() if line.strip()]
        out += [row for row in rows if r < FIRST_SPLIT_ROUND or row["split"] == "dev"]
    return out


def best_logits(run, home: Path, data: Path, cases: list[dict]) -> list[dict]:
    from ragqa.models.rerank import cross_encoder
    from ragqa.sources import read_sources
    from ragqa.sources.paper import strip_marks
    from ragqa.text import split_sentences

    papers: dict[str, dict] = {}
    reader = cross_encoder()
    out = []
    for case in cases:
        name = case["slice"]
        if name not in papers:
            papers[name] = {p.paper_id: p for p in
                            read_sources([slice_path(home, data, name)]).papers}
        answer = run("ask", case["question"], collection=name)[0]
        cited = [c["paper_id"] for c in answer["citations"]]
        logits = []
        for paper_id in cited:
            paper = papers[name][paper_id]
            texts = [paper.title, *(strip_marks(s) for s in split_sentences(paper.text))]
            logits.append(float(max(reader.score(case["question"], texts))))
        out.append({"id": case["id"], "kind": case["kind"], "best": max(logits, default=None)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", default="13,14,15,16")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    run = cli(args.home)
    cases = items([int(r) for r in args.rounds.split(",")])
    for name in sorted({case["slice"] for case in cases}):  # ingested once; later runs skip
        run("ingest", str(slice_path(args.home, args.data, name)), "--quiet", collection=name)
    scored = best_logits(run, args.home, args.data, cases)
    cited = [s for s in scored if s["best"] is not None]
    report = {"misses": sum(s["kind"] == "miss" for s in scored),
              "controls": sum(s["kind"] == "control" for s in scored),
              "misses_citing": sum(s["kind"] == "miss" for s in cited),
              "floors": {str(f): {"misses_silenced": sum(s["kind"] == "miss" and s["best"] < f
                                                         for s in cited),
                                  "controls_lost": sum(s["kind"] == "control" and s["best"] < f
                                                       for s in cited)}
                         for f in FLOORS}}
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
