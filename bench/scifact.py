"""Retrieval quality of `ragqa search` on BEIR SciFact: nDCG@10, recall@100 and MRR@10.

The data (not part of the repository, licence CC BY-NC) is read from `../shared/data/scifact`
next to the repository, or from `--data DIR`; where it is absent the script says so and exits 0.

It runs the real CLI as subprocesses, exactly as a user would:

    ragqa ingest <corpus.jsonl.gz> --collection scifact --quiet --json
    ragqa search --batch <queries.jsonl> --json -k 100 --collection scifact

into a fresh temporary RAGQA_HOME, or into `--home DIR` (kept afterwards; ingest is incremental,
so a second run on the same folder skips the ~5 min of embedding). Other RAGQA_* settings in the
environment (chunk size, candidates, ...) apply as usual, so the script also serves for tuning:
tune on `--split train`, report on `--split test`.

Run it:

    /tmp/venv/bin/python bench/scifact.py                      # test split, temporary home
    /tmp/venv/bin/python bench/scifact.py --home /tmp/sf-home  # keep the index for next time
    /tmp/venv/bin/python bench/scifact.py --home /tmp/sf-home --split train --json
    # SciFact among mlconf distractors (HOME from bench/scale_ingest.py; nothing re-embedded):
    /tmp/venv/bin/python bench/scifact.py --home /tmp/sf-home --distractors HOME

The metrics are ragqa's own (`ragqa.evaluate`, the code behind `ragqa eval`): they follow BEIR
(pytrec_eval): graded gains (SciFact's are all 1), DCG with log2(rank + 1), the ideal DCG from
the qrels, scores averaged over the queries of the split that have qrels (a query with no
results scores 0). `ragqa eval --corpus ... --queries ... --qrels ...` gives the same figures in
one command; this script also times ingest and search, and compares with published baselines.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ragqa.evaluate import mean_metrics, read_qrels

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COLLECTION = "scifact"
K_RETRIEVE = 100

#: Published nDCG@10 on the SciFact test split (BEIR paper; Anserini; MTEB leaderboard).
BASELINES: dict[str, float] = {
    "BM25 (BEIR paper)": 0.665,
    "BM25 (Anserini flat)": 0.679,
    "bge-small-en-v1.5 (MTEB)": 0.713,
}

# ---------------------------------------------------------------- data

def read_queries(path: Path, split: str) -> dict[str, str]:
    """Query id -> text for the queries of one split."""
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                if record.get("split", split) == split:
                    queries[str(record["_id"])] = str(record["text"])
    return queries


def count_lines(path: Path) -> int:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def parse_run(output: str) -> dict[str, list[str]]:
    """`ragqa search --batch --json` lines -> query id -> ranked paper ids."""
    run: dict[str, list[str]] = {}
    for line in output.splitlines():
        if line.strip():
            record = json.loads(line)
            run[str(record["_id"])] = [str(hit["paper_id"]) for hit in record["results"]]
    return run


# ---------------------------------------------------------------- running ragqa

def ragqa(args: list[str], home: Path) -> tuple[str, float]:
    """Run the CLI (this interpreter's `-m ragqa`) with RAGQA_HOME=home: (stdout, seconds)."""
    env = {**os.environ, "RAGQA_HOME": str(home)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragqa", *args], env=env, text=True,
                          capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"ragqa {args[0]} failed with exit code {done.returncode}")
    return done.stdout, seconds


def add_distractors(home: Path, source_home: Path, source_collection: str) -> int:
    """Copy every chunk of `source_collection` in `source_home` (its vectors, texts and
    metadata: nothing is re-embedded) into the scifact collection of `home`. Returns how many
    papers that adds. Both must have been built by the same embedder."""
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder

    def store(folder: Path, name: str) -> Store:
        settings = load_settings({"RAGQA_HOME": str(folder), "RAGQA_ENV_FILE": "/nonexistent"})
        return Store(settings, name, make_encoder(settings))

    source, target = store(source_home, source_collection), store(home, COLLECTION)
    have = set(target.paper_states())
    added: set[str] = set()
    page, offset = 2000, 0
    while True:
        got = source.collection().get(include=["embeddings", "documents", "metadatas"],
                                      limit=page, offset=offset)
        if not got["ids"]:
            return len(added)
        offset += len(got["ids"])
        keep = [i for i, meta in enumerate(got["metadatas"]) if meta["paper_id"] not in have]
        if keep:
            target.collection().upsert(
                ids=[got["ids"][i] for i in keep], embeddings=got["embeddings"][keep],
                documents=[got["documents"][i] for i in keep],
                metadatas=[got["metadatas"][i] for i in keep])
            added.update(got["metadatas"][i]["paper_id"] for i in keep)


def run_benchmark(data: Path, home: Path, split: str) -> dict:
    corpus = data / "corpus.jsonl.gz"
    qrels = read_qrels(data / f"qrels_{split}.tsv")
    queries = read_queries(data / "queries.jsonl", split)
    judged = {qid: rel for qid, rel in qrels.items() if qid in queries}
    if len(judged) != len(qrels):
        sys.stderr.write(f"note: {len(qrels) - len(judged)} qrels queries are not in the "
                         f"{split} split and are ignored\n")

    log(f"ingesting {corpus} into {home} (collection {COLLECTION!r}) ...")
    out, ingest_s = ragqa(["ingest", str(corpus), "--collection", COLLECTION, "--quiet",
                           "--json"], home)
    ingest = json.loads(out)
    log(f"  {ingest['added']} added, {ingest['unchanged']} unchanged, {ingest['chunks']} chunks "
        f"in {ingest_s:.1f} s")
    run, search_s = search_all(home, judged, queries, split)
    return {
        "dataset": "scifact", "split": split, "queries": len(judged),
        "answered": sum(1 for qid in judged if run.get(qid)),
        "corpus": count_lines(corpus), "home": str(home),
        "metrics": {name: round(value, 4)
                    for name, value in mean_metrics(run, judged, (K_RETRIEVE,)).items()},
        "baselines_test_ndcg@10": BASELINES,
        "ingest": {"seconds": round(ingest_s, 1), "added": ingest["added"],
                   "unchanged": ingest["unchanged"], "chunks": ingest["chunks"],
                   "papers_total": ingest["papers_total"]},
        "search": {"seconds": round(search_s, 1),
                   "ms_per_query": round(1000 * search_s / max(len(judged), 1), 1)},
    }


def search_all(home: Path, judged: dict, queries: dict[str, str], split: str
               ) -> tuple[dict[str, list[str]], float]:
    with tempfile.TemporaryDirectory(prefix="scifact-queries-") as tmp:
        batch = Path(tmp) / f"queries_{split}.jsonl"
        batch.write_text("".join(json.dumps({"_id": qid, "text": queries[qid]}) + "\n"
                                 for qid in judged), encoding="utf-8")
        log(f"searching {len(judged)} {split} queries (k={K_RETRIEVE}) ...")
        out, search_s = ragqa(["search", "--batch", str(batch), "--json", "-k", str(K_RETRIEVE),
                               "--collection", COLLECTION], home)
    return parse_run(out), search_s


def with_distractors(data: Path, home: Path, split: str, source: Path, collection: str,
                     clean: dict) -> dict:
    """The same queries once the papers of another collection (mlconf abstracts) share the
    index: a copy of `home` gets them, then its BM25 snapshot is rebuilt by a no-op ingest."""
    qrels = read_qrels(data / f"qrels_{split}.tsv")
    queries = read_queries(data / "queries.jsonl", split)
    judged = {qid: rel for qid, rel in qrels.items() if qid in queries}
    with tempfile.TemporaryDirectory(prefix="scifact-distractors-") as tmp:
        mixed = Path(tmp) / "home"
        shutil.copytree(home, mixed)
        log(f"copying the {collection!r} collection of {source} in as distractors ...")
        added = add_distractors(mixed, source, collection)
        out, _ = ragqa(["ingest", str(data / "corpus.jsonl.gz"), "--collection", COLLECTION,
                        "--quiet", "--json"], mixed)
        run, _ = search_all(mixed, judged, queries, split)
    metrics = {name: round(value, 4)
               for name, value in mean_metrics(run, judged, (K_RETRIEVE,)).items()}
    return {"distractor_papers": added, "papers_total": json.loads(out)["papers_total"],
            "metrics": metrics,
            "ndcg@10_drop": round(clean["metrics"]["ndcg@10"] - metrics["ndcg@10"], 4)}


# ---------------------------------------------------------------- output

def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def print_table(result: dict) -> None:
    m = result["metrics"]
    print(f"SciFact {result['split']}: {result['queries']} queries, {result['corpus']} abstracts "
          f"(home {result['home']})")
    print(f"  {'metric':<12}{'ragqa':>8}")
    for name in ("ndcg@10", "recall@100", "mrr@10"):
        print(f"  {name:<12}{m[name]:>8.4f}")
    print("  published nDCG@10 (test split):")
    for name, value in BASELINES.items():
        print(f"    {name:<28}{value:.3f}")
    ingest, search = result["ingest"], result["search"]
    print(f"  ingest {ingest['seconds']:.1f} s ({ingest['added']} added, {ingest['unchanged']} "
          f"unchanged, {ingest['chunks']} chunks); search {search['seconds']:.1f} s "
          f"({search['ms_per_query']:.0f} ms/query incl. start-up)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="folder with the SciFact files (default: ../shared/data/scifact)")
    parser.add_argument("--home", type=Path, default=None,
                        help="RAGQA_HOME to ingest into and keep (default: a temporary one)")
    parser.add_argument("--split", choices=("test", "train"), default="test")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    parser.add_argument("--distractors", type=Path, default=None, metavar="HOME",
                        help="also measure with the papers of HOME's --distractor-collection "
                        "(default 'scale', see bench/scale_ingest.py) in the same index")
    parser.add_argument("--distractor-collection", default="scale")
    args = parser.parse_args(argv)

    data = args.data or DEFAULT_DATA / "scifact"
    if not (data / "corpus.jsonl.gz").is_file():
        print(f"SciFact data not found at {data}: skipping")
        return 0
    with tempfile.TemporaryDirectory(prefix="ragqa-scifact-") as tmp:
        home = args.home.resolve() if args.home else Path(tmp)
        home.mkdir(parents=True, exist_ok=True)
        result = run_benchmark(data, home, args.split)
        if args.distractors:
            result["with_distractors"] = with_distractors(
                data, home, args.split, args.distractors.resolve(), args.distractor_collection,
                result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
