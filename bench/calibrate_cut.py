"""Calibrate the relevance cut for claims and fact questions
(ragqa.retrieval.fitted.CUT_FOR_CLAIMS).

"Which papers" lists and summary topics have their own decision, calibrated on judged
questions at conference scale: bench/lists/eval.py. The list and summary figures this script
still prints are those of the CutRule grid on the 12 seed questions, for comparison only.

Three sets, scored for every setting on a small grid:
1. SciFact train claims on the SciFact collection (qrels_train.tsv): the cut should keep the
   relevant abstracts among the top 20 and drop the rest (precision, recall, F1, micro).
2. The same claims on the bundled seeds (29 ML abstracts): nothing there is relevant, so every
   claim that keeps a paper is a false alarm (the "no paper covers it" rate).
3. Topic questions on the seeds with hand labels (below): the "which papers" use.

    python bench/calibrate_cut.py --home DIR [--data ../shared/data/scifact] [--json]

DIR is a RAGQA_HOME that holds (or will get) a `scifact` collection; an existing one is reused,
ingest being incremental. Only the train split is used: the test split stays for reporting.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import astuple
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"

# Hand labels on the seeds: question -> titles that answer it (derived titles, see corpus.py).
SEED_LABELS = {
    "Which papers do full-duplex speech?": {"Moshi-RAG", "τ-Voice", "LLM Orchestration"},
    "Which papers deal with molecules or materials?": {"TACE-v1-OAM-M", "CEITNet", "ArBG",
                                                       "GFFMERGE"},
    "Which papers study spiking neural networks?": {"A²SG", "DiceFormer"},
    "Which papers propose benchmarks for audio or voice models?": {"τ-Voice", "LALM-as-a-Judge"},
    "Which papers are about machine translation?": {"CULTURE-MT", "Hibiki-Zero"},
    "Which papers study autonomous driving?": set(),
    "Which papers are about protein folding?": set(),
    "Which papers study quantum computing?": set(),
    "Which papers do reinforcement learning or preference optimization?": {
        "CPO", "Reinforcement fine-tuning (RFT)"},
    "Which papers study graph neural networks?": {"GFFMERGE"},
    "Which papers generate GPU kernels?": {"EGG"},
    "Which papers detect misinformation?": {"FactGuard"},
}

# near_best: also keep a paper whose z is within this of the best paper's, when the best one
# clears z_strong (0 turns the rule off).
# max_gap: never keep a paper further than this below the best one.
GRID = {"z_strong": [2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5], "z_weak": [0.75, 1.0, 1.5, 2.0],
        "coverage": [0.4, 0.5, 0.6, 0.7, 0.8], "near_best": [0.0, 0.7, 1.0],
        "max_gap": [math.inf, 3.0, 2.0, 1.5, 1.0]}


def _retriever(home: Path, collection: str, sources: list[Path]):
    from ragqa.config import load_settings
    from ragqa.index.ingest import ingest_paths
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, collection, make_encoder(settings))
    ingest_paths(store, sources)
    return Retriever(store)


def _signals(retriever, question: str, depth: int = 20) -> list[tuple[str, str, float, float]]:
    from ragqa.retrieval.fitted import CUT_FOR_CLAIMS

    # The fused ranking and its z / coverage, whatever the kind of question (a CutRule's path).
    hits = retriever.search(question, k=depth, cut=False, rule=CUT_FOR_CLAIMS).hits
    return [(h.paper.paper_id, h.paper.title, h.z, h.coverage) for h in hits]


def _kept(signals, z_strong: float, z_weak: float, coverage: float, near_best: float,
          max_gap: float, gate=None) -> set[str]:  # noqa: ANN001
    from ragqa.retrieval.decide import keep_decisions
    from ragqa.retrieval.fitted import CutRule

    rule = CutRule(z_strong, z_weak, coverage, near_best, max_gap, gate)
    return {pid for (pid, *_), keep in zip(signals, keep_decisions(
        [z for *_, z, _ in signals], [c for *_, c in signals], rule), strict=True) if keep}


def _confusion(sets, setting, gate=None) -> tuple[int, int, int]:  # noqa: ANN001
    """(true positives, false positives, false negatives) of a setting over labelled sets."""
    tp = fp = fn = 0
    for signals, relevant in sets:
        kept = _kept(signals, *setting, gate=gate)
        tp, fp, fn = tp + len(kept & relevant), fp + len(kept - relevant), fn + len(relevant - kept)
    return tp, fp, fn


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the signals of the last run (HOME/cut_signals.json)")
    args = parser.parse_args()
    if not (args.data / "queries.jsonl").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0
    from ragqa.resources import seed_files

    qrels: dict[str, set[str]] = {}
    for line in (args.data / "qrels_train.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(doc)
    queries = [q for q in map(json.loads, (args.data / "queries.jsonl").open())
               if q["split"] == "train" and q["_id"] in qrels]

    cache = args.home / "cut_signals.json"  # the signals only change with the retrieval code
    if args.reuse and cache.is_file():
        on_scifact, on_seeds, labelled = json.loads(cache.read_text())
        on_scifact = [(s, set(r)) for s, r in on_scifact]
        labelled = [(s, set(r)) for s, r in labelled]
    else:
        scifact = _retriever(args.home, "scifact", [args.data / "corpus.jsonl.gz"])
        seeds = _retriever(args.home, "seeds", seed_files())
        on_scifact = [(_signals(scifact, q["text"]), qrels[q["_id"]]) for q in queries]
        on_seeds = [_signals(seeds, q["text"]) for q in queries]
        labelled = []
        for question, titles in SEED_LABELS.items():
            signals = _signals(seeds, question)
            labelled.append((signals, {pid for pid, title, _, _ in signals if title in titles}))
        cache.write_text(json.dumps([[(s, sorted(r)) for s, r in on_scifact], on_seeds,
                                     [(s, sorted(r)) for s, r in labelled]]))

    from ragqa.retrieval.fitted import CUT_FOR_CLAIMS, CutRule

    # The CutRules lists and summaries used before bench/lists/eval.py's RelevanceModel.
    CUT_FOR_LISTS = CutRule(3.5, 1.5, 0.4, 1.0, 1.0)  # noqa: N806
    CUT_FOR_SUMMARIES = CutRule(2.25, 0.75, 0.4, 0.0, math.inf, gate=CUT_FOR_LISTS)  # noqa: N806

    def score(setting: tuple, gate=None) -> dict:  # noqa: ANN001
        p, r, f1 = _prf(*_confusion(on_scifact, setting, gate))
        sp, sr, sf1 = _prf(*_confusion(labelled, setting, gate))
        false_alarms = sum(bool(_kept(s, *setting, gate=gate)) for s in on_seeds)
        return {**dict(zip(GRID, setting, strict=True)),
                "scifact_precision": round(p, 3), "scifact_recall": round(r, 3),
                "scifact_f1": round(f1, 3),
                "seeds_false_alarm_rate": round(false_alarms / len(on_seeds), 3),
                "seeds_labelled_f1": round(sf1, 3), "seeds_labelled_precision": round(sp, 3),
                "seeds_labelled_recall": round(sr, 3)}

    # Three uses, three settings (fitted.CUT_FOR_LISTS / _CLAIMS / _SUMMARIES), each
    # judged half on its own data and half on staying silent for off-topic questions (SciFact
    # claims asked of the seeds: any paper kept is a false alarm):
    # - "which papers ..." lists on the labelled seed questions (F1);
    # - claims and fact questions on SciFact train (F1);
    # - summaries on the labelled questions, recall-weighted (F2: breadth), no gap limit, behind
    #   the list rule in use as a gate (a topic the list rule finds nothing on stays silent).
    settings = list(itertools.product(*GRID.values()))
    rows = [score(setting) for setting in settings]
    for row in rows:
        silent = 1 - row["seeds_false_alarm_rate"]
        row["objective_lists"] = round((row["seeds_labelled_f1"] + silent) / 2, 4)
        row["objective_claims"] = round((row["scifact_f1"] + silent) / 2, 4)
    gated = [score(setting, CUT_FOR_LISTS) for setting in settings if setting[-1] == math.inf]
    for row in gated:
        p, r = row["seeds_labelled_precision"], row["seeds_labelled_recall"]
        f2 = 5 * p * r / (4 * p + r) if p + r else 0.0
        row["objective_summaries"] = round((f2 + 1 - row["seeds_false_alarm_rate"]) / 2, 4)

    best = {}
    for kind, current, table in (("lists", CUT_FOR_LISTS, rows), ("claims", CUT_FOR_CLAIMS, rows),
                                 ("summaries", CUT_FOR_SUMMARIES, gated)):
        ranked = sorted(table, key=lambda r, k=kind: (-r[f"objective_{k}"],
                                                      -r["seeds_labelled_recall"]))
        in_use = next((r for r in table
                       if tuple(r[key] for key in GRID) == astuple(current)[:len(GRID)]), None)
        best[kind] = {"top": ranked[:8], "in_use": in_use}
    if args.json:
        print(json.dumps({"queries": len(queries), **best}, indent=2, default=str))
        return 0
    print(f"{len(queries)} SciFact train claims; {len(SEED_LABELS)} labelled seed questions")
    for kind, table in best.items():
        print(f"\nbest for {kind}:")
        print("z_strong z_weak cover near  gap | scifact P    R    F1 | seeds FA | labelled P"
              "    R    F1 | objective")
        shown = table["top"] + ([table["in_use"]] if table["in_use"] not in table["top"] else [])
        for row in shown:
            if row is None:
                continue
            mark = "  <- in use" if row is table["in_use"] else ""
            print(f"{row['z_strong']:>8} {row['z_weak']:>6} {row['coverage']:>5} "
                  f"{row['near_best']:>4} {row['max_gap']:>4} | "
                  f"{row['scifact_precision']:>9.3f} {row['scifact_recall']:.3f} "
                  f"{row['scifact_f1']:.3f} | {row['seeds_false_alarm_rate']:>8.3f} | "
                  f"{row['seeds_labelled_precision']:>10.3f} {row['seeds_labelled_recall']:.3f} "
                  f"{row['seeds_labelled_f1']:.3f} | {row[f'objective_{kind}']:.4f}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
