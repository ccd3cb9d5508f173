"""Questions in other languages (issue 15): offline list recall and precision per language,
next to English on the same questions, and the multilingual list decision's calibration.

The questions are bench/lists' (ids unchanged), translated: SLICE.LANG.jsonl here for LANG in
zh (every list and absent-topic question of the three slices), ja and de (the seeds' and ten
NeurIPS 2018 questions). Grades are bench/lists' qrels. Metrics are bench/lists/eval.py's
(imported, not copied): recall of the papers graded 2, precision of the listed papers graded 1
or 2, abstention on absent topics.

Held out: five folds by question over the Chinese questions of the slices measured (the seeds'
too); the multilingual RelevanceModel is fitted (bench/lists' calibration, then without its
topic gate) on four folds and decides the fifth, so no figure comes from a question it was
fitted on in any language (a Japanese or German question is decided by the model of the fold
its Chinese version is in). English is bench/lists' held-out recipe on the same questions
(folds over the conference slices; the seeds decided by each fold's model, averaged).

    python bench/multilingual/eval.py --home DIR [--data ../shared/data/mlconf] [--fit] [--json]

DIR is a RAGQA_HOME holding the collections nips2018 and acl2022 (bench/lists/eval.py builds
them) with multilingual vectors (`ragqa ingest --multilingual --collection nips2018`; this
script adds them where missing, ~3 min a slice on a quiet machine) and seeds. ICML 2019 is never
read.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pickle
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LISTS = HERE.parent / "lists" / "eval.py"
LANGUAGES = ("zh", "ja", "de")
SLICE_NAMES = ("nips2018", "acl2022", "seeds")
PLAIN = "zh-plain"  # the Chinese questions searched without ragqa.models.glossary


def _lists_eval():
    spec = importlib.util.spec_from_file_location("lists_eval", LISTS)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["lists_eval"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


le = _lists_eval()


def translated(slice_name: str, language: str, english: list) -> list:
    """The slice's judged questions in `language` (those translated), as lists_eval Questions."""
    path = HERE / f"{slice_name}.{language}.jsonl"
    if not path.is_file():
        return []
    by_id = {q.qid: q for q in english}
    out = []
    for record in map(json.loads, path.open(encoding="utf-8")):
        q = by_id.get(record["id"])
        if q is not None:
            out.append(le.Question(slice_name, q.qid, record["question"], q.kind, q.grades))
    return out


def retriever_for(home: Path, data: Path, name: str):
    """The slice's retriever, its multilingual vectors added where missing."""
    from ragqa.config import load_settings
    from ragqa.index.ingest import ingest_paths
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder, make_multilingual_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, name, make_encoder(settings))
    ingest_paths(store, le.sources_of(home, data, name),
                 multilingual=make_multilingual_encoder(settings))
    return Retriever(store)


def foreign_runs(retriever, questions: list) -> list:
    """Each question's multilingual candidates with their signals (no cut)."""
    from ragqa.retrieval.fitted import MULTILINGUAL_LIST_MODEL

    runs = []
    for q in questions:
        hits = retriever.search_foreign(q.text, cut=False, sentences=False,
                                        rule=MULTILINGUAL_LIST_MODEL).hits
        runs.append((q, hits, le.features(hits)))
    return runs


def key(q) -> str:
    return f"{q.slice}:{q.qid}"


def folds_of(pooled: list, folds: int) -> dict[str, int]:
    """Folds by question: bench/lists/eval.py's for its pooled questions (the same
    permutation), and so for the Chinese questions of the slices they are fitted on."""
    rng = np.random.default_rng(0)
    return {key(run[0]): f for run, f in zip(
        pooled, rng.permutation(np.arange(len(pooled)) % folds), strict=True)}


def held_out(runs_by_slice: dict, fold_of: dict[str, int], folds: int, train_language: str,
             decide, slices=le.SLICES, gate: bool = True) -> tuple[dict, list]:
    """Per (slice, language): the held-out rows; and the fold models (`gate=False`: fitted,
    then without the topic gate, as MULTILINGUAL_LIST_MODEL ships)."""
    pooled = [run for name in slices for run in runs_by_slice.get((name, train_language), [])]
    models = [le.calibrate([r for r in pooled if fold_of[key(r[0])] != f]) for f in range(folds)]
    if not gate:
        models = [type(m)(m.weights, m.bias, m.threshold) for m in models]
    rows: dict = {}
    for (name, language), runs in runs_by_slice.items():
        for q, hits, _ in runs:
            chosen = [models[fold_of[key(q)]]] if key(q) in fold_of else models
            for model in chosen:
                rows.setdefault((name, language), []).append(
                    le.question_scores(decide(model, name, q, hits), q))
    return rows, models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=le.DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fit", action="store_true", help="print the model fitted on all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--chinese-gate", action="store_true",
                        help="keep the fitted topic gate in the Chinese model")
    parser.add_argument("--cache", type=Path, metavar="FILE",
                        help="keep the candidate runs here and reuse them (calibration only)")
    parser.add_argument("--slices", default=",".join(SLICE_NAMES),
                        help="which of nips2018, acl2022, seeds (folds pool the conference ones)")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data at {args.data}")
        return 0
    from ragqa.retrieval.fitted import CHINESE_LIST_MODEL, LIST_MODEL, MULTILINGUAL_LIST_MODEL

    retrievers, english_runs, foreign = {}, {}, {}
    cached = pickle.loads(args.cache.read_bytes()) if args.cache and args.cache.is_file() \
        else {}
    for name in args.slices.split(","):
        questions = [q for q in le.load_questions(name) if q.grades]
        retrievers[name] = retriever_for(args.home, args.data, name)
        english_runs[(name, "en")] = cached.get((name, "en")) or \
            le.candidate_runs(retrievers[name], questions)
        for language in LANGUAGES:
            asked = translated(name, language, questions)
            if asked:
                foreign[(name, language)] = cached.get((name, language)) or \
                    foreign_runs(retrievers[name], asked)
            if asked and language == "zh":  # and without the dictionaries' English words
                retrievers[name].dictionary = False
                foreign[(name, PLAIN)] = cached.get((name, PLAIN)) or \
                    foreign_runs(retrievers[name], asked)
                retrievers[name].dictionary = True
    if args.cache:
        args.cache.write_bytes(pickle.dumps({**english_runs, **foreign}))
    pooled = [run for name in le.SLICES for run in english_runs.get((name, "en"), [])]
    fold_of = folds_of(pooled, args.folds)
    english_rows, _ = held_out(english_runs, fold_of, args.folds, "en",
                               lambda m, name, q, hits: le.decide(m, retrievers[name], q, hits))
    # The multilingual model learns from every slice's Chinese questions, the seeds' too (29
    # papers are where a new user asks first), in folds of their own.
    # Two models: a Chinese question with the dictionaries' English words (CHINESE_LIST_MODEL)
    # learns from those; every other language from the Chinese questions without them
    # (MULTILINGUAL_LIST_MODEL): their signals are those of a question BM25 barely reads.
    fitted = [*le.SLICES, "seeds"]
    foreign_folds = folds_of([r for name in fitted for r in foreign.get((name, "zh"), [])],
                             args.folds)

    def keep(m, name, q, hits):
        return [h.paper.paper_id for h in m.keep(list(hits))]

    chinese_rows, models = held_out(
        {k: v for k, v in foreign.items() if k[1] == "zh"}, foreign_folds, args.folds, "zh",
        keep, slices=fitted, gate=args.chinese_gate)
    plain_rows, plain_models = held_out(
        {k: v for k, v in foreign.items() if k[1] != "zh"}, foreign_folds, args.folds, PLAIN,
        keep, slices=fitted, gate=False)
    foreign_rows = {**chinese_rows, **plain_rows}
    shipped_model = {PLAIN: MULTILINGUAL_LIST_MODEL, "zh": CHINESE_LIST_MODEL}
    report: dict = {"slices": {}, "fold_models": [str(m) for m in models],
                    "fold_models_without_dictionaries": [str(m) for m in plain_models]}
    for (name, language), runs in foreign.items():
        ids = {q.qid for q, _, _ in runs}
        english_same = [r for r, (q, _, _) in zip(
            english_rows[(name, "en")],
            [run for run in english_runs[(name, "en")]
             for _ in (range(args.folds) if name == "seeds" else [0])], strict=True)
            if q.qid in ids]
        model = shipped_model.get(language, MULTILINGUAL_LIST_MODEL)
        shipped_foreign = [le.question_scores(
            [h.paper.paper_id for h in model.keep(list(hits))], q)
            for q, hits, _ in runs]
        shipped_english = [le.question_scores(
            [h.paper.paper_id for h in retrievers[name].search(q.text, sentences=False,
                                                               rule=LIST_MODEL).hits], q)
            for q, _, _ in english_runs[(name, "en")] if q.qid in ids]
        entry = report["slices"].setdefault(name, {})
        entry[language] = {
            "questions": len(runs),
            "held_out": le.summarise(foreign_rows[(name, language)]),
            "english_held_out": le.summarise(english_same),
            "shipped": le.summarise(shipped_foreign),
            "english_shipped": le.summarise(shipped_english),
            "candidates_recall@100": le.candidate_recall(runs, 100),
            "english_candidates_recall@100": le.candidate_recall(
                [r for r in english_runs[(name, "en")] if r[0].qid in ids], 100),
        }
        held, english = entry[language]["held_out"], entry[language]["english_held_out"]
        if held.get("recall") is not None and english.get("recall"):
            entry[language]["recall_ratio"] = round(held["recall"] / english["recall"], 3)
    if args.fit:
        for language, label in (("zh", "fitted_on_all"), (PLAIN, "fitted_on_all_plain")):
            model = le.calibrate([run for name in fitted for run in foreign.get((name, language),
                                                                              [])])
            report[label] = str(type(model)(model.weights, model.bias, model.threshold))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    for name, languages in report["slices"].items():
        for language, figures in languages.items():
            print(f"\n{name} {language} ({figures['questions']} questions; candidates' "
                  f"recall@100 {figures['candidates_recall@100']} vs English "
                  f"{figures['english_candidates_recall@100']})")
            for label in ("held_out", "english_held_out", "shipped", "english_shipped"):
                s = figures[label]
                print(f"  {label:17} recall {s.get('recall', float('nan')):.3f}  precision "
                      f"{s.get('precision', float('nan')):.3f}  listed "
                      f"{s.get('mean_listed', 0):5.1f}  abstention "
                      f"{s.get('abstention', float('nan')):.3f}  empty {s.get('empty_lists', 0)}")
            if "recall_ratio" in figures:
                print(f"  held-out recall / English: {figures['recall_ratio']}")
    for i, m in enumerate(models):
        print(f"fold {i}: {m}")
    if args.fit:
        print(f"\nfitted on all (zh, with the dictionaries): {report['fitted_on_all']}")
        print(f"fitted on all (zh without them: other languages): "
              f"{report['fitted_on_all_plain']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
