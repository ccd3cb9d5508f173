"""The ML terms of several words that paper titles write (ragqa/data/ml_phrases.tsv): what
the near-miss rule for terms (retrieval/decide.py, names_absent_term) knows as one subject,
"batch normalization" or "object detection", rather than two words that happen to stand side
by side in a question.

Reads the TITLES of ../shared/data/mlconf/corpus.jsonl.gz, leaving out every venue and year a
benchmark reads (bench/lists/eval.py's slices, which the blind chat, near-miss, fact and list
sets are written on) and the two slices held out for independent evaluation (ICML 2019, COLM
2025). A candidate is a run of 2 to MAX_WORDS content words side by side in a title (no
punctuation mark but a hyphen, no stop word between them: index/lexical.py, compound_runs),
counted once a title. A candidate is written, as its most frequent wording with its count,
when at least MIN_TITLES titles write it and it is at least MIN_SHARE of the titles with its
rarest word: a term, not a common word beside any other ("using kernel", "learning label").
The long forms of ragqa/data/ml_acronyms.tsv follow. No term is made only of the COMMON_WORDS
words most titles write ("deep learning", "efficient algorithms": what many papers do without
naming it, so that a collection not writing it need not lack it).
Titles only: no abstract, no question of a benchmark.

    python bench/glossary/title_phrases.py [--corpus PATH] [--min-titles N] [--min-share F]
        [--common-words K] [--all-slices] > ragqa/data/ml_phrases.tsv
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "lists"))

CORPUS = ROOT.parent / "shared" / "data" / "mlconf" / "corpus.jsonl.gz"
HELD_OUT = {("icml", 2019), ("colm", 2025)}
MAX_WORDS = 4
# Set before measuring; on the near-miss rounds' dev halves (bench/reading/term_absence.py,
# docs/benchmarks.md "Session 38") 2-3 titles and shares of 0.02-0.1 catch 14-16 more near
# misses and silence 0-2 real list topics and 1-3 controls; --all-slices catches 6-8 more
# and silences 5-8 more real topics. COMMON_WORDS changes nothing there (0, 50, 100); it
# keeps "deep learning for speech" from being a near miss over the seeds.
MIN_TITLES = 3
MIN_SHARE = 0.05
COMMON_WORDS = 100


def benchmark_slices() -> set[tuple[str, int]]:
    import eval as bench_lists  # bench/lists/eval.py

    slices = set(HELD_OUT)
    for table in (bench_lists.SLICES, bench_lists.MORE_SLICES, bench_lists.BLIND_SLICES,
                  bench_lists.BLIND2_SLICES, bench_lists.BLIND3_SLICES,
                  bench_lists.BLIND4_SLICES):
        slices |= set(table.values())
    return slices


def title_words(title: str) -> tuple[set[str], dict[str, str]]:
    """A title's terms, and its candidates: each run of 2 to MAX_WORDS content words side by
    side (lexical.compound_runs) as its stems joined by spaces -> its wording (lower case)."""
    from ragqa.index import lexical
    from ragqa.retrieval.decide import TERM_BREAKS

    words: set[str] = set()
    found: dict[str, str] = {}
    for run in lexical.compound_runs(title, TERM_BREAKS):
        words.update(stem for _, stem in run)
        for width in range(2, MAX_WORDS + 1):
            for i in range(len(run) - width + 1):
                part = run[i:i + width]
                found.setdefault(" ".join(s for _, s in part), " ".join(w for w, _ in part).lower())
    return words, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--min-titles", type=int, default=MIN_TITLES)
    parser.add_argument("--min-share", type=float, default=MIN_SHARE)
    parser.add_argument("--common-words", type=int, default=COMMON_WORDS)
    parser.add_argument("--all-slices", action="store_true",
                        help="read the slices benchmarks read too (the held-out ones never)")
    args = parser.parse_args()
    if not args.corpus.is_file():
        print(f"error: no corpus at {args.corpus}", file=sys.stderr)
        return 2
    skipped = HELD_OUT if args.all_slices else benchmark_slices()
    titles: Counter = Counter()
    word_titles: Counter = Counter()
    wordings: dict[str, Counter] = defaultdict(Counter)
    read = 0
    with gzip.open(args.corpus, "rt", encoding="utf-8") as lines:
        for line in lines:
            paper = json.loads(line)
            if (paper["venue"], paper["year"]) in skipped:
                continue
            read += 1
            words, found = title_words(paper["title"])
            word_titles.update(words)
            for key, wording in found.items():
                titles[key] += 1
                wordings[key][wording] += 1
    common = {w for w, _ in word_titles.most_common(args.common_words)}
    kept = sorted((key for key, n in titles.items() if n >= args.min_titles
                   and n >= args.min_share * min(word_titles[w] for w in key.split(" "))
                   and not set(key.split(" ")) <= common),
                  key=lambda k: (-titles[k], k))
    print("# ml_phrases.tsv: terms of several words that ML paper titles write, one a line:")
    print("# `wording<TAB>titles that write it`. Built by bench/glossary/title_phrases.py")
    print(f"# --min-titles {args.min_titles} --min-share {args.min_share}"
          f" --common-words {args.common_words}"
          f"{' --all-slices' if args.all_slices else ''} from the titles of {read:,} papers")
    print("# of ../shared/data/mlconf (never the held-out ICML 2019 and COLM 2025"
          f"{'' if args.all_slices else ', nor a slice a benchmark reads'}).")
    print("# After them, the long forms of ragqa/data/ml_acronyms.tsv. None is made only of")
    print(f"# the {args.common_words} words most titles write (\"deep learning\", "
          "\"efficient algorithms\").")
    print("# The near-miss rule for terms (ragqa/retrieval/decide.py, names_absent_term) reads")
    print("# a question's run of these words as one subject.")
    for key in kept:
        print(f"{wordings[key].most_common(1)[0][0]}\t{titles[key]}")
    # The abbreviations' long forms are terms whatever the titles' count, unless common words
    from ragqa.index import lexical

    for _short, long_forms in sorted(lexical.long_forms().items()):
        for long_form in long_forms:
            key = " ".join(lexical.terms(long_form.replace("-", " ")))
            if " " in key and key not in kept and not set(key.split(" ")) <= common:
                kept.append(key)
                print(f"{long_form.lower()}\t{titles[key]}")
    print(f"{len(kept)} phrases from {read} titles and the abbreviations", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
