"""CPU time of one warm search, in process: what one `POST /api/search` costs `ragqa serve`
before HTTP.

    python bench/search_cpu.py --home DIR --collection NAME [--queries 100] [--repeats 5]
                               [--route search|ask] [--profile N] [--json]

It opens the collection as `ragqa serve` does (`ragqa.app.App`: the embedder, Chroma and the
BM25 snapshot loaded once), takes its queries from the collection itself (the titles of papers
spread evenly over it, asked as they are for search and as "Which papers study <title>?" for
ask), warms up on a few others, then runs `--repeats` rounds of `--queries` searches. Every
round asks queries of its own: no query is asked twice, so nothing keyed by the question can
help. It reports, per round, the process's CPU seconds (all threads: onnxruntime's, BLAS's,
Chroma's) per request and the wall time per request, and their medians. CPU per request is the
figure to compare: wall time depends on what else the machine runs, CPU time much less.

`--profile N` prints cProfile's N most expensive functions of one more round instead.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

from ragqa.requests import AskRequest, PapersRequest, SearchRequest


def spread_titles(app, n: int) -> list[str]:
    """The titles of n papers spread evenly over the collection (one conference's, then the
    next's: the whole range of topics, not the first file's)."""
    total = app.papers(PapersRequest(0, 1))["total"]
    step = max(1, total // max(n, 1))
    titles: list[str] = []
    for offset in range(0, total, 500):
        page = app.papers(PapersRequest(offset, 500))["papers"]
        titles += [p["title"] for i, p in enumerate(page, start=offset)
                   if i % step == 0 and p["title"]]
    return list(dict.fromkeys(titles))


def one_round(run, queries: list[str]) -> dict:
    cpu, wall = time.process_time(), time.perf_counter()
    for query in queries:
        run(query)
    return {"cpu_ms": round((time.process_time() - cpu) * 1000 / len(queries), 2),
            "wall_ms": round((time.perf_counter() - wall) * 1000 / len(queries), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="RAGQA_HOME with the collection")
    parser.add_argument("--collection", default="default")
    parser.add_argument("--queries", type=int, default=100, help="per round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds")
    parser.add_argument("--route", choices=("search", "ask"), default="search")
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (1 <= args.queries <= 5000 and 1 <= args.repeats <= 50):
        sys.exit("search_cpu: 1..5000 queries and 1..50 repeats, please")
    os.environ.update(RAGQA_HOME=str(args.home), RAGQA_LLM="none")
    from ragqa.app import App

    app = App.open(args.collection)
    rounds = args.repeats + (1 if args.profile else 0)
    titles = spread_titles(app, args.queries * rounds + 5)
    if len(titles) < args.queries * rounds + 5:
        sys.exit(f"search_cpu: the collection has {len(titles)} titles; ask for fewer queries")
    if args.route == "search":
        def run(title: str) -> dict:
            return app.search(SearchRequest(title))
    else:
        def run(title: str) -> dict:
            return app.ask(AskRequest(f"Which papers study {title}?", llm="none"))
    for title in titles[-5:]:  # warm-up: first-call costs are not a request's
        run(title)
    batches = [titles[i * args.queries:(i + 1) * args.queries] for i in range(rounds)]
    results = [one_round(run, batch) for batch in batches[:args.repeats]]
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(one_round, run, batches[-1])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    report = {"collection": args.collection, "papers": app.health()["papers"],
              "route": args.route, "queries_per_round": args.queries, "rounds": results,
              "median_cpu_ms": statistics.median(r["cpu_ms"] for r in results),
              "median_wall_ms": statistics.median(r["wall_ms"] for r in results),
              "load_average": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['collection']} ({report['papers']} papers), {args.route}, "
          f"{args.repeats} rounds of {args.queries} distinct queries: CPU per request "
          f"{report['median_cpu_ms']} ms (median; rounds "
          f"{', '.join(str(r['cpu_ms']) for r in results)}), wall {report['median_wall_ms']} ms; "
          f"load average {report['load_average']:.2f}")


if __name__ == "__main__":
    main()
