"""Fact questions nobody tuned on (issue 30): does the offline answer cite the right paper first
and quote the sentence that holds the answer?

Three rounds of sets, each written by helpers who read the abstracts and never saw ragqa's output
(FACTS_*.md, FACTS2_*.md, FACTS3_*.md beside this file), on NeurIPS 2018 and ACL 2022 papers no
earlier round used (bench/reading/check_facts.py checks it):
- facts_nips2018, facts_acl2022 (140): developed on; their `heldout` half was measured once, then
  read, and is development data since;
- facts2_nips2018, facts2_acl2022 (88): measured once as held out, then read: development data;
- facts3_nips2018, facts3_acl2022 (88): the held-out set, measured only to report.
Later rounds (FACTS4.md to FACTS9.md: facts4_* to facts9_*, round 7 on AISTATS 2021 and
NeurIPS 2013, session 34; round 8 on ICLR 2018 and WWW 2025, session 35; round 9 on NeurIPS
2014 and AISTATS 2020, session 37) are split in halves by eval.blind_half of each id on
import: `dev` may be read, `heldout` only reported.

    python bench/reading/facts.py --home DIR [--sets facts3_nips2018,facts3_acl2022]
        [--split all] [--cases]

DIR is a RAGQA_HOME; the slices are ingested into collections named after them once (a home
bench/lists/eval.py built serves too). Reports per set and overall:
- paper: the first citation is the question's paper;
- sentence: ... and its quote is one of the marked answer sentences (or holds one, or lies
  within one: ragqa's sentence splitter and the writer's may cut differently);
- phrase: ... and its quote holds the answer phrase (the figure, the dataset, the clause).
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from eval import DEFAULT_DATA, cli  # noqa: E402  (bench/reading/eval.py)


def folded(text: str) -> str:
    """Text as ragqa stores it (LaTeX and Markdown read: the writers copied the raw abstract,
    "$2.11\\%$"), folded."""
    from ragqa.sources.latex import to_text

    return " ".join(unicodedata.normalize("NFKC", to_text(text)).lower().split())


def quotes_answer(quote: str, sentences: list[str]) -> bool:
    quote = folded(quote)
    return bool(quote) and any(folded(s) in quote or quote in folded(s) for s in sentences)


def lists_eval():  # noqa: ANN201
    """bench/lists/eval.py (its name "eval" is this folder's eval.py here)."""
    import importlib.util

    if "lists_eval" in sys.modules:
        return sys.modules["lists_eval"]
    spec = importlib.util.spec_from_file_location("lists_eval", HERE.parent / "lists" / "eval.py")
    lists = importlib.util.module_from_spec(spec)
    sys.modules["lists_eval"] = lists  # its dataclasses look their module up
    spec.loader.exec_module(lists)
    return lists


def slice_path(home: Path, data: Path, name: str) -> Path:
    return lists_eval().slice_file(home, data, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    parser.add_argument("--sets", default="facts3_nips2018,facts3_acl2022",
                        help="files bench/reading/NAME.jsonl; the slice is the name's last part")
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    run = cli(args.home)
    report: dict = {"split": args.split, "sets": {}}
    totals = {"paper": [], "sentence": [], "phrase": []}
    for name in args.sets.split(","):
        facts = [json.loads(line) for line in (HERE / f"{name}.jsonl").open()]
        facts = [f for f in facts if args.split == "all" or f["split"] == args.split]
        slice_name = name.rsplit("_", 1)[-1]
        run("ingest", str(slice_path(args.home, args.data, slice_name)), "--quiet",
            collection=slice_name)
        scores = {"paper": [], "sentence": [], "phrase": []}
        for fact in facts:
            answer = run("ask", fact["question"], collection=slice_name)[0]
            first = answer["citations"][0] if answer["citations"] else {}
            paper = first.get("paper_id") == fact["paper_id"]
            quote = first.get("quote", "")
            sentence = paper and quotes_answer(quote, fact["answer_sentences"])
            phrase = paper and folded(fact["phrase"]) in folded(quote)
            for key, ok in (("paper", paper), ("sentence", sentence), ("phrase", phrase)):
                scores[key].append(float(ok))
                totals[key].append(float(ok))
            if args.cases:
                print(json.dumps({"id": fact["id"], "kind": fact["kind"], "paper": paper,
                                  "sentence": sentence, "question": fact["question"],
                                  "quote": quote, "answer": fact["answer_sentences"][0]},
                                 ensure_ascii=False), file=sys.stderr)
        report["sets"][name] = {k: round(sum(v) / len(v), 3) for k, v in scores.items()} | {
            "questions": len(facts)}
    report["all"] = {k: round(sum(v) / len(v), 3) for k, v in totals.items() if v} | {
        "questions": len(totals["paper"])}
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
