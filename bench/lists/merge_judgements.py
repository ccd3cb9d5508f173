"""Merge two judges' grades per question into qrels; list the disagreements for a third judge.

    python bench/lists/merge_judgements.py --judgements DIR --pools POOLS --questions Q.jsonl \
        --out SLICE.qrels.tsv [--third DIR3] [--disagreements D.md]

DIR holds one folder per judge, each with QID.tsv files (`paper-id<TAB>grade`). Every question
must have exactly two judges. Where they agree, that grade is final; where they differ, the
third judge's grade (DIR3/QID.tsv, any judge folder under DIR3) settles it. Without it, the
disagreements are written to D.md for the third judge (each question with the papers in
dispute, as in the pools), and the qrels are not written. Agreement (exact, and Cohen's kappa
over relevant-or-not) is printed. `--single`: one judge per question, whose grades are final
(the second blind list set, BLIND_LISTS2.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_grades(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            pid, grade = line.strip().split("\t")
            out[pid] = int(grade)
    return out


def pool_sections(path: Path) -> dict[str, str]:
    """Paper id -> its '## id' section (title and abstract) of a pool file."""
    out = {}
    for section in path.read_text(encoding="utf-8").split("\n## ")[1:]:
        out[section.split("\n", 1)[0].strip()] = "## " + section
    return out


def kappa(pairs: list[tuple[int, int]]) -> float:
    """Cohen's kappa of two judges on relevant (grade 2) or not."""
    n = len(pairs)
    if not n:
        return float("nan")
    a = [x >= 2 for x, _ in pairs]
    b = [y >= 2 for _, y in pairs]
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return (observed - expected) / (1 - expected) if expected < 1 else 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judgements", type=Path, required=True)
    parser.add_argument("--pools", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--third", type=Path, default=None)
    parser.add_argument("--disagreements", type=Path, default=None)
    parser.add_argument("--single", action="store_true",
                        help="one judge per question (a blind set judged so): its grades are final")
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.questions.open(encoding="utf-8")]
    third: dict[str, dict[str, int]] = {}
    if args.third:
        for path in args.third.glob("*/*.tsv"):
            third.setdefault(path.stem, {}).update(read_grades(path))
    qrels, open_pairs, pairs = [], [], []
    for q in questions:
        qid = q["id"]
        pool = (args.pools / f"{qid}.ids").read_text(encoding="utf-8").split()
        judged = [read_grades(p) for p in sorted(args.judgements.glob(f"*/{qid}.tsv"))]
        if len(judged) != (1 if args.single else 2):
            print(f"{qid}: {len(judged)} judges, need {1 if args.single else 2}",
                  file=sys.stderr)
            return 2
        for grades in judged:
            if set(grades) != set(pool):
                print(f"{qid}: a judge graded {len(grades)} papers of a pool of {len(pool)}",
                      file=sys.stderr)
                return 2
        if args.single:
            qrels.extend((qid, pid, judged[0][pid]) for pid in pool)
            continue
        for pid in pool:
            first, second = judged[0][pid], judged[1][pid]
            pairs.append((first, second))
            if first == second:
                qrels.append((qid, pid, first))
            elif pid in third.get(qid, {}):
                qrels.append((qid, pid, third[qid][pid]))
            else:
                open_pairs.append((q, pid))
    exact = sum(a == b for a, b in pairs) / len(pairs) if pairs else float("nan")
    print(f"{len(pairs)} judged pairs; exact agreement {exact:.3f}; kappa (relevant or not) "
          f"{kappa(pairs):.3f}; {len(open_pairs)} disagreements unsettled")
    if open_pairs:
        if args.disagreements:
            by_question: dict[str, list[str]] = {}
            for q, pid in open_pairs:
                by_question.setdefault(q["id"], []).append(pid)
            lines = []
            for qid, pids in by_question.items():
                question = next(q for q in questions if q["id"] == qid)["question"]
                sections = pool_sections(args.pools / f"{qid}.md")
                lines.append(f"# {qid}: {question}\n")
                lines.extend(sections[pid] for pid in pids)
            args.disagreements.write_text("\n".join(lines), encoding="utf-8")
        return 1
    with args.out.open("w", encoding="utf-8") as out:
        for qid, pid, grade in qrels:
            out.write(f"{qid}\t{pid}\t{grade}\n")
    print(f"wrote {len(qrels)} judgements to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
