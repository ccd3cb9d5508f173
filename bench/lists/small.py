"""Lists in small and non-ML collections: "which papers ..." over 150 SciFact abstracts
(biomedical) and twelve tiny collections of 5-12 papers (SciFact and NeurIPS 2018), judged by a
helper who never saw ragqa's output (bench/lists/SMALL_SETS.md).

    python bench/lists/small.py --home DIR [--split report|calibrate|all]
    python bench/lists/small.py --home DIR --reference-papers 50   # another shrinkage
    python bench/lists/small.py --check        # every paper of each collection graded once

Reports, per set and split, the lists' recall, precision, their F1, the per-question success
(eval.py's `success`) and the abstention on absent topics, as eval.py does for the conference
slices. The questions' `split` was fixed before anything was measured: choose on `calibrate`,
quote `report`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from eval import Question, f1, question_scores, retriever_for, success, summarise  # noqa: E402

DATA = HERE.parents[1].parent / "shared" / "data"


def _records(source: Path, ids: set[str]) -> list[dict]:
    out = []
    with gzip.open(source, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if str(record["_id"]) in ids:
                out.append(record)
    return out


def collections(data: Path) -> dict[str, tuple[Path, list[str]]]:
    """Collection name -> (its source file, its paper ids)."""
    out = {"scifact150": (data / "scifact" / "corpus.jsonl.gz",
                          (HERE / "scifact150.ids").read_text().split())}
    for name, spec in json.loads((HERE / "tiny.collections.json").read_text()).items():
        source = data / ("scifact/corpus.jsonl.gz" if spec["data"] == "scifact"
                         else "mlconf/corpus.jsonl.gz")
        out[name] = (source, [str(i) for i in spec["ids"]])
    return out


def questions(set_name: str) -> list[tuple[str, str, Question]]:
    """(collection, split, question) of a set."""
    grades: dict[str, dict[str, int]] = {}
    for line in (HERE / f"{set_name}.qrels.tsv").read_text(encoding="utf-8").splitlines():
        qid, doc, grade = line.split("\t")
        grades.setdefault(qid, {})[doc] = int(grade)
    out = []
    for record in map(json.loads, (HERE / f"{set_name}.questions.jsonl").open()):
        question = Question(set_name, record["id"], record["question"], record["kind"],
                            grades.get(record["id"], {}))
        out.append((record.get("collection", set_name), record["split"], question))
    return out


def check(data: Path) -> int:
    """Every question has one grade for every paper of its collection, and no other."""
    specs = collections(data)
    wrong = 0
    for set_name in ("scifact150", "tiny"):
        lines = (HERE / f"{set_name}.qrels.tsv").read_text(encoding="utf-8").splitlines()
        pairs = [tuple(line.split("\t")[:2]) for line in lines]
        if len(pairs) != len(set(pairs)):
            wrong += 1
            print(f"{set_name}: a (question, paper) graded twice")
        for collection, _, question in questions(set_name):
            if set(question.grades) != set(specs[collection][1]):
                wrong += 1
                print(f"{question.qid}: graded papers differ from collection {collection}")
            if question.kind == "list" and not question.relevant:
                wrong += 1
                print(f"{question.qid}: a list question without a relevant paper")
    print("ok" if not wrong else f"{wrong} problems")
    return int(bool(wrong))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--home", type=Path)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--split", default="report", choices=["report", "calibrate", "all"])
    parser.add_argument("--reference-papers", type=int, default=None)
    parser.add_argument("--each", action="store_true", help="print every question's figures")
    args = parser.parse_args()
    if args.check:
        return check(args.data)
    if args.home is None:
        parser.error("--home is required")
    if args.reference_papers is not None:
        from ragqa.retrieval import signals
        signals.REFERENCE_PAPERS = args.reference_papers
    specs = collections(args.data)
    retrievers = {}
    results = {}
    for set_name in ("scifact150", "tiny"):
        rows = []
        for collection, split, question in questions(set_name):
            if args.split != "all" and split != args.split:
                continue
            if collection not in retrievers:
                source, ids = specs[collection]
                folder = args.home / "slices"
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{collection}.jsonl"
                if not path.is_file():
                    path.write_text("".join(json.dumps(r) + "\n"
                                            for r in _records(source, set(ids))))
                retrievers[collection] = retriever_for(args.home, f"small_{collection}", [path])
            listed = [h.paper.paper_id for h in retrievers[collection].search(
                question.text, sentences=False).hits]
            rows.append(question_scores(listed, question))
            if args.each:
                print(question.qid, question.kind, len(question.relevant), rows[-1],
                      file=sys.stderr)
        figures = summarise(rows)
        figures["f1"] = f1(figures)
        figures["success"] = round(success(rows), 3)
        results[set_name] = figures
    print(json.dumps({"split": args.split, "reference_papers": args.reference_papers,
                      "sets": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
