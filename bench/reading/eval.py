"""Offline reading (issue 13): phrasings, facts, near misses, chats, summaries.

Runs the real CLI in-process (`ragqa ask/chat/summarize --json`) against a hand-labelled set.

`--set seeds` (default): a fresh data folder holding the bundled seeds, `bench/reading/seeds.json`
(papers named by ragqa's derived titles); reports:
- phrasing recall: over 15 request forms x 3 topics, the share of the topic's papers cited;
- fact accuracy: the first citation is the expected paper and its quote holds the expected
  phrase (a figure as written in plain text: "2.13×", not "$2.13\\times$");
- near-miss abstention: the share of near-miss questions answered with no citation;
- chat turn accuracy: a turn cites one of the expected papers (and, where given, a quote holds
  the expected phrase);
- summary recall: the share of each summary's gold papers among its references.

`--set nips2018`: the NeurIPS 2018 slice of ../shared/data/mlconf (1,001 papers, selected as
bench/lists/eval.py does; ICML 2019 is never read) ingested into the collection `nips2018` of
`--home DIR` (kept and reused: a home bench/lists/eval.py built serves too) or of a temp folder,
against `bench/reading/nips2018.json` (papers named by their mlconf `_id`); reports fact accuracy
(overall and per kind; `facts_paper`: the first citation is the right paper, whatever its quote),
near-miss abstention, near-hit kept (a control question cites one of its papers) and recall (the
share of its papers cited), chat turn accuracy and summary recall. README.md says how the set was
built.

    python bench/reading/eval.py [--set seeds|nips2018] [--home DIR] [--data DIR] [--json]
                                 [--cases] [--code CHECKOUT]

`--cases` prints every case with its outcome (what was cited, what was quoted). `--code`
measures another checkout's ragqa (e.g. a `git worktree` of the version before), as
bench/lists/eval.py does.
"""

from __future__ import annotations

import argparse
import importlib.util
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
# ../shared/data/mlconf of the checkout, or of a folder above it (a git worktree under /work/wt/).
DEFAULT_DATA = next((p / "shared" / "data" / "mlconf" for p in HERE.parents
                     if (p / "shared" / "data" / "mlconf").is_dir()),
                    HERE.parents[2] / "shared" / "data" / "mlconf")
SLICE = "nips2018"


def cli(home: Path):
    from typer.testing import CliRunner

    from ragqa.faces.cli import app

    runner = CliRunner()
    env = {"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"}

    def run(*args: str, input: str | None = None, collection: str | None = None  # noqa: A002
            ) -> list[dict]:
        where = ["--collection", collection] if collection else []
        result = runner.invoke(app, [*args, *where, "--json"], env=env, input=input)
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


# ---------------------------------------------------------------- the NeurIPS 2018 slice

def slice_file(home: Path, data: Path) -> Path:
    """HOME/slices/nips2018.jsonl, written by bench/lists/eval.py's own selection (once)."""
    spec = importlib.util.spec_from_file_location("lists_eval", HERE.parent / "lists" / "eval.py")
    lists_eval = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = lists_eval  # its dataclasses look their module up
    spec.loader.exec_module(lists_eval)
    return lists_eval.slice_file(home, data, SLICE)


def ingest_slice(run, home: Path, data: Path) -> None:
    """Ingest the slice into the collection `nips2018` (idempotent: a home that holds it
    already embeds nothing again)."""
    sys.stderr.write(f"ingesting the NeurIPS 2018 slice into {home} (collection {SLICE}; "
                     "1-2 minutes the first time)\n")
    report = run("ingest", str(slice_file(home, data)), collection=SLICE)[0]
    sys.stderr.write(f"  {json.dumps(report)[:200]}\n")


def folded(text: str) -> str:
    return " ".join(text.split())


def cited_ids(answer: dict) -> list[str]:
    return [c["paper_id"] for c in answer["citations"]]


def quotes(answer: dict) -> str:
    return folded(" ".join(c.get("quote", "") for c in answer["citations"]))


def measure_slice(run, data: dict, cases: list[dict] | None = None) -> dict:
    """The nips2018 set's figures; `cases` (when given) collects every case's outcome."""
    ask = (lambda q: run("ask", q, collection=SLICE)[0])  # noqa: E731
    scores: dict[str, list[float]] = {k: [] for k in (
        "facts", "facts_paper", "near_misses", "near_hits", "near_hits_recall", "chats",
        "summaries")}
    by_kind: dict[str, list[float]] = {}
    log = cases.append if cases is not None else (lambda case: None)
    total = len(data["facts"]) + len(data["near_misses"]) + len(data["near_hits"]) + \
        len(data["chats"]) + len(data["summaries"])
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        sys.stderr.write(f"\r  {done}/{total} cases")
        sys.stderr.flush()

    for fact in data["facts"]:
        answer = ask(fact["question"])
        first = answer["citations"][0] if answer["citations"] else {}
        right_paper = first.get("paper_id") == fact["paper_id"]
        ok = right_paper and folded(fact["phrase"]) in folded(first.get("quote", ""))
        scores["facts"].append(float(ok))
        scores["facts_paper"].append(float(right_paper))
        by_kind.setdefault(fact["kind"], []).append(float(ok))
        log({"case": "fact", "question": fact["question"], "ok": ok, "expected": fact["paper_id"],
             "phrase": fact["phrase"], "cited": cited_ids(answer), "quote": first.get("quote", "")})
        tick()
    for miss in data["near_misses"]:
        answer = ask(miss["question"])
        scores["near_misses"].append(float(not answer["citations"]))
        log({"case": "near_miss", "question": miss["question"], "ok": not answer["citations"],
             "cited": cited_ids(answer)})
        tick()
    for hit in data["near_hits"]:
        found = set(cited_ids(ask(hit["question"]))) & set(hit["paper_ids"])
        scores["near_hits"].append(float(bool(found)))
        scores["near_hits_recall"].append(len(found) / len(hit["paper_ids"]))
        log({"case": "near_hit", "question": hit["question"], "ok": bool(found),
             "expected": hit["paper_ids"], "found": sorted(found)})
        tick()
    for chat in data["chats"]:
        turns = run("chat", input="\n".join(t["say"] for t in chat) + "\n", collection=SLICE)
        for expected, turn in zip(chat, turns + [{"citations": []}] * len(chat), strict=False):
            ok = bool(set(cited_ids(turn)) & set(expected["cites_any"])) and (
                expected.get("quote", "").lower() in quotes(turn).lower())
            scores["chats"].append(float(ok))
            log({"case": "chat_turn", "question": expected["say"], "ok": ok,
                 "expected": expected["cites_any"], "cited": cited_ids(turn),
                 "quote_word": expected.get("quote", ""), "standalone":
                 turn.get("standalone_question", "")})
        tick()
    for summary in data["summaries"]:
        result = run("summarize", summary["topic"], collection=SLICE)[0]
        found = {r["paper_id"] for r in result["references"]} & set(summary["paper_ids"])
        scores["summaries"].append(len(found) / len(summary["paper_ids"]))
        log({"case": "summary", "question": summary["topic"], "ok": len(found) == len(
            summary["paper_ids"]), "found": sorted(found), "missing": sorted(
            set(summary["paper_ids"]) - found), "references": len(result["references"])})
        tick()
    sys.stderr.write("\n")
    figures = {k: round(sum(v) / len(v), 3) for k, v in scores.items()}
    figures |= {f"{k}_n": len(v) for k, v in scores.items()}
    figures["facts_by_kind"] = {k: round(sum(v) / len(v), 3) for k, v in by_kind.items()}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("seeds", SLICE), default="seeds", dest="name")
    parser.add_argument("--home", type=Path, metavar="DIR",
                        help="the RAGQA_HOME to use (kept; nips2018: ingested once, reused)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="../shared/data/mlconf")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cases", action="store_true", help="print every case's outcome")
    parser.add_argument("--code", type=Path, metavar="CHECKOUT")
    args = parser.parse_args()
    if args.code and not os.environ.get("RAGQA_CODE"):
        env = {**os.environ, "RAGQA_CODE": str(args.code.resolve())}
        return subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    if args.name == SLICE and not (args.data / "corpus.jsonl.gz").is_file():
        print(f"error: no mlconf corpus at {args.data} (--data DIR)", file=sys.stderr)
        return 2
    data = json.loads((HERE / f"{args.name}.json").read_text(encoding="utf-8"))
    cases: list[dict] | None = [] if args.cases else None
    with tempfile.TemporaryDirectory() as temp:
        home = args.home.resolve() if args.home else Path(temp)
        home.mkdir(parents=True, exist_ok=True)
        run = cli(home)
        if args.name == SLICE:
            ingest_slice(run, home, args.data)
            figures = measure_slice(run, data, cases)
        else:
            figures = measure(run, data)
    if args.json:
        print(json.dumps(figures | ({"cases": cases} if cases is not None else {})))
        return 0
    for case in cases or []:
        print(("ok  " if case["ok"] else "MISS") + f" {case['case']:10} {case['question']}")
        print("       " + json.dumps({k: v for k, v in case.items()
                                      if k not in ("case", "question", "ok")},
                                     ensure_ascii=False)[:400])
    names = ("phrasing", "facts", "near_misses", "chats", "summaries") if args.name == "seeds" \
        else ("facts", "facts_paper", "near_misses", "near_hits", "near_hits_recall", "chats",
              "summaries")
    for name in names:
        print(f"{name:16} {figures[name]:.3f}  ({figures[name + '_n']} cases)")
    if "facts_by_kind" in figures:
        print("facts by kind    " + ", ".join(f"{k} {v:.3f}"
                                              for k, v in figures["facts_by_kind"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
