"""What any cut could reach with ragqa's ranking: the ceiling of the list decision.

The list decision keeps a prefix of each question's ranked candidates. However well it is
calibrated, it cannot do better than the best prefix of each question, chosen knowing the
judgements (an oracle). This script computes that ceiling on the dev sets of eval.py:

- `best F1 per question`: each question's own best prefix, averaged;
- `best precision at recall >= R`: prefixes chosen per question, with the judgements, so that
  the mean recall over the list questions is at least R (issue 12 asks R = 0.8) and the mean
  precision is as high as it can be (the upper hull: a Lagrangian sweep, prec + lam * recall
  per question, over lam);
- the same with the candidates ranked by each single signal, to see which carries the order.

`--rules` also measures, held out the same way, three cuts a product could make without the
judgements, all behind the calibrated topic gate: `global threshold` (one probability for every
question, as RelevanceModel.threshold; eval.py's `held_out` adds its near-miss rules), `expected
F-beta` (the prefix with the best expected F-beta under probabilities recalibrated on the
training folds, beta chosen there), and `learned threshold` (each question's threshold predicted
by a ridge regression from its own score profile: the scores at ranks 1, 3, 5, 10, 20, 40 and
the means of the top 10 and 50, fitted to the training questions' best thresholds).

Rankings: `model` orders the candidates by the RelevanceModel's probability, fitted the way
eval.py fits it, on the other folds (folds by question, both slices pooled); `z`, `bm25_share`,
... by one signal of RelevanceModel.FEATURES each.

    python bench/lists/ceiling.py --home DIR [--data ../shared/data/mlconf] [--recall 0.8]
    python bench/lists/ceiling.py --home DIR --rules

DIR as for eval.py (the slices' collections, ingested once). The figures say whether the target
(recall >= 0.8 at precision >= 0.7) is within reach of the current ranking at all: if the
oracle's precision at recall 0.8 is below 0.7, no cut rule can meet it, and the work is in the
ranking (candidates' order), not in the decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval as lists_eval  # noqa: E402 - bench/lists/eval.py, beside this file

LAMBDAS = np.concatenate([np.linspace(0, 4, 161), np.linspace(4.1, 60, 120)])


def curves(q, ranked_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Recall and precision of every prefix (length 0 .. n) of a question's ranking."""
    relevant = np.array([pid in q.relevant for pid in ranked_ids], dtype=float)
    acceptable = np.array([pid in q.acceptable for pid in ranked_ids], dtype=float)
    k = np.arange(1, len(ranked_ids) + 1)
    recall = np.concatenate([[0.0], np.cumsum(relevant) / len(q.relevant)])
    precision = np.concatenate([[0.0], np.cumsum(acceptable) / k])
    return recall, precision


def best_f1(recall: np.ndarray, precision: np.ndarray) -> float:
    total = recall + precision
    f1 = np.divide(2 * recall * precision, total, out=np.zeros_like(total), where=total > 0)
    return float(f1.max())


def precision_at_recall(per_question: list[tuple[np.ndarray, np.ndarray]], target: float
                        ) -> tuple[float, float]:
    """(mean recall, mean precision) of the oracle's prefixes with the best mean precision whose
    mean recall reaches `target` (the hull point just past it)."""
    best = (0.0, 0.0)
    for lam in LAMBDAS:
        picks = [int(np.argmax(p + lam * r)) for r, p in per_question]
        mean_r = float(np.mean([r[i] for (r, _), i in zip(per_question, picks, strict=True)]))
        mean_p = float(np.mean([p[i] for (_, p), i in zip(per_question, picks, strict=True)]))
        if mean_r >= target and mean_p > best[1]:
            best = (mean_r, mean_p)
    return round(best[0], 3), round(best[1], 3)


def folds_of(runs_by_slice: dict, folds: int) -> list[tuple[list, list]]:
    """(training runs, held-out runs) per fold: eval.py's folds (by question, slices pooled)."""
    pooled = [run for name in lists_eval.SLICES for run in runs_by_slice.get(name, [])]
    rng = np.random.default_rng(0)
    fold_of = {run[0].qid: f for run, f in zip(
        pooled, rng.permutation(np.arange(len(pooled)) % folds), strict=True)}
    return [([r for r in pooled if fold_of[r[0].qid] != f],
             [r for r in pooled if fold_of[r[0].qid] == f]) for f in range(folds)]


def model_probabilities(runs_by_slice: dict, folds: int) -> dict[str, np.ndarray]:
    """Each question's candidates' score (log-odds) under the model fitted on the other folds."""
    out = {}
    for train, test in folds_of(runs_by_slice, folds):
        model = lists_eval.calibrate(train)
        for q, _, x in test:
            out[q.qid] = x @ np.array(model.weights) + model.bias
    return out


# ---------------------------------------------------------------- cuts without the judgements

PROFILE_RANKS = (0, 2, 4, 9, 19, 39)
BETAS_SQUARED = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
THRESHOLDS = np.arange(-6.0, 8.0, 0.1)


def _gate_open(model, hits) -> bool:
    from ragqa.retrieval.fitted import RelevanceModel, question_signals

    signals = np.array(question_signals(hits, RelevanceModel.GATE_FEATURES))
    topic = 1 / (1 + np.exp(-(signals @ np.array(model.gate_weights) + model.gate_bias)))
    return bool(topic >= model.gate)


def _recalibration(model, train) -> tuple[float, float]:
    """Platt scaling of the model's score on the training candidates, unweighted (the model is
    fitted with positives and negatives weighted alike, so its probabilities run high)."""
    scores, labels = [], []
    for q, hits, x in train:
        for hit, score in zip(hits, _scores(model, x), strict=True):
            grade = q.grades.get(hit.paper.paper_id, 0)
            if grade != 1:
                scores.append(score)
                labels.append(float(grade >= 2))
    xb = np.stack([np.array(scores), np.ones(len(scores))], 1)
    w = np.zeros(2)
    for _ in range(50):
        p = 1 / (1 + np.exp(-(xb @ w)))
        step = np.linalg.solve((xb * (p * (1 - p))[:, None]).T @ xb + 1e-9 * np.eye(2),
                               xb.T @ (p - np.array(labels)))
        w -= step
    return float(w[0]), float(w[1])


def _expected_f_prefix(p: np.ndarray, beta2: float) -> np.ndarray:
    order = np.argsort(-p)
    ranked = p[order]
    expected = (1 + beta2) * np.cumsum(ranked) / (beta2 * ranked.sum()
                                                   + np.arange(1, len(ranked) + 1))
    return order[: int(np.argmax(expected)) + 1]


def _profile(scores: np.ndarray) -> np.ndarray:
    ranked = np.sort(scores)[::-1]
    return np.array([ranked[min(r, len(ranked) - 1)] for r in PROFILE_RANKS]
                    + [ranked[:10].mean(), ranked[:50].mean()])


def _rows(cut, runs) -> list[dict]:
    """question_scores of the list `cut(q, hits, x)` keeps (indices into hits) per question."""
    return [lists_eval.question_scores([hits[i].paper.paper_id for i in cut(q, hits, x)], q)
            for q, hits, x in runs]


def _scores(model, x: np.ndarray) -> np.ndarray:
    return x @ np.array(model.weights) + model.bias


def _global_cut(model, gate: dict, q, hits, x) -> list[int]:
    if not gate[q.qid]:
        return []
    p = 1 / (1 + np.exp(-_scores(model, x)))
    return [int(i) for i in np.argsort(-p) if p[i] >= model.threshold]


def _expected_cut(model, gate: dict, platt: tuple[float, float], beta2: float, q, hits, x
                  ) -> list[int]:
    if not gate[q.qid]:
        return []
    a, b = platt
    return list(_expected_f_prefix(1 / (1 + np.exp(-(a * _scores(model, x) + b))), beta2))


def _learned_cut(model, gate: dict, regression: tuple, q, hits, x) -> list[int]:
    if not gate[q.qid]:
        return []
    coef, mean, scale = regression
    scores = _scores(model, x)
    threshold = np.hstack([(_profile(scores) - mean) / scale, 1.0]) @ coef
    return [int(i) for i in np.argsort(-scores) if scores[i] >= threshold]


def _calibration_key(rows: list[dict]) -> tuple:
    """eval.py's objective: the best recall at precision >= MIN_PRECISION, else the best F1."""
    s = lists_eval.summarise(rows)
    r, p = s.get("recall", 0.0), s.get("precision", 0.0)
    floor = lists_eval.MIN_PRECISION
    return (p >= floor, r if p >= floor else 2 * r * p / ((r + p) or 1))


def _threshold_regression(model, train) -> tuple:
    """Ridge regression of each training question's best threshold (on the model's score, by
    the question's F1) on its score profile: (coefficients, profile mean, profile scale)."""
    profiles, best = [], []
    for q, hits, x in train:
        if q.kind != "list" or not q.relevant or not hits:
            continue
        scores = _scores(model, x)
        f1 = [lists_eval.success([lists_eval.question_scores(
            [h.paper.paper_id for h, v in zip(hits, scores, strict=True) if v >= t], q)])
            for t in THRESHOLDS]
        top = max(f1)
        profiles.append(_profile(scores))
        best.append(float(np.median([t for t, v in zip(THRESHOLDS, f1, strict=True)
                                     if v >= top - 1e-9])))
    x = np.array(profiles)
    mean, scale = x.mean(0), x.std(0) + 1e-9
    design = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    ridge = np.diag([1.0] * x.shape[1] + [0.0])
    return np.linalg.solve(design.T @ design + ridge, design.T @ np.array(best)), mean, scale


def practical_rules(runs_by_slice: dict, folds: int) -> dict[str, dict[str, dict]]:
    """Held-out figures of the three cuts (module docstring), per slice."""
    held: dict[str, dict[str, list]] = {}
    for train, test in folds_of(runs_by_slice, folds):
        model = lists_eval.calibrate(train)
        gate = {q.qid: bool(hits) and _gate_open(model, hits) for q, hits, _ in train + test}
        platt = _recalibration(model, train)
        beta2 = max(BETAS_SQUARED, key=lambda v: _calibration_key(
            _rows(partial(_expected_cut, model, gate, platt, v), train)))
        cuts = {"global threshold": partial(_global_cut, model, gate),
                "expected F-beta": partial(_expected_cut, model, gate, platt, beta2),
                "learned threshold": partial(_learned_cut, model, gate,
                                             _threshold_regression(model, train))}
        for label, cut in cuts.items():
            for run, row in zip(test, _rows(cut, test), strict=True):
                held.setdefault(run[0].slice, {}).setdefault(label, []).append(row)
    return {name: {label: lists_eval.summarise(rows) for label, rows in rules.items()}
            for name, rules in held.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=lists_eval.DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--recall", type=float, default=0.8)
    parser.add_argument("--rules", action="store_true",
                        help="also the held-out figures of three cuts made without judgements")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return 0
    from ragqa.retrieval.fitted import RelevanceModel

    runs_by_slice = {}
    for name in lists_eval.SLICES:
        questions = [q for q in lists_eval.load_questions(name) if q.grades]
        retriever = lists_eval.retriever_for(args.home, name,
                                             lists_eval.sources_of(args.home, args.data, name))
        runs_by_slice[name] = lists_eval.candidate_runs(retriever, questions)
    scores = model_probabilities(runs_by_slice, args.folds)
    # A *_relative signal is another signal shifted per question: the same order, left out.
    rankings = {"model": None, **{f: i for i, f in enumerate(RelevanceModel.FEATURES)
                                  if not f.endswith("_relative")}}
    report: dict = {}
    for name, runs in runs_by_slice.items():
        lists = [(q, hits, x) for q, hits, x in runs if q.kind == "list" and q.relevant]
        report[name] = {}
        for label, column in rankings.items():
            per_question = []
            for q, hits, x in lists:
                key = scores[q.qid] if column is None else x[:, column]
                order = np.argsort(-key, kind="stable")
                per_question.append(curves(q, [hits[i].paper.paper_id for i in order]))
            report[name][label] = {
                "best_f1_per_question": round(float(np.mean(
                    [best_f1(r, p) for r, p in per_question])), 3),
                f"oracle_at_recall_{args.recall}": precision_at_recall(per_question,
                                                                        args.recall),
            }
    rules = practical_rules(runs_by_slice, args.folds) if args.rules else {}
    if args.json:
        print(json.dumps({"ceiling": report, "rules": rules}, indent=2))
        return 0
    for name, rows in report.items():
        print(f"\n{name}: the best any cut could do, ranking by ...")
        for label, figures in rows.items():
            r, p = figures[f"oracle_at_recall_{args.recall}"]
            print(f"  {label:14} best F1 per question {figures['best_f1_per_question']:.3f}   "
                  f"precision {p:.3f} at mean recall {r:.3f}")
        for label, s in rules.get(name, {}).items():
            print(f"  held out, {label:18} recall {s['recall']:.3f}  precision "
                  f"{s['precision']:.3f}  listed {s['mean_listed']:5.1f}  abstention "
                  f"{s.get('abstention', float('nan')):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
