"""Check bench/reading/nips2018.json against the NeurIPS 2018 slice of ../shared/data/mlconf.

- every paper id is a paper of the slice (venue "nips", year 2018, as bench/lists/eval.py selects
  it), and a fact's title is that paper's title;
- a fact's phrase occurs verbatim in its paper's title + abstract, and is plain text (no LaTeX or
  Markdown marks, so ragqa's normalised quote can hold it as written);
- a near miss's absent terms occur in no abstract of the slice, except the papers its `note`
  names (a mention in passing, said so in the note);
- a near hit's, a chat turn's and a summary's papers exist.

    python bench/reading/check_nips2018.py [--data ../shared/data/mlconf] [--show]

`--show` prints, for each near miss, the abstracts that hold each term (to write the note).
Exit 1 with one line per problem when anything fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# ../shared/data/mlconf of the checkout, or of a folder above it (a git worktree under /work/wt/).
DEFAULT_DATA = next((p / "shared" / "data" / "mlconf" for p in HERE.parents
                     if (p / "shared" / "data" / "mlconf").is_dir()),
                    HERE.parents[2] / "shared" / "data" / "mlconf")
VENUE, YEAR = "nips", 2018
PLAIN = re.compile(r"[$\\*_`{}]")


def load_slice(data: Path) -> dict[str, dict]:
    papers = {}
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as src:
        for line in src:
            record = json.loads(line)
            if record["venue"] == VENUE and record["year"] == YEAR:
                papers[record["_id"]] = record
    return papers


def term_pattern(term: str) -> re.Pattern:
    """A term matches at the start of a word, case-insensitively ('BERT' not in 'Hilbert')."""
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(term), re.IGNORECASE)


def holders(papers: dict[str, dict], term: str) -> list[str]:
    pattern = term_pattern(term)
    return [pid for pid, p in papers.items() if pattern.search(p["title"] + " " + p["text"])]


def check(data: dict, papers: dict[str, dict], show: bool = False) -> list[str]:
    problems = []

    def known(pid: str, where: str) -> bool:
        if pid not in papers:
            problems.append(f"{where}: {pid} is not a paper of the slice")
            return False
        return True

    for i, fact in enumerate(data["facts"]):
        where = f"fact {i + 1} ({fact['question']})"
        if not known(fact["paper_id"], where):
            continue
        paper = papers[fact["paper_id"]]
        if fact["title"] != paper["title"]:
            problems.append(f"{where}: title is not {paper['title']!r}")
        if fact["phrase"] not in paper["title"] + " " + paper["text"]:
            problems.append(f"{where}: {fact['phrase']!r} is not in the abstract")
        if PLAIN.search(fact["phrase"]):
            problems.append(f"{where}: {fact['phrase']!r} holds markup")
    for miss in data["near_misses"]:
        allowed = set(re.findall(r"nips2018-\d+", miss.get("note", "")))
        for term in miss["absent_terms"]:
            found = holders(papers, term)
            if show and found:
                print(f"{miss['question']} / {term!r}: {', '.join(found)}")
            if set(found) - allowed:
                problems.append(f"near miss {miss['question']!r}: {term!r} occurs in "
                                f"{', '.join(sorted(set(found) - allowed))}")
    for hit in data["near_hits"]:
        for pid in hit["paper_ids"]:
            known(pid, f"near hit {hit['question']!r}")
    for c, chat in enumerate(data["chats"]):
        for t, turn in enumerate(chat):
            for pid in turn["cites_any"]:
                known(pid, f"chat {c + 1} turn {t + 1}")
    for summary in data["summaries"]:
        for pid in summary["paper_ids"]:
            known(pid, f"summary {summary['topic']!r}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    corpus = args.data / "corpus.jsonl.gz"
    if not corpus.is_file():
        print(f"error: no {corpus}", file=sys.stderr)
        return 2
    data = json.loads((HERE / "nips2018.json").read_text(encoding="utf-8"))
    papers = load_slice(args.data)
    problems = check(data, papers, args.show)
    for problem in problems:
        print(problem)
    counts = {k: len(data[k]) for k in ("facts", "near_misses", "near_hits", "chats", "summaries")}
    print(f"{len(papers)} papers; {counts}; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
