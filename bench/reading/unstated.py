"""What the abstract does not say (issue 46, item 4): questions about one paper whose abstract
states the answer, or does not ("Does X release code?" of an abstract that never mentions
code). A fact answer quotes the sentence that reads best as the answer; when the abstract
cannot hold what is asked (facts.not_stated: a figure of an abstract with no number, code of
one that never mentions code, a link or a release), it says the abstract does not say.

The set (`unstated_blind.jsonl`, UNSTATED_BLIND.md): 100 questions on NAACL 2021 and IJCAI 2021
papers, 50 stated (with the answer sentences and phrase) and 50 not, over code, data,
benchmarks, figures and other properties, written by a helper that never saw ragqa. Split by
eval.blind_half of the id before any answer was looked at: rules were set on "calibrate" (38),
figures are reported on "report" (62).

    python bench/reading/unstated.py --home DIR [--fit] [--cases] [--json]

Without `--fit`: the product's answers (`ragqa ask`), per half:
- paper: the first citation is the question's paper;
- stated answered: of stated questions, the share answered with a quote of the right paper
  (not "does not say"); sentence: ... whose quote is an answer sentence;
- unstated said: of unstated questions, the share answered "does not say" of the right paper.
`--fit`: whether how well the best sentence reads as the answer (answer.read_fact_sentences'
score) could tell them apart instead: the best floor on the calibrate half and its balanced
accuracy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from facts import DEFAULT_DATA, lists_eval, quotes_answer, slice_path  # noqa: E402, I001  (before eval)
from eval import cli  # noqa: E402  (bench/reading/eval.py)

SET = HERE / "unstated_blind.jsonl"


def blind_half(qid: str) -> str:
    return lists_eval().blind_half(qid)  # bench/lists/eval.py's split, a hash of the id


def questions() -> list[dict]:
    return [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines()]


def said_unstated(answer: dict) -> bool:
    """The answer is "the abstract does not say": a citation without a quote."""
    return bool(answer["citations"]) and not any(c.get("quote") for c in answer["citations"])


def measure(run, rows: list[dict], cases: bool) -> dict:  # noqa: ANN001
    paper, answered, sentence, unstated = [], [], [], []
    for q in rows:
        slice_name = q["paper_id"].split("-", 1)[0]
        answer = run("ask", q["question"], collection=slice_name)[0]
        first = answer["citations"][0] if answer["citations"] else {}
        right = first.get("paper_id") == q["paper_id"]
        said = said_unstated(answer)
        paper.append(right)
        if q["kind"] == "stated":
            answered.append(right and not said)
            sentence.append(right and not said and quotes_answer(first.get("quote", ""),
                                                                q["answer_sentences"]))
        else:
            unstated.append(right and said)
        if cases:
            print(json.dumps({"id": q["id"], "kind": q["kind"], "asks": q["asks"],
                              "paper": right, "said_unstated": said, "question": q["question"],
                              "quote": first.get("quote", "")}, ensure_ascii=False),
                  file=sys.stderr)
    share = lambda v: round(sum(v) / len(v), 3) if v else float("nan")  # noqa: E731
    return {"questions": len(rows), "paper": share(paper), "stated_answered": share(answered),
            "stated_sentence": share(sentence), "unstated_said": share(unstated),
            "balanced": round((share(answered) + share(unstated)) / 2, 3)}


def fit(home: Path, rows: list[dict]) -> dict:
    """Each question's best reading score as the product computes it, and the floor that best
    tells the stated from the unstated (balanced accuracy, midpoints between scores)."""
    import numpy as np

    from ragqa.answering import answer
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    encoder = make_encoder(settings)
    retrievers: dict[str, Retriever] = {}
    scored = []
    for q in rows:
        name = q["paper_id"].split("-", 1)[0]
        retriever = retrievers.get(name) or retrievers.setdefault(
            name, Retriever(Store(settings, name, encoder)))
        hits, _ = answer.split_tiers(retriever.search(q["question"]).hits)
        read = answer.read_fact_sentences(q["question"], hits)
        scored.append((max((r for r, _, _ in read), default=float("-inf")),
                       q["kind"] == "stated"))
    scores = np.array(sorted(s for s, _ in scored))
    best = (0.0, float("-inf"))
    for floor in (scores[:-1] + scores[1:]) / 2:
        stated = np.mean([s >= floor for s, ok in scored if ok])
        unstated = np.mean([s < floor for s, ok in scored if not ok])
        best = max(best, ((stated + unstated) / 2, float(floor)))
    return {"floor": round(best[1], 3), "balanced_accuracy": round(best[0], 3),
            "scores": [(round(s, 3), ok) for s, ok in scored]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--cases", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = questions()
    run = cli(args.home)
    for name in sorted({q["paper_id"].split("-", 1)[0] for q in rows}):
        run("ingest", str(slice_path(args.home, args.data, name)), "--quiet", collection=name)
    if args.fit:
        found = fit(args.home, [q for q in rows if blind_half(q["id"]) == "calibrate"])
        print(json.dumps(found if args.json else {k: v for k, v in found.items()
                                                  if k != "scores"}))
        return 0
    report = {half: measure(run, [q for q in rows if blind_half(q["id"]) == half], args.cases)
              for half in ("calibrate", "report")}
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
