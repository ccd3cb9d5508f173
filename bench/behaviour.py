"""Record what ragqa answers over the bundled seeds, through the CLI, so that a refactoring can be
shown to change nothing: run it before and after, then compare the two folders.

    python bench/behaviour.py --out /tmp/before            # on the old code
    python bench/behaviour.py --out /tmp/after             # on the new code
    diff -r /tmp/before /tmp/after && echo identical
    python bench/behaviour.py --compare /tmp/before /tmp/after   # blanks what varies, then diffs

`PYTHONPATH=CHECKOUT` records another checkout's code (e.g. a `git worktree` of the old commit).

Each file is the `--json` output of one command (`search`, `search --no-cut`, `ask --llm none`,
`summarize`, `chat` with the seeds' reading-set conversations piped in), with the fields that
differ from run to run by design (a chat's session id, timings in milliseconds) blanked. The
questions are the seeds' list questions, fact questions, near misses and two Chinese questions
(bench/lists, bench/reading). Each run gets a fresh RAGQA_HOME (the seeds fill it on the first
question) and no `.env`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARYING = {"session_id"}  # differs between runs by design, as timings ("*_ms") do


def blank_varying(value):
    if isinstance(value, dict):
        return {k: ("*" if k in VARYING or k.endswith("_ms") else blank_varying(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [blank_varying(v) for v in value]
    return value


def questions() -> dict[str, list[str]]:
    lists = [json.loads(line)["question"]
             for line in (HERE / "lists" / "seeds.questions.jsonl").read_text().splitlines()
             if line.strip()]
    reading = json.loads((HERE / "reading" / "seeds.json").read_text(encoding="utf-8"))
    return {"list": lists, "fact": [f["question"] for f in reading["facts"]],
            "near_miss": list(reading["near_misses"]),
            "chat": [[t["say"] for t in chat] for chat in reading["chats"]],
            "foreign": ["哪些论文研究全双工语音？", "关于脉冲神经网络的论文有哪些？"]}


def ragqa(env: dict, *args: str, stdin: str | None = None) -> str:
    run = subprocess.run([sys.executable, "-m", "ragqa", *args], env=env, input=stdin,
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"ragqa {' '.join(args)}: exit {run.returncode}: {run.stderr[-500:]}")
    return run.stdout


def record(out: Path, env: dict, name: str, *args: str, stdin: str | None = None) -> None:
    text = ragqa(env, *args, stdin=stdin)
    objects = [blank_varying(json.loads(line)) for line in text.splitlines() if line.strip()] \
        if stdin is not None else blank_varying(json.loads(text))
    (out / f"{name}.json").write_text(json.dumps(objects, indent=1, ensure_ascii=False) + "\n",
                                      encoding="utf-8")


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    differ = []
    for name in names:
        old, new = (folder / name for folder in (before, after))
        if not (old.is_file() and new.is_file()) or blank_varying(json.loads(old.read_text(
                encoding="utf-8"))) != blank_varying(json.loads(new.read_text(encoding="utf-8"))):
            differ.append(name)
    print(f"{len(names) - len(differ)} of {len(names)} outputs identical"
          + (f"; different: {', '.join(differ)}" if differ else ""))
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two recordings (made by any version of this script)")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give --out DIR or --compare BEFORE AFTER")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragqa-behaviour-") as home:
        env = {**os.environ, "RAGQA_HOME": home, "RAGQA_ENV_FILE": "/nonexistent",
               "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
        env.pop("OPENAI_API_KEY")
        env.pop("OPENAI_BASE_URL")
        sets = questions()
        for kind in ("list", "fact", "near_miss", "foreign"):
            for i, question in enumerate(sets[kind], start=1):
                stem = f"{kind}-{i:02d}"
                record(args.out, env, f"{stem}-search", "search", question, "--json")
                record(args.out, env, f"{stem}-ask", "ask", question, "--llm", "none", "--json")
        for i, question in enumerate(sets["list"][:4], start=1):
            record(args.out, env, f"list-{i:02d}-search-nocut", "search", question, "--no-cut",
                   "--json")
            record(args.out, env, f"list-{i:02d}-summarize", "summarize", question,
                   "--llm", "none", "--json")
        record(args.out, env, "summarize-all", "summarize", "--all", "--llm", "none", "--json")
        for i, turns in enumerate(sets["chat"], start=1):
            record(args.out, env, f"chat-{i:02d}", "chat", "--llm", "none", "--json",
                   stdin="\n".join(turns) + "\n")
        record(args.out, env, "papers", "papers", "--json")
    print(f"recorded {len(list(args.out.glob('*.json')))} outputs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
