"""Pool the papers to judge for the "which papers" dev set, the way TREC builds its pools.

For each question: the top 50 of BM25, of dense retrieval and of the hybrid ranking (ragqa's
score fusion, no cut), the top 30 of the list decision's first ranking (sub-queries, before
pseudo-relevance feedback existed), plus up to 30 papers whose title or abstract holds one of
the question writer's keywords (so that a relevant paper that no retriever ranks high can still
be judged). Questions
on absent topics pool the top 20 of each retriever only. The pool of each question is written as
a Markdown file for the judges, in an order that says nothing about rank.

    python bench/lists/pool.py --home DIR --slice nips2018 --corpus SLICE.jsonl \
        --questions bench/lists/nips2018.questions.jsonl --out POOLS_DIR

DIR is a RAGQA_HOME; the slice is ingested into the collection named after it (incremental).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

DEPTH = 50
ABSENT_DEPTH = 20
KEYWORD_EXTRA = 30


def retriever_for(home: Path, collection: str, corpus: Path):
    from ragqa.config import load_settings
    from ragqa.index.ingest import ingest_paths
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, collection, make_encoder(settings))
    ingest_paths(store, [corpus])
    return Retriever(store)


def pool(retriever, question: str, keywords: list[str], depth: int,
         papers: list[dict], keyword_pool: bool = True) -> list[str]:
    from ragqa.retrieval.fitted import CUT_FOR_CLAIMS, LIST_MODEL
    from ragqa.retrieval.question import topic_of

    lex = retriever.lexical
    bm25 = [lex.papers_by_index([i])[0].paper_id for i, _ in lex.search(question, depth)]
    vector = retriever.store.encoder.embed([topic_of(question)])[0]
    dense: list[str] = []
    for _, pid, _ in retriever.store.query(vector, depth * 3):
        if pid not in dense:
            dense.append(pid)
    dense = dense[:depth]
    # ragqa's hybrid ranking as it was (score fusion), and the sub-query ranking of the list
    # decision (its top 30), so that neither is judged on a pool the other built.
    hybrid = [h.paper.paper_id for h in retriever.search(
        question, k=depth, cut=False, sentences=False, rule=CUT_FOR_CLAIMS).hits]
    listing = [h.paper.paper_id for h in retriever.search(
        question, k=min(depth, 30), cut=False, sentences=False, rule=LIST_MODEL).hits]
    found = dict.fromkeys(bm25 + dense + hybrid + listing)
    if keywords and keyword_pool:
        scored = []
        for p in papers:
            text = f"{p['title']} {p['text']}".lower()
            hits = sum(k.lower() in text for k in keywords)
            if hits and p["_id"] not in found:
                scored.append((-hits, p["_id"]))
        for _, pid in sorted(scored)[:KEYWORD_EXTRA]:
            found[pid] = None
    return list(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--slice", required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=DEPTH,
                        help="per retriever (30 for the blind set of issue 45: 3-12 papers a "
                        "question)")
    args = parser.parse_args()
    papers = [json.loads(line) for line in args.corpus.open(encoding="utf-8")]
    by_id = {p["_id"]: p for p in papers}
    retriever = retriever_for(args.home, args.slice, args.corpus)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for q in map(json.loads, args.questions.open(encoding="utf-8")):
        depth = ABSENT_DEPTH if q["kind"] == "absent" else args.depth
        ids = pool(retriever, q["question"], q.get("keywords", []), depth, papers,
                   keyword_pool=q["kind"] != "absent")
        # Judges see the pool in a fixed order unrelated to rank.
        ids.sort(key=lambda pid: hashlib.sha256(f"{q['id']}{pid}".encode()).hexdigest())
        lines = [f"# {q['id']}: {q['question']}\n", f"{len(ids)} papers to judge.\n"]
        for pid in ids:
            p = by_id[pid]
            lines.append(f"## {pid}\n**{p['title']}**\n\n{p['text'].strip()}\n")
        (args.out / f"{q['id']}.md").write_text("\n".join(lines), encoding="utf-8")
        (args.out / f"{q['id']}.ids").write_text("\n".join(ids) + "\n", encoding="utf-8")
        sizes[q["id"]] = len(ids)
    print(json.dumps(sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
