"""LaTeX left in stored text: the share of papers whose stored title or abstract still holds a
`$` or a backslash macro after ragqa read them, on real files.

    python bench/latex_leftovers.py tests/fixtures/sources/real/arxiv/sample.jsonl.gz
    python bench/latex_leftovers.py tests/fixtures/sources/real/bib/ --show 20

A file or folder of any format ragqa reads; `--show N` prints N leftovers with the text around
them. Every `$` counts, prices too ("$16.9B"): the figure is an upper bound. `--after N` also
reports the papers after the first N alone: the converter's table of authors' macros was made
looking at leftovers among the first 310 lines of the arXiv sample, so the figure to quote is
`--after 310` (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragqa.sources import read_sources  # noqa: E402

MACRO = re.compile(r"\\[A-Za-z]+|\$")


def leftovers(text: str) -> list[str]:
    return MACRO.findall(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=0)
    parser.add_argument("--after", type=int, default=0)
    args = parser.parse_args()
    report = read_sources(args.paths, skip_bad=True)
    bad = [(p, leftovers(p.title + " " + p.text)) for p in report.papers]
    bad = [(p, found) for p, found in bad if found]
    total = len(report.papers)
    print(json.dumps({"papers": total, "with_leftovers": len(bad),
                      "share": round(len(bad) / total, 4) if total else None}))
    if args.after:
        later = [p for p in report.papers if p.line > args.after]
        flagged = sum(1 for p, _ in bad if p.line > args.after)
        print(json.dumps({"after_line": args.after, "papers": len(later),
                          "with_leftovers": flagged,
                          "share": round(flagged / len(later), 4) if later else None}))
    for paper, found in bad[:args.show]:
        print(f"--- {paper.paper_id} {sorted(set(found))}")
        for text in (paper.title, paper.text):
            for match in MACRO.finditer(text):
                print("   ", text[max(0, match.start() - 60):match.end() + 60])


if __name__ == "__main__":
    main()
