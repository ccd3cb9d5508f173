"""Follow-ups and near misses in other people's phrasing (issue 31): conversations and near-miss
questions over NeurIPS 2018 and ACL 2022 written by helpers who never saw ragqa's output
(CHATS_BLIND.md, NEAR_MISSES_BLIND.md beside this file), each case's `split` fixed as it was
written. Develop on `dev`; measure `heldout` only to report.

    python bench/reading/blind.py --home DIR [--round 1..18] [--split dev|heldout|all]
        [--only chats|near_misses] [--cases]

Round 1 (chats_blind.jsonl, near_misses_blind.jsonl) was developed on (`dev`) and measured
(`heldout`) for the first change; round 2 (chats_blind2.jsonl, near_misses_blind2.jsonl, all
`heldout`), written later by other helpers on other papers and terms, measures the next;
round 3 (near_misses_blind3.jsonl, all `heldout`, two thirds of its near misses and
controls hinging on ordinary words: NEAR_MISSES_BLIND3.md; chats_blind3.jsonl, 48
conversations by another helper: CHATS_BLIND3.md) the one after; rounds 4-6 the changes of
session 15; rounds 7 (NeurIPS 2017 and NAACL 2024), 8 (ICML 2018 and NAACL 2022) and 9
(NeurIPS 2016 and ACL 2021), chats and near misses on slices no earlier helper had read, those
of session 16; round 10 (IJCAI 2024 and COLING 2022) those of session 17 (and, once, the
floor of session 19); round 11 (IJCAI 2022 and COLING 2025), written in session 19, the
changes after it; round 12 (IJCAI 2023 and COLING 2020), written at the start of session 20,
that session's; round 13 (ICML 2017 and IJCAI 2020), written at the start of session 24 and
split by eval.blind_half before anything was run: its `dev` half may be read, its `heldout`
half is only reported; so are rounds 14 (COLM 2024 and AISTATS 2025, session 30), 15
(NAACL 2021 and IJCAI 2021, session 32: CHATS_BLIND15_*.md, NEAR_MISSES_BLIND15.md) and 16
(NeurIPS 2013 and AISTATS 2021, session 34: CHATS_BLIND16_*.md, NEAR_MISSES_BLIND16.md) and
17 (ICLR 2018 and WWW 2025, session 35: CHATS_BLIND17_*.md, NEAR_MISSES_BLIND17.md) and 18
(NeurIPS 2014 and AISTATS 2020, session 37: CHATS_BLIND18_*.md, NEAR_MISSES_BLIND18.md).
Rounds 1-12 are development data now.

DIR is a RAGQA_HOME (the slices are ingested into collections named after them once; a home
bench/lists/eval.py or facts.py built serves too). A chat is run as one `ragqa chat` session;
a turn is right when:
- list: it cites a paper of the topic;
- select ("which one evaluates on audio?"): it cites a paper of the selection, only papers of
  the last list shown (the answer to the last list, switch or select turn: after "the second
  one", "which of those two …" picks among the list again; a selection of one paper is no
  list to select among, so after it the list before counts: since session 16) or of the
  papers that list folded below it (counted in the answer, listed by /more: since session 35;
  `--shown-only` for the rule before), or beyond them a paper of the writer's selection (since
  session 37: a selection none of the list holds looks among the other papers on its topic;
  `--listed-only` for the rule before),
  and none of the topic's papers the selection leaves out;
- position ("the second one"): its first citation is that paper of the previous answer (of the
  last list shown when the previous answer has no such place: since session 20);
- about ("what is its accuracy?"): its first citation is a paper referred to (`phrase`: also
  reported, as the share whose quotes hold it);
- switch (a new topic, however it is worded): it cites a paper of the new topic and none of the
  previous topic's.
A near miss is right when the answer cites nothing; a control when it cites one of its papers
(recall: the share of its papers cited).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from facts import DEFAULT_DATA, folded, slice_path  # noqa: E402, I001  (before eval: RAGQA_CODE)
from eval import cited_ids, cli, quotes  # noqa: E402  (bench/reading/eval.py)


def placed(index: int, before: list[str], shown: list[str]) -> str | None:
    """The paper at place `index` (1-based, -1 the last) of the last answer; when the last
    answer has no such place (one paper), of the last list shown (since session 20: as the chat
    reads "the second one" after a selection of one paper, and as select turns are judged)."""
    for papers in (before, shown):
        if 0 < index <= len(papers):
            return papers[index - 1]
        if index < 0 and -index <= len(papers):
            return papers[index]
    return None


def turn_right(kind: str, expected: dict, cited: list[str], before: list[str],
               topic: set[str], shown: list[str] = (), listed_only: bool = False) -> bool:
    papers = set(expected["papers"])
    if kind == "list":
        return bool(papers & set(cited))
    if kind == "select":
        # Among the last answer's papers (a conference list holds papers beyond the writer's
        # topic, whose property nobody judged): one with the property, none of the topic's
        # papers without it, nothing from outside the last answer (the papers it showed, and
        # since session 35 those it folded below them: the answer counts them, /more lists
        # them, and a selection that picks one says it comes from them) but the writer's own
        # (since session 37, a selection none of the list holds looks among the other papers
        # on its topic, and says so: only a paper the writer chose counts there).
        beyond = set(cited) - set(before)
        return bool(papers & set(cited)) and (not beyond if listed_only else beyond <= papers) \
            and not set(cited) & (topic - papers)
    if kind == "position":
        return bool(cited) and cited[0] == placed(expected["index"], before, shown)
    if kind == "about":
        return bool(cited) and cited[0] in papers
    if kind == "switch":
        return bool(papers & set(cited)) and not set(cited) & topic
    raise ValueError(kind)


def folded_ids(answer: dict) -> list[str]:
    """The papers a list folded below its answer (its tail): part of the answer, selectable."""
    return [p["paper_id"] for p in answer.get("papers", []) if p.get("tier") == "tail"]


def shows_a_list(kind: str, papers: list[str]) -> bool:
    """Whether a turn's papers are the list a later "which of them …" selects among: a list's,
    a switch's, a selection's of two or more. A selection of one is none: after it, "which of
    them" is among the list before (as the chat reads it, and as the writers of rounds 5-6
    meant)."""
    return kind in ("list", "switch") or (kind == "select" and len(papers) >= 2)


def measure_chats(run, chats: list[dict], show: bool, shown_only: bool = False,
                  listed_only: bool = False) -> dict:
    right: dict[str, list[float]] = {}
    phrases = []
    for chat in chats:
        turns = run("chat", input="\n".join(t["say"] for t in chat["turns"]) + "\n",
                    collection=chat["slice"])
        turns += [{"citations": []}] * (len(chat["turns"]) - len(turns))
        before: list[str] = []
        shown: list[str] = []  # the last list shown: of a list, switch or selection
        tail: list[str] = []  # what that list folded below it (since session 35)
        topic: set[str] = set()
        for expected, answer in zip(chat["turns"], turns, strict=False):
            kind, cited = expected["kind"], cited_ids(answer)
            selectable = shown + ([] if shown_only else tail)
            ok = turn_right(kind, expected, cited, selectable if kind == "select" else before,
                            topic, shown, listed_only)
            right.setdefault(kind, []).append(float(ok))
            if kind == "about" and expected.get("phrase"):
                phrases.append(float(folded(expected["phrase"]) in folded(quotes(answer))))
            if kind in ("list", "switch"):
                topic = set(expected["papers"])
            if show:
                print(json.dumps({"chat": chat["id"], "kind": kind, "ok": ok,
                                  "say": expected["say"], "expected": expected["papers"],
                                  "cited": cited,
                                  "before": selectable if kind == "select" else before}),
                      file=sys.stderr)
            before = cited
            if shows_a_list(kind, cited):
                shown, tail = cited, folded_ids(answer)
    followed = [x for kind, xs in right.items() if kind != "list" for x in xs]
    return {"turns_after_the_first": round(sum(followed) / len(followed), 3),
            "turns": len(followed),
            "by_kind": {k: round(sum(v) / len(v), 3) for k, v in right.items()},
            "about_phrase_quoted": round(sum(phrases) / max(len(phrases), 1), 3)}


def measure_near_misses(run, cases: list[dict], show: bool) -> dict:
    abstained, found, recall = [], [], []
    for case in cases:
        cited = set(cited_ids(run("ask", case["question"], collection=case["slice"])[0]))
        if case["kind"] == "miss":
            abstained.append(float(not cited))
            ok = not cited
        else:
            ok = bool(cited & set(case["papers"]))
            found.append(float(ok))
            recall.append(len(cited & set(case["papers"])) / len(case["papers"]))
        if show:
            print(json.dumps({"id": case["id"], "kind": case["kind"], "ok": ok,
                              "question": case["question"], "cited": sorted(cited)}),
                  file=sys.stderr)
    return {"miss_abstention": round(sum(abstained) / max(len(abstained), 1), 3),
            "misses": len(abstained),
            "control_answered": round(sum(found) / max(len(found), 1), 3),
            "control_recall": round(sum(recall) / max(len(recall), 1), 3),
            "controls": len(found)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="dev")
    parser.add_argument("--only", choices=["chats", "near_misses"])
    parser.add_argument("--round", type=int, default=1, choices=range(1, 19),
                        help="1: chats_blind.jsonl, near_misses_blind.jsonl (split dev/heldout); "
                             "2: chats_blind2.jsonl, near_misses_blind2.jsonl (all heldout); "
                             "3: chats_blind3.jsonl, near_misses_blind3.jsonl (all heldout); "
                             "4: chats_blind4.jsonl, near_misses_blind4.jsonl (all heldout); "
                             "5: chats_blind5.jsonl, 6: chats_blind6.jsonl (all heldout); "
                             "7: chats_blind7.jsonl, near_misses_blind7.jsonl (NeurIPS 2017 "
                             "and NAACL 2024), 8: …8.jsonl (ICML 2018 and NAACL 2022), 9: "
                             "…9.jsonl (NeurIPS 2016 and ACL 2021), 10: …10.jsonl (IJCAI 2024 "
                             "and COLING 2022), 11: …11.jsonl (IJCAI 2022 and COLING 2025), "
                             "12: …12.jsonl (IJCAI 2023 and COLING 2020), all heldout; "
                             "13: …13.jsonl (ICML 2017 and IJCAI 2020), 14: …14.jsonl (COLM "
                             "2024 and AISTATS 2025), 15: …15.jsonl (NAACL 2021 and IJCAI "
                             "2021), 16: …16.jsonl (NeurIPS 2013 and AISTATS 2021), 17: …17.jsonl "
                             "(ICLR 2018 and WWW 2025), 18: …18.jsonl (NeurIPS 2014 and AISTATS "
                             "2020), split by "
                             "eval.blind_half")
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--shown-only", action="store_true",
                        help="a selection picks among the papers a list showed only, not among "
                             "those it folded too (the rule before session 35)")
    parser.add_argument("--listed-only", action="store_true",
                        help="a selection counts only papers of the last answer (the rule "
                             "before session 37: not the writer's own papers beyond it)")
    args = parser.parse_args()
    run = cli(args.home)

    def chosen(file: str) -> list[dict]:
        rows = [json.loads(line) for line in (HERE / file).open() if line.strip()]
        rows = [r for r in rows if args.split == "all" or r["split"] == args.split]
        for name in sorted({r["slice"] for r in rows}):  # ingested once; later runs skip
            run("ingest", str(slice_path(args.home, args.data, name)), "--quiet",
                collection=name)
        return rows

    suffix = "" if args.round == 1 else str(args.round)
    report: dict = {"split": args.split, "round": args.round}
    if args.only in (None, "chats"):
        report["chats"] = measure_chats(run, chosen(f"chats_blind{suffix}.jsonl"), args.cases,
                                        args.shown_only, args.listed_only)
    # Rounds 5 and 6 wrote chats only.
    if args.only in (None, "near_misses") and (HERE / f"near_misses_blind{suffix}.jsonl").is_file():
        report["near_misses"] = measure_near_misses(
            run, chosen(f"near_misses_blind{suffix}.jsonl"), args.cases)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
