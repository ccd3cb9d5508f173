"""Offline reading over the seeds (issue 13): phrasings, facts, near misses, chats, summaries.

Runs the real CLI in-process (`ragqa ask/chat/summarize --json`) on a fresh data folder holding
the bundled seeds, against the hand-labelled set `bench/reading/seeds.json`, and reports:
- phrasing recall: over 15 request forms x 3 topics, the share of the topic's papers cited;
- fact accuracy: the first citation is the expected paper and its quote holds the expected
  phrase (a figure as written in plain text: "2.13×", not "$2.13\\times$");
- near-miss abstention: the share of near-miss questions answered with no citation;
- chat turn accuracy: a turn cites one of the expected papers (and, where given, a quote holds
  the expected phrase);
- summary recall: the share of each summary's gold papers among its references.

    python bench/reading/eval.py [--json] [--code CHECKOUT]

`--code` measures another checkout's ragqa (e.g. a `git worktree` of the version before), as
bench/lists/eval.py does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if os.environ.get("RAGQA_CODE"):  # --code: import the other checkout's ragqa (see lists/eval)
    sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, os.environ["RAGQA_CODE"])

HERE = Path(__file__).resolve().parent


def cli(home: Path):
    from typer.testing import CliRunner

    from ragqa.cli import app

    runner = CliRunner()
    env = {"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"}

    def run(*args: str, input: str | None = None) -> list[dict]:  # noqa: A002
        result = runner.invoke(app, [*args, "--json"], env=env, input=input)
        if result.exit_code != 0:
            raise RuntimeError(f"ragqa {' '.join(args)}: {result.output}")
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()] \
            if input is not None else [json.loads(result.stdout)]
    return run


def measure(run, data: dict) -> dict:
    scores: dict[str, list[float]] = {k: [] for k in
                                      ("phrasing", "facts", "near_misses", "chats", "summaries")}
    for topic, papers in data["phrasings"]["topics"].items():
        for form in data["phrasings"]["forms"]:
            cited = {c["title"] for c in run("ask", form.format(t=topic))[0]["citations"]}
            scores["phrasing"].append(len(cited & set(papers)) / len(papers))
    for fact in data["facts"]:
        citations = run("ask", fact["question"])[0]["citations"]
        scores["facts"].append(float(bool(citations) and citations[0]["title"] == fact["title"]
                                     and fact["phrase"] in citations[0].get("quote", "")))
    for question in data["near_misses"]:
        scores["near_misses"].append(float(not run("ask", question)[0]["citations"]))
    for chat in data["chats"]:
        turns = run("chat", input="\n".join(t["say"] for t in chat) + "\n")
        for expected, turn in zip(chat, turns, strict=False):
            titles = {c["title"] for c in turn["citations"]}
            quoted = " ".join(c.get("quote", "") for c in turn["citations"]).lower()
            scores["chats"].append(float(bool(titles & set(expected["cites_any"])) and (
                expected.get("quote", "").lower() in quoted)))
    for topic, gold in data["summaries"].items():
        references = {r["title"] for r in run("summarize", topic)[0]["references"]}
        scores["summaries"].append(len(references & set(gold)) / len(gold))
    return {k: round(sum(v) / len(v), 3) for k, v in scores.items()} | {
        f"{k}_n": len(v) for k, v in scores.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--code", type=Path, metavar="CHECKOUT")
    args = parser.parse_args()
    if args.code and not os.environ.get("RAGQA_CODE"):
        env = {**os.environ, "RAGQA_CODE": str(args.code.resolve())}
        return subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    data = json.loads((HERE / "seeds.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as home:
        figures = measure(cli(Path(home)), data)
    if args.json:
        print(json.dumps(figures))
        return 0
    for name in ("phrasing", "facts", "near_misses", "chats", "summaries"):
        print(f"{name:12} {figures[name]:.3f}  ({figures[name + '_n']} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
