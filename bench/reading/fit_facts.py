"""Fit the fact answer's sentence model (ragqa/answering/facts.py: its named SIGNALS and the
cross-encoder's logit, weighed by ragqa/data/fact_sentence_model.json) on the independent fact
sets used for development, and compare sentence choices within the right paper: which sentence
of the paper's abstract comes first?

    python bench/reading/fit_facts.py --home DIR [--sets facts_nips2018,...] [--split all]
        [--write]

A conditional logit over each question's sentences (the paper's whole abstract; positives: the
sentences the writer marked), L2-penalised, by gradient ascent. Reports the share of questions
whose first sentence is an answer sentence for the cross-encoder alone, the word overlap alone,
the mix shipped before facts.py, facts.py's weights, and the fitted weights (in-sample, and
5-fold cross-validated). `--sets NAME --split heldout` measures the ceiling of these signals
on a held-out half or round (fitted on it: in-sample, a ceiling, never a result); quote
bench/reading/facts.py's figures for results. `--write` writes the weights fitted on all the
questions to ragqa/data/fact_sentence_model.json with their provenance (the sets, the split,
the 5-fold figure): the shipped model is `python bench/reading/fit_facts.py --home DIR --write`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from facts import DEFAULT_DATA, folded, slice_path  # noqa: E402

# The mix the fact answer shipped before ragqa/answering/facts.py: the cross-encoder's logit
# plus this times the word overlap (chosen by bench/sentence_choice.py).
BEFORE_LEXICAL_WEIGHT = 2.0
# The sets fitted on: rounds 1-3 whole (each measured once as held out, then read) and the
# `dev` halves of rounds 4-6 (split by eval.blind_half before anything was read; their
# `heldout` halves are only reported: bench/reading/facts.py --sets facts6_naacl2021,
# facts6_ijcai2021 --split heldout). Round 3 was held out until session 24; rounds 5 and 6
# were added in session 32, rounds 7 and 8 (their `dev` halves) in session 35, round 9's
# in session 37.
DEVELOPMENT_SETS = ("facts_nips2018", "facts_acl2022", "facts2_nips2018", "facts2_acl2022",
                    "facts3_nips2018", "facts3_acl2022", "facts4_aistats2024", "facts4_icml2017",
                    "facts5_colm2024", "facts5_aistats2025", "facts6_naacl2021",
                    "facts6_ijcai2021", "facts7_aistats2021", "facts7_nips2013",
                    "facts8_iclr2018", "facts8_www2025", "facts9_nips2014",
                    "facts9_aistats2020")
FIRST_SPLIT_FACT_ROUND = 4


def cases(home: Path, data: Path, split: str, sets: list[str]):
    """(question, sentences, abstract, labels, title) of each fact of the split; with
    `--split all`, the `heldout` half of a round split before it was read is left out."""
    from ragqa.sources import read_sources
    from ragqa.text import split_sentences

    for name in sets:
        slice_name = name.rsplit("_", 1)[-1]
        papers = {p.paper_id: p for p in read_sources([slice_path(home, data,
                                                                  slice_name)]).papers}
        for line in (HERE / f"{name}.jsonl").open():
            fact = json.loads(line)
            if split != "all" and fact["split"] != split:
                continue
            if split == "all" and fact["split"] == "heldout" and _split_round(name):
                continue  # a report half: never fitted on
            text = papers[fact["paper_id"]].text
            sentences = split_sentences(text)
            answers = [folded(s) for s in fact["answer_sentences"]]
            labels = np.array([any(folded(s) in a or a in folded(s) for a in answers)
                               for s in sentences], dtype=float)
            if labels.any():
                yield fact["question"], sentences, text, labels, papers[fact["paper_id"]].title


def _split_round(name: str) -> bool:
    """Whether a set is of a round split into halves before it was read (round 4 on: its
    `heldout` half is only reported)."""
    head = name.split("_")[0].removeprefix("facts")
    return bool(head) and int(head) >= FIRST_SPLIT_FACT_ROUND


def fit(xs: list[np.ndarray], ys: list[np.ndarray], l2: float = 0.05, steps: int = 3000
        ) -> np.ndarray:
    w = np.zeros(xs[0].shape[1])
    for _ in range(steps):
        grad = -l2 * w
        for x, y in zip(xs, ys, strict=True):
            scores = x @ w
            p = np.exp(scores - scores.max())
            p /= p.sum()
            target = y / y.sum()
            grad += x.T @ (target - p)
        w += 0.05 * grad / len(xs)
    return w


def top1(xs: list[np.ndarray], ys: list[np.ndarray], w: np.ndarray) -> float:
    return float(np.mean([y[int(np.argmax(x @ w))] for x, y in zip(xs, ys, strict=True)]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="all", choices=["dev", "heldout", "all"])
    parser.add_argument("--sets", default=",".join(DEVELOPMENT_SETS),
                        help="files bench/reading/NAME.jsonl; the slice is the name's last part")
    parser.add_argument("--drop", default="",
                        help="signals left out of the fit, comma-separated (never with --write)")
    parser.add_argument("--write", action="store_true",
                        help="write the weights fitted on all the questions to "
                             "ragqa/data/fact_sentence_model.json")
    args = parser.parse_args()
    if args.drop and args.write:
        parser.error("--drop measures; the model written has every signal")
    from ragqa.answering.answer import lexical_sentence_scores
    from ragqa.answering.facts import FACT_SENTENCE_MODEL, SIGNALS, sentence_signals
    from ragqa.models.linear import NamedLinearModel, shipped_model, write_model
    from ragqa.models.rerank import cross_encoder
    from ragqa.resources import DATA_DIR
    from ragqa.sources.paper import strip_marks

    xs, ys, shipped = [], [], []
    for question, sentences, text, labels, title in cases(
            args.home, args.data, args.split, args.sets.split(",")):
        ce = cross_encoder().score(question, [strip_marks(s) for s in sentences])
        lexical = lexical_sentence_scores(question, sentences)
        xs.append(np.column_stack([sentence_signals(question, sentences, text, title), ce]))
        ys.append(labels)
        shipped.append(labels[int(np.argmax(ce + BEFORE_LEXICAL_WEIGHT * lexical))])
    names = [*SIGNALS, "cross_encoder"]
    try:  # the shipped model, if its features are still the code's
        shipped_figure = round(top1(xs, ys, shipped_model(FACT_SENTENCE_MODEL).vector(names)), 3)
    except ValueError:
        shipped_figure = None
    if args.drop:  # the same fit without some signals, to measure what they add
        kept = [i for i, name in enumerate(names) if name not in args.drop.split(",")]
        xs, names = [x[:, kept] for x in xs], [names[i] for i in kept]
    only = {name: top1(xs, ys, np.eye(len(names))[i]) for i, name in enumerate(names)
            if name in ("overlap", "cross_encoder")}
    w = fit(xs, ys)
    folds = 5  # the fitted weights' top-1 on questions they were not fitted on
    held = []
    for f in range(folds):
        w_f = fit([x for j, x in enumerate(xs) if j % folds != f],
                  [y for j, y in enumerate(ys) if j % folds != f])
        held += [ys[i][int(np.argmax(xs[i] @ w_f))] for i in range(f, len(xs), folds)]
    fitted_5fold = round(float(np.mean(held)), 3)
    print(json.dumps({"questions": len(xs), "split": args.split,
                      "fitted, 5-fold cross-validated": fitted_5fold,
                      "first_sentence_is_an_answer": {
                          **{f"{k} alone": round(v, 3) for k, v in only.items()},
                          "shipped (cross-encoder + 2 x overlap)": round(float(np.mean(shipped)),
                                                                         3),
                          "the shipped model": shipped_figure,
                          "fitted": round(top1(xs, ys, w), 3)},
                      "weights": dict(zip(names, np.round(w, 3).tolist(), strict=True))},
                     indent=1))
    if args.write:
        provenance = {"script": "bench/reading/fit_facts.py",
                      "command": f"--sets {args.sets} --split {args.split} --write",
                      "data": f"bench/reading/<set>.jsonl for the sets {args.sets}, split "
                              f"{args.split} (a report half of a split round is never fitted)",
                      "questions": len(xs), "first_sentence_an_answer_5fold": fitted_5fold}
        write_model(DATA_DIR / FACT_SENTENCE_MODEL, NamedLinearModel(
            dict(zip(names, w.tolist(), strict=True)), 0.0, provenance))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
