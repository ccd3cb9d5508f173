"""Calibrate the relevance cut (ragqa.retrieve: Z_STRONG, Z_WEAK, COVERAGE) on data.

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
import sys
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
        "CPO", "Reinforcement fine-tuning (RFT) has shown promise for training LLM agents…"},
    "Which papers study graph neural networks?": {"GFFMERGE"},
    "Which papers generate GPU kernels?": {"EGG"},
    "Which papers detect misinformation?": {"FactGuard"},
}

GRID = {"z_strong": [2.0, 2.5, 3.0, 3.5], "z_weak": [0.5, 1.0, 1.5, 2.0],
        "coverage": [0.4, 0.5, 0.6, 0.7, 0.8]}


def _retriever(home: Path, collection: str, sources: list[Path]):
    from ragqa.config import load_settings
    from ragqa.embeddings import make_encoder
    from ragqa.ingest import ingest_paths
    from ragqa.retrieve import Retriever
    from ragqa.store import Store

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, collection, make_encoder(settings))
    ingest_paths(store, sources)
    return Retriever(store)


def _signals(retriever, question: str, depth: int = 20) -> list[tuple[str, str, float, float]]:
    hits = retriever.search(question, k=depth, cut=False).hits
    return [(h.paper.paper_id, h.paper.title, h.z, h.coverage) for h in hits]


def _kept(signals, z_strong: float, z_weak: float, coverage: float) -> set[str]:
    return {pid for pid, _, z, cov in signals
            if z >= z_strong or (z >= z_weak and cov >= coverage)}


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
    args = parser.parse_args()
    if not (args.data / "queries.jsonl").is_file():
        print(f"skipped: no SciFact data at {args.data}")
        return 0
    from ragqa.resources import seed_files
    from ragqa.retrieve import COVERAGE, Z_STRONG, Z_WEAK

    qrels: dict[str, set[str]] = {}
    for line in (args.data / "qrels_train.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(doc)
    queries = [q for q in map(json.loads, (args.data / "queries.jsonl").open())
               if q["split"] == "train" and q["_id"] in qrels]

    scifact = _retriever(args.home, "scifact", [args.data / "corpus.jsonl.gz"])
    seeds = _retriever(args.home, "seeds", seed_files())
    on_scifact = [(_signals(scifact, q["text"]), qrels[q["_id"]]) for q in queries]
    on_seeds = [_signals(seeds, q["text"]) for q in queries]
    labelled = []
    for question, titles in SEED_LABELS.items():
        signals = _signals(seeds, question)
        labelled.append((signals, {pid for pid, title, _, _ in signals if title in titles}))

    rows = []
    for z_strong, z_weak, coverage in itertools.product(*GRID.values()):
        if z_weak > z_strong:
            continue
        counts = [0, 0, 0]
        for signals, relevant in on_scifact:
            kept = _kept(signals, z_strong, z_weak, coverage)
            counts[0] += len(kept & relevant)
            counts[1] += len(kept - relevant)
            counts[2] += len(relevant - kept)
        false_alarms = sum(bool(_kept(s, z_strong, z_weak, coverage)) for s in on_seeds)
        seed_counts = [0, 0, 0]
        for signals, relevant in labelled:
            kept = _kept(signals, z_strong, z_weak, coverage)
            seed_counts[0] += len(kept & relevant)
            seed_counts[1] += len(kept - relevant)
            seed_counts[2] += len(relevant - kept)
        p, r, f1 = _prf(*counts)
        sp, sr, sf1 = _prf(*seed_counts)
        rows.append({"z_strong": z_strong, "z_weak": z_weak, "coverage": coverage,
                     "scifact_precision": round(p, 3), "scifact_recall": round(r, 3),
                     "scifact_f1": round(f1, 3),
                     "seeds_false_alarm_rate": round(false_alarms / len(on_seeds), 3),
                     "seeds_labelled_f1": round(sf1, 3), "seeds_labelled_precision": round(sp, 3),
                     "seeds_labelled_recall": round(sr, 3)})
    # Objective: F1 on both labelled sets, with false alarms (off-topic claims) held low.
    for row in rows:
        row["objective"] = round((row["scifact_f1"] + row["seeds_labelled_f1"]) / 2
                                 - max(0.0, row["seeds_false_alarm_rate"] - 0.05), 4)
    rows.sort(key=lambda r: -r["objective"])
    in_use = next((r for r in rows if (r["z_strong"], r["z_weak"], r["coverage"])
                   == (Z_STRONG, Z_WEAK, COVERAGE)), None)
    if args.json:
        print(json.dumps({"best": rows[:10], "in_use": in_use, "queries": len(queries)},
                         indent=2))
        return 0
    print(f"{len(queries)} SciFact train claims; {len(SEED_LABELS)} labelled seed questions")
    header = ("z_strong z_weak cover | scifact P    R    F1 | seeds FA | labelled P    R    F1 "
              "| objective")
    print(header)
    for row in rows[:12] + ([in_use] if in_use and in_use not in rows[:12] else []):
        mark = "  <- in use" if row is in_use else ""
        print(f"{row['z_strong']:>8} {row['z_weak']:>6} {row['coverage']:>5} | "
              f"{row['scifact_precision']:>9.3f} {row['scifact_recall']:.3f} "
              f"{row['scifact_f1']:.3f} | {row['seeds_false_alarm_rate']:>8.3f} | "
              f"{row['seeds_labelled_precision']:>10.3f} {row['seeds_labelled_recall']:.3f} "
              f"{row['seeds_labelled_f1']:.3f} | {row['objective']:.4f}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
