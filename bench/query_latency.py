"""Query latency on a large collection: ragqa's search in-process and cold, `ragqa --help`, and
a plain llama-index pipeline over the same Chroma collection and embedder, side by side.

    python bench/query_latency.py --home DIR [--collection scale] [--queries 200] [--json]

DIR is a RAGQA_HOME holding the collection (fill it with `bench/scale_ingest.py --home DIR`).
The queries are SciFact's test claims (../shared/data/scifact), the first `--queries` of them.

  ours      `Retriever.search(q)` as `ragqa search` runs it: query embedding, Chroma, BM25,
            fusion, relevance cut, best sentences (warm: after a warm-up pass);
  llama     `VectorStoreIndex.from_vector_store(ChromaVectorStore(the same collection),
            embed_model=the same encoder).as_retriever(similarity_top_k=10).retrieve(q)`:
            the dense half alone, the usual llama-index RAG pipeline;
  embed     the query embedding alone (the floor both share).

Each query runs ours, then llama, then embed, so machine noise hits all three alike; the
report gives p50 / p95 per pipeline and the ratio of the p50s. Then `--cold` (default 5) fresh
`ragqa search` processes and `ragqa --help` processes, median wall time.

Needs llama-index-vector-stores-chroma (`pip install '.[bench]'`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def read_claims(path: Path, n: int) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle if line.strip()][:n]


def timed(call, *args) -> float:  # noqa: ANN001
    started = time.perf_counter()
    call(*args)
    return (time.perf_counter() - started) * 1000


def warm_latencies(home: Path, collection: str, queries: list[str]) -> dict:
    os.environ["RAGQA_HOME"] = str(home)
    from llama_index.core import VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.integrations.llama_index import as_llama_embedding
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings(os.environ)
    store = Store(settings, collection, make_encoder(settings))
    retriever = Retriever(store)
    index = VectorStoreIndex.from_vector_store(
        ChromaVectorStore(chroma_collection=store.collection()),
        embed_model=as_llama_embedding(store.encoder))
    llama = index.as_retriever(similarity_top_k=10)
    for query in queries[:10]:  # warm-up: caches, lazy imports, the HNSW index in memory
        retriever.search(query)
        llama.retrieve(query)
    times: dict[str, list[float]] = {"ours": [], "llama": [], "embed": []}
    for query in queries:
        times["ours"].append(timed(retriever.search, query))
        times["llama"].append(timed(llama.retrieve, query))
        times["embed"].append(timed(store.encoder.embed, [query]))
    summary = {name: {"p50_ms": round(percentile(ms, 50), 1),
                      "p95_ms": round(percentile(ms, 95), 1)} for name, ms in times.items()}
    return {"papers": retriever.total_papers, "queries": len(queries), **summary,
            "ratio_p50_ours_over_llama": round(summary["ours"]["p50_ms"]
                                               / summary["llama"]["p50_ms"], 2)}


def cold_seconds(args: list[str], env: dict[str, str], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ragqa", *args], env=env, check=True,
                       capture_output=True)
        walls.append(time.perf_counter() - started)
    return round(statistics.median(walls), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    claims = args.data / "scifact" / "queries_test.jsonl"
    if not claims.is_file():
        print(f"skipped: no SciFact queries at {claims}")
        return 0
    queries = read_claims(claims, args.queries)
    env = {**os.environ, "RAGQA_HOME": str(args.home), "RAGQA_LLM": "none"}
    report = {
        "warm": warm_latencies(args.home, args.collection, queries),
        "cold_search_s": cold_seconds(["search", queries[0], "--collection", args.collection],
                                      env, args.cold),
        "help_s": cold_seconds(["--help"], env, args.cold),
        "targets": {"warm_p50_ms": 60, "warm_p95_ms": 150, "cold_search_s": 2.5, "help_s": 0.3},
    }
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
