"""Cold start of an English `ragqa search` before and after multilingual vectors (it must not
grow: the multilingual model loads only for a question in another language), and a Chinese
question's cold and warm time.

    git archive main | tar -x -C /tmp/ragqa-before     # the version before, as plain files
    python bench/multilingual/latency.py --before /tmp/ragqa-before [--runs 5] [--json]

A temp RAGQA_HOME gets the bundled seeds with multilingual vectors (`ragqa ingest --seeds`);
each cold run is a new process (`python -c` running ragqa's CLI), before and after alternating
so that the machine's load falls on both alike; the figures are medians. Warm: the same question
again in one process (the Retriever kept, as `ragqa serve` keeps it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGLISH = "Which papers do full-duplex speech?"
CHINESE = "哪些论文研究脉冲神经网络？"

# Runs ragqa's CLI from CODE (or the installed one); takes the editable install's import hook
# out first, so that CODE's package is the one imported.
_RUN = """
import sys
code = {code!r}
if code:
    sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, code)
from ragqa.faces.cli import main
sys.argv = ["ragqa", "search", {question!r}, "--json"]
try:
    main()
except SystemExit as exit:
    if exit.code:
        raise
"""


def cold(question: str, home: Path, code: str) -> float:
    env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", _RUN.format(code=code, question=question)], env=env,
                   check=True, capture_output=True)
    return time.perf_counter() - started


def warm(question: str, home: Path, runs: int) -> tuple[float, float]:
    """(first query in the process, median of the next ones), in seconds."""
    from ragqa.app import open_for_query, search
    from ragqa.config import load_settings
    from ragqa.requests import SearchRequest

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    retriever = open_for_query(settings, "default", quiet=True)
    times = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        search(retriever, SearchRequest(question))
        times.append(time.perf_counter() - started)
    return times[0], statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the version before")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ragqa", "ingest", "--seeds", "--quiet"],
                       env=env, check=True, capture_output=True)
        seeds_ingest = time.perf_counter() - started
        runs: dict[str, list[float]] = {"english_after": [], "english_before": [],
                                        "chinese_cold": []}
        for _ in range(args.runs):
            runs["english_after"].append(cold(ENGLISH, home, ""))
            if args.before:
                runs["english_before"].append(cold(ENGLISH, home, str(args.before.resolve())))
            runs["chinese_cold"].append(cold(CHINESE, home, ""))
        first, again = warm(CHINESE, home, args.runs)
    report = {name: round(statistics.median(t), 2) for name, t in runs.items() if t}
    report.update({"chinese_warm_first": round(first, 2), "chinese_warm": round(again, 3),
                   "seeds_ingest_with_multilingual": round(seeds_ingest, 1),
                   "runs": args.runs, "load_average": os.getloadavg()[0]})
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, value in report.items():
            print(f"{name:32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
