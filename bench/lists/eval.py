"""Complete "which papers" lists at conference scale: measure and calibrate the list decision.

The dev sets (bench/lists/README.md says how they were built and judged):
    SLICE.questions.jsonl  {"id", "question", "kind": "list"|"absent", ...}
    SLICE.qrels.tsv        query-id <TAB> corpus-id <TAB> grade (2 relevant, 1 partly, 0 not)
for SLICE in nips2018 (NeurIPS 2018, 1,001 papers) and acl2022 (ACL 2022, 1,031 papers) of
../shared/data/mlconf, plus `seeds` (the 29 bundled abstracts, hand-judged).

Metrics, per question, averaged over the questions of a slice (macro):
- recall: share of the papers graded 2 that the list holds;
- precision: share of the listed papers graded 1 or 2 (a "partly" paper listed is no error;
  one left out is no miss); an empty list on a question that has relevant papers counts 0;
- abstention: share of the absent-topic questions answered with an empty list.

What it reports:
- `before`: the lists of an earlier version, dumped with `--dump-lists FILE --code CHECKOUT`
  (a `git worktree` of that version) and read back with `--before FILE`;
- `held-out`: the RelevanceModel fitted by this script on k-1 folds of the questions (both slices
  pooled, folds by question) and applied to the held-out fold: the figures to quote;
- `shipped`: `ragqa search` as committed (LIST_MODEL fitted on all questions: in-sample);
- candidates' recall@100 and recall of the whole candidate stage.
`--fit` prints the LIST_MODEL fitted on every question, to paste into ragqa/retrieval/fitted.py.

    python bench/lists/eval.py --home DIR [--data ../shared/data/mlconf] [--folds 5] [--fit]
    git worktree add /tmp/ragqa-before cdb7c85      # the version before the list decision
    python bench/lists/eval.py --home DIR --dump-lists before.json --code /tmp/ragqa-before
    python bench/lists/eval.py --home DIR --before before.json

DIR is a RAGQA_HOME (kept; the slices are ingested into collections named after them, once).
The ICML 2019 papers of mlconf are held out for independent evaluation: nothing here reads them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if os.environ.get("RAGQA_CODE"):
    # --code DIR: this process measures the ragqa of another checkout (the `before` lists).
    # An editable install's import hook would win over sys.path: take it out first.
    sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, os.environ["RAGQA_CODE"])

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "mlconf"
SLICES = {"nips2018": ("nips", 2018), "acl2022": ("acl", 2022)}
# Slices only the later blind reading rounds use (bench/reading/blind.py --round 7-9): papers no
# earlier round's helpers had read (rounds 7-9). The list questions stay on SLICES.
MORE_SLICES = {"nips2017": ("nips", 2017), "naacl2024": ("naacl", 2024),
               "icml2018": ("icml", 2018), "naacl2022": ("naacl", 2022),
               "nips2016": ("nips", 2016), "acl2021": ("acl", 2021),
               "ijcai2024": ("ijcai", 2024), "coling2022": ("coling", 2022),
               "ijcai2022": ("ijcai", 2022), "coling2025": ("coling", 2025),
               "ijcai2023": ("ijcai", 2023), "coling2020": ("coling", 2020),
               # round 13 (issue 46) and fact round 4
               "icml2017": ("icml", 2017), "ijcai2020": ("ijcai", 2020),
               "aistats2024": ("aistats", 2024),
               # round 14 and fact round 5 (issue 46, session 30)
               "colm2024": ("colm", 2024), "aistats2025": ("aistats", 2025),
               # the follow-up wordings set (issue 46, session 32; round 15 is on BLIND_SLICES)
               "nips2015": ("nips", 2015), "aistats2022": ("aistats", 2022),
               "corl2025": ("corl", 2025), "uai2024": ("uai", 2024),
               # the follow-up sets in other languages (issue 46, session 33)
               "uai2023": ("uai", 2023), "corl2024": ("corl", 2024),
               # round 16: chats, near misses and facts (issue 46, session 34)
               "aistats2021": ("aistats", 2021), "nips2013": ("nips", 2013),
               # fact round 9 (issue 46, session 37)
               "nips2014": ("nips", 2014), "aistats2020": ("aistats", 2020)}
# The blind list set of issue 45 (bench/lists/BLIND_LISTS.md): questions written by a helper
# that never saw ragqa, on slices no earlier set used; split in halves before any was looked at
# (blind_half): "calibrate" may tune, "report" is only reported.
BLIND_SLICES = {"naacl2021": ("naacl", 2021), "ijcai2021": ("ijcai", 2021)}
# The second blind list set (session 27, bench/lists/BLIND_LISTS2.md): written and judged by
# helpers that never saw ragqa, on slices no earlier set used, after the tiers' last change;
# nothing is tuned on it, so it is reported whole.
BLIND2_SLICES = {"www2025": ("www", 2025), "iclr2018": ("iclr", 2018)}
# The third blind list set (session 28, bench/lists/BLIND_LISTS3.md), made the same way, after
# the exclusions of question.without_excluded were written: nothing is tuned on it; it is
# reported whole and by its halves (blind_half), the "report" half being the held-out figure.
BLIND3_SLICES = {"coling2022": ("coling", 2022), "ijcai2022": ("ijcai", 2022)}
# The fourth (session 29, bench/lists/BLIND_LISTS4.md), made the same way while the core's second
# look (core_model.py) was fitted on other sets, and first run with it fixed: nothing is tuned
# on it; reported whole and by its halves, the "report" half being the held-out figure.
BLIND4_SLICES = {"aistats2023": ("aistats", 2023), "ijcai2023": ("ijcai", 2023)}
# The later blind sets by the name their figures go under.
LATER_BLIND = {"blind2": BLIND2_SLICES, "blind3": BLIND3_SLICES, "blind4": BLIND4_SLICES}


def part_of(slice_name: str, qid: str) -> str:
    """Where a question's figures go: "dev", the first blind set's "calibrate" or "report"
    half, or a later set's name ("blind2", ...)."""
    if slice_name in SLICES:
        return "dev"
    return later_blind_part(slice_name) or blind_half(qid)


def benchmark_arguments(doc: str) -> argparse.ArgumentParser:
    """--home, --data and --json, as the list benchmarks take them."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    return parser


def has_data(args: argparse.Namespace) -> bool:
    """Whether the mlconf data is at --data (else a line says it is not); no .env is read."""
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return False
    os.environ.setdefault("RAGQA_ENV_FILE", "/nonexistent")
    return True


def later_blind_part(slice_name: str) -> str | None:
    """"blind2", "blind3" or "blind4" for a slice of a later blind set, else None."""
    return next((part for part, slices in LATER_BLIND.items() if slice_name in slices), None)
# Thresholds tried when calibrating (probabilities) and the list-level gate's.
THRESHOLDS = np.round(np.arange(0.05, 0.995, 0.01), 3)
GATES = np.round(np.arange(0.0, 0.96, 0.05), 3)
MIN_PRECISION = 0.72  # the calibration's floor on training folds (target: 0.7 held out)
MIN_ABSTENTION = 0.9
# What the thresholds maximise: "per-question" (`success`: each question's own F1, or 1 for
# an absent topic left without a list); or, once abstention >= MIN_ABSTENTION, "f1" (the lists'
# mean recall and precision's F1) or "recall" (the best recall at precision >= MIN_PRECISION).
OBJECTIVE = os.environ.get("RAGQA_LISTS_OBJECTIVE", "per-question")
# The topic gate learns from a few dozen questions: a lighter penalty than the paper model's.
GATE_L2 = 0.01


@dataclass
class Question:
    slice: str
    qid: str
    text: str
    kind: str
    grades: dict[str, int]

    @property
    def relevant(self) -> set[str]:
        return {d for d, g in self.grades.items() if g >= 2}

    @property
    def acceptable(self) -> set[str]:
        return {d for d, g in self.grades.items() if g >= 1}


def load_questions(slice_name: str) -> list[Question]:
    grades: dict[str, dict[str, int]] = {}
    qrels = HERE / f"{slice_name}.qrels.tsv"
    for line in (qrels.read_text(encoding="utf-8") if qrels.is_file() else "").splitlines():
        qid, doc, grade = line.split("\t")
        grades.setdefault(qid, {})[doc] = int(grade)
    out = []
    for record in map(json.loads, (HERE / f"{slice_name}.questions.jsonl").open(encoding="utf-8")):
        out.append(Question(slice_name, record["id"], record["question"], record["kind"],
                            grades.get(record["id"], {})))
    return out


def blind_half(qid: str) -> str:
    """The half of the blind list set a question is in, by a hash of its id alone (fixed
    before any answer was seen): "calibrate" or "report"."""
    import hashlib

    return "calibrate" if int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 2 == 0 \
        else "report"


def slice_file(home: Path, data: Path, name: str) -> Path:
    """The slice's papers as JSON lines (made once from mlconf, kept under HOME)."""
    if name == "seeds":
        raise ValueError("seeds have no slice file")
    path = home / "slices" / f"{name}.jsonl"
    if not path.is_file():
        venue, year = {**SLICES, **MORE_SLICES, **BLIND_SLICES, **BLIND2_SLICES,
                       **BLIND3_SLICES, **BLIND4_SLICES}[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as src, \
                path.open("w", encoding="utf-8") as out:
            for line in src:
                record = json.loads(line)
                if record["venue"] == venue and record["year"] == year:
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def retriever_for(home: Path, collection: str, sources: list[Path]):
    from ragqa.config import load_settings
    from ragqa.index.ingest import ingest_paths
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, collection, make_encoder(settings))
    ingest_paths(store, sources)
    return Retriever(store)


# ---------------------------------------------------------------- metrics

def question_scores(listed: list[str], q: Question) -> dict[str, float]:
    if q.kind == "absent" or not q.relevant:
        return {"abstained": float(not listed), "listed": len(listed)}
    found = len(q.relevant.intersection(listed))
    precision = len(q.acceptable.intersection(listed)) / len(listed) if listed else 0.0
    return {"recall": found / len(q.relevant), "precision": precision, "listed": len(listed)}


def f1(figures: dict[str, float]) -> float:
    """The F1 of a summary's mean recall and precision (0 where it has neither)."""
    r, p = figures.get("recall", 0.0), figures.get("precision", 0.0)
    return round(2 * r * p / (r + p), 3) if r + p else 0.0


def success(rows: list[dict[str, float]]) -> float:
    """Every question counts the same: a list question by its list's F1, an absent topic by
    whether it got no list (so muting a real topic costs as much as listing an absent one)."""
    total = 0.0
    for r in rows:
        if "abstained" in r:
            total += r["abstained"]
        elif r["recall"] + r["precision"]:
            total += 2 * r["recall"] * r["precision"] / (r["recall"] + r["precision"])
    return total / len(rows)


def summarise(rows: list[dict[str, float]]) -> dict[str, float]:
    lists = [r for r in rows if "recall" in r]
    silent = sum(1 for r in lists if not r["listed"])
    absent = [r for r in rows if "abstained" in r]
    out: dict[str, float] = {"questions": len(lists), "absent_questions": len(absent)}
    if lists:
        out["recall"] = round(float(np.mean([r["recall"] for r in lists])), 3)
        out["precision"] = round(float(np.mean([r["precision"] for r in lists])), 3)
        out["mean_listed"] = round(float(np.mean([r["listed"] for r in lists])), 1)
        out["empty_lists"] = silent
    if absent:
        out["abstention"] = round(float(np.mean([r["abstained"] for r in absent])), 3)
    return out


# ---------------------------------------------------------------- calibration

def features(hits) -> np.ndarray:
    from ragqa.retrieval.fitted import RelevanceModel

    return np.array([[h.signals[f] for f in RelevanceModel.FEATURES] for h in hits],
                    dtype=np.float64).reshape(len(hits), len(RelevanceModel.FEATURES))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50
                 ) -> tuple[np.ndarray, float]:
    """Weights and bias by Newton's method on the L2-penalised log-loss, positives and
    negatives weighted to equal total mass (the pools hold far more negatives)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    weight = np.where(y > 0, 0.5 / max(y.sum(), 1), 0.5 / max((1 - y).sum(), 1)) * len(y)
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        gradient = xb.T @ (weight * (p - y)) + penalty * w
        hessian = (xb * (weight * p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def calibrate(train: list[tuple[Question, list, np.ndarray]]):
    """Fit the RelevanceModel on these questions. The paper model: logistic weights over their
    candidates (grade 2 positive, 0 or unjudged negative, 1 left out). The topic gate: logistic
    weights over each question's strongest signals, list questions against absent topics. Then
    the two thresholds: abstention >= MIN_ABSTENTION first, then the best recall at precision
    >= MIN_PRECISION, or the best F1 where no setting is that precise.
    """
    from ragqa.retrieval.fitted import RelevanceModel, question_signals

    xs, ys = [], []
    for q, hits, x in train:
        for hit, row in zip(hits, x, strict=True):
            grade = q.grades.get(hit.paper.paper_id, 0)
            if grade == 1:
                continue
            xs.append(row)
            ys.append(1.0 if grade >= 2 else 0.0)
    weights, bias = fit_logistic(np.array(xs), np.array(ys))
    judged = [(q, hits, x) for q, hits, x in train if hits]
    gate_x = np.array([question_signals(hits, RelevanceModel.GATE_FEATURES)
                       for _, hits, _ in judged])
    gate_y = np.array([1.0 if q.kind == "list" else 0.0 for q, _, _ in judged])
    gate_weights, gate_bias = fit_logistic(gate_x, gate_y, l2=GATE_L2)
    topic = 1 / (1 + np.exp(-(gate_x @ gate_weights + gate_bias)))
    papers = [1 / (1 + np.exp(-(x @ weights + bias))) for _, _, x in judged]
    ids = [[h.paper.paper_id for h in hits] for _, hits, _ in judged]
    best, best_key = (0.5, 0.0), None
    for threshold in THRESHOLDS:
        for gate in GATES:
            rows = [question_scores([pid for pid, p in zip(pids, probabilities, strict=True)
                                     if p >= threshold] if t >= gate else [], q)
                    for (q, _, _), pids, probabilities, t in zip(judged, ids, papers, topic,
                                                                 strict=True)]
            s = summarise(rows)
            r, pr, ab = s.get("recall", 0), s.get("precision", 0), s.get("abstention", 1)
            f1 = 2 * r * pr / (r + pr) if r + pr else 0.0
            if OBJECTIVE == "per-question":
                key = (success(rows),)
            else:
                key = (ab >= MIN_ABSTENTION, f1 if OBJECTIVE == "f1" else
                       (pr >= MIN_PRECISION, r if pr >= MIN_PRECISION else f1))
            if best_key is None or key > best_key:
                best, best_key = (float(threshold), float(gate)), key
    return RelevanceModel(tuple(round(float(w), 4) for w in weights), round(bias, 4), best[0],
                          tuple(round(float(w), 4) for w in gate_weights), round(gate_bias, 4),
                          best[1])


# ---------------------------------------------------------------- runs

def candidate_runs(retriever, questions: list[Question]):
    """Each question's candidates with the decision's signals (no cut), ids attached."""
    from ragqa.retrieval.fitted import LIST_MODEL

    runs = []
    for q in questions:
        hits = retriever.search(q.text, cut=False, sentences=False, rule=LIST_MODEL).hits
        runs.append((q, hits, features(hits)))
    return runs


def decide(model, retriever, q: Question, hits) -> list[str]:
    """The list a model keeps from a question's candidates, as Retriever.search decides it
    (with the near-miss and one-paper-topic rules around the model)."""
    return [h.paper.paper_id for h in retriever.decide_list(q.text, list(hits), model)]


def candidate_recall(runs, depth: int | None) -> float:
    values = []
    for q, hits, _ in runs:
        if q.kind == "list" and q.relevant:
            ranked = [h.paper.paper_id for h in hits][:depth]
            values.append(len(q.relevant.intersection(ranked)) / len(q.relevant))
    return round(float(np.mean(values)), 3) if values else float("nan")


def sources_of(home: Path, data: Path, name: str) -> list[Path]:
    from ragqa.resources import seed_files

    return seed_files() if name == "seeds" else [slice_file(home, data, name)]


def dump_lists(args) -> int:  # noqa: ANN001
    """Each question's list as the product gives it (its own decision, default rule), so that
    an older checkout can be measured as `before`: only Retriever.search is used."""
    out = {}
    for name in [*SLICES, "seeds"]:
        retriever = retriever_for(args.home, name, sources_of(args.home, args.data, name))
        out[name] = {q.qid: [h.paper.paper_id for h in retriever.search(q.text).hits]
                     for q in load_questions(name)}
    args.dump_lists.write_text(json.dumps(out), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fit", action="store_true", help="print LIST_MODEL fitted on all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump-lists", type=Path, metavar="FILE",
                        help="only write each question's list, as `ragqa search` gives it")
    parser.add_argument("--before", type=Path, metavar="FILE",
                        help="lists dumped by an earlier version, reported as `before`")
    parser.add_argument("--code", type=Path, metavar="DIR",
                        help="with --dump-lists: use the ragqa package of this checkout")
    args = parser.parse_args()
    if args.code and not os.environ.get("RAGQA_CODE"):
        env = {**os.environ, "RAGQA_CODE": str(args.code.resolve())}
        return subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return 0

    if args.dump_lists:
        return dump_lists(args)
    before = json.loads(args.before.read_text()) if args.before else {}
    report: dict = {"slices": {}}
    runs_by_slice = {}
    retrievers = {}
    for name in [*SLICES, "seeds"]:
        questions = [q for q in load_questions(name) if q.grades]  # judged ones only
        if not questions:
            continue
        retriever = retriever_for(args.home, name, sources_of(args.home, args.data, name))
        runs = candidate_runs(retriever, questions)
        runs_by_slice[name] = runs
        retrievers[name] = retriever
        report["slices"][name] = {
            "papers": retriever.total_papers,
            "before": summarise([question_scores(before[name][q.qid], q)
                                 for q in questions]) if name in before else {},
            "shipped": summarise([question_scores(
                [h.paper.paper_id for h in retriever.search(q.text, sentences=False).hits], q)
                for q in questions]),
            "candidates_recall@100": candidate_recall(runs, 100),
            "candidates_recall_all": candidate_recall(runs, None),
            "mean_candidates": round(float(np.mean([len(h) for _, h, _ in runs])), 1),
        }
    # Cross-validation over the two conference slices' questions, folds by question; the seeds
    # are only reported (29 papers: a check that the decision still holds on a small set).
    pooled = [run for name in SLICES for run in runs_by_slice.get(name, [])]
    rng = np.random.default_rng(0)
    fold_of = {run[0].qid: f for run, f in zip(
        pooled, rng.permutation(np.arange(len(pooled)) % args.folds), strict=True)}
    held_out: dict[str, list] = {name: [] for name in runs_by_slice}
    models = []
    for fold in range(args.folds):
        model = calibrate([run for run in pooled if fold_of[run[0].qid] != fold])
        models.append(model)
        for q, hits, _ in (run for run in pooled if fold_of[run[0].qid] == fold):
            held_out[q.slice].append(question_scores(
                decide(model, retrievers[q.slice], q, hits), q))
    for q, hits, _ in runs_by_slice["seeds"]:  # each fold's model, averaged over the folds
        for model in models:
            held_out["seeds"].append(question_scores(
                decide(model, retrievers["seeds"], q, hits), q))
    for name, rows in held_out.items():
        report["slices"][name]["held_out"] = summarise(rows)
    report["fold_models"] = [str(m) for m in models]
    if args.fit:
        report["fitted_on_all"] = str(calibrate(pooled))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, figures in report["slices"].items():
        print(f"\n{name} ({figures['papers']} papers; candidates per question "
              f"{figures['mean_candidates']}, their recall@100 {figures['candidates_recall@100']},"
              f" all {figures['candidates_recall_all']})")
        for label in ("before", "held_out", "shipped"):
            s = figures[label]
            if not s:
                continue
            print(f"  {label:9} recall {s.get('recall', float('nan')):.3f}  precision "
                  f"{s.get('precision', float('nan')):.3f}  listed {s.get('mean_listed', 0):5.1f}"
                  f"  abstention {s.get('abstention', float('nan')):.3f}"
                  f"  empty {s.get('empty_lists', 0)} "
                  f"({s['questions']} list, {s['absent_questions']} absent)")
    for i, m in enumerate(models):
        print(f"fold {i}: {m}")
    if args.fit:
        print(f"\nfitted on all: {report['fitted_on_all']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
