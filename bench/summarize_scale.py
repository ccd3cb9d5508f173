"""`ragqa summarize --all` over the 32,749 mlconf abstracts, offline: wall time, themes, peak RSS.

    python bench/summarize_scale.py --home DIR [--data ../shared/data/mlconf] [--repeats 3]

DIR is a RAGQA_HOME; its `mlconf` collection is ingested first if needed (incremental: a second
run embeds nothing; the first takes about half an hour on 2 cores). Each measured run is a fresh
`ragqa summarize --all --json` process that reports its own peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from measured import run_ragqa

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mlconf"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--collection", default="mlconf",
                        help="e.g. 'scale', filled by bench/scale_ingest.py (with --skip-ingest)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true",
                        help="summarize what the collection holds now (e.g. a partial ingest)")
    args = parser.parse_args()
    corpus = args.data / "corpus.jsonl.gz"
    if not corpus.is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return 0
    env = {**os.environ, "RAGQA_HOME": str(args.home), "RAGQA_LLM": "none"}
    ingest = {"added": 0, "papers_total": None}
    ingest_wall, ingest_rss = 0.0, 0
    if not args.skip_ingest:
        ingest_wall, ingest_rss, out = run_ragqa(
            ["ingest", str(corpus), "--collection", args.collection, "--quiet", "--json"], env)
        ingest = json.loads(out)
    runs = []
    for _ in range(args.repeats):
        wall, rss, out = run_ragqa(
            ["summarize", "--all", "--collection", args.collection, "--json"], env)
        summary = json.loads(out)
        runs.append({"wall_s": round(wall, 2), "peak_rss_mb": rss,
                     "themes": len(summary["themes"]),
                     "references": len(summary["references"]),
                     "papers_considered": summary["papers_considered"]})
    report = {
        "ingest": {"wall_s": round(ingest_wall, 1), "peak_rss_mb": ingest_rss,
                   "added": ingest["added"], "papers_total": ingest["papers_total"]},
        "summarize_all": runs,
        "summarize_all_median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "theme_sizes_last_run": [t["size"] for t in summary["themes"]],
        "theme_names_last_run": [t["name"] for t in summary["themes"]],
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(f"ingest: {report['ingest']}")
        for run in runs:
            print(f"summarize --all: {run}")
        print(f"median wall: {report['summarize_all_median_wall_s']} s")
        print("themes:", "; ".join(f"{n} ({s})" for n, s in zip(
            report["theme_names_last_run"], report["theme_sizes_last_run"], strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
