"""Candidate English ML terms for ragqa/data/ml_glossary.tsv, from paper TITLES only.

Reads ../shared/data/mlconf/corpus.jsonl.gz (JSON lines with venue, year, title), keeps only the
venue/years in USED below (none of them is an evaluation slice), lower-cases the title words,
counts the 1-3-word n-grams that have no stop word at either end by document frequency, keeps
those with df >= MIN_DF, drops an n-gram contained in a longer kept n-gram whose df is at least
SUBSUME of its own, and prints the top TOP by df as `term<TAB>df`.

Usage: python3 bench/glossary/extract_terms.py [CORPUS] > bench/glossary/terms.tsv
Standard library only; titles only (no abstracts, no evaluation questions).
"""
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "mlconf" / "corpus.jsonl.gz"
USED = {
    "ijcai": range(2020, 2025),
    "naacl": (2021, 2022, 2024),
    "coling": (2020, 2022, 2025),
    "aistats": range(2020, 2026),
    "colm": (2024, 2025),
    "corl": range(2021, 2026),
    "uai": range(2019, 2025),
    "www": (2025,),
    "acl": (2021,),
}
MIN_DF = 8
SUBSUME = 0.8
TOP = 900
MAX_N = 3

# Function words only: generic content words ("towards", "via", "using", "based", "novel") stay
# in the list and the glossary author decides which to translate.
STOP_WORDS = """
a an the and or but nor of in on at to for from by with without into onto over under about
as is are be been being was were it its this that these those their our we you they he she
not no can do does did how what when where which who why whom whose vs versus than then
so if through beyond across between among against up down out off per
all any each every some such more most less least very too also only just both either neither
one two three own other others i ii iii iv part s t
"""
STOP = frozenset(STOP_WORDS.split())

WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def used(venue, year):
    return year in USED.get(venue, ())


def titles(path):
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            paper = json.loads(line)
            if used(paper.get("venue"), paper.get("year")):
                yield paper.get("title") or ""


def ngrams(title):
    words = WORD.findall(title.lower())
    for n in range(1, MAX_N + 1):
        for i in range(len(words) - n + 1):
            gram = words[i:i + n]
            if gram[0] in STOP or gram[-1] in STOP or gram[0].isdigit():
                continue
            yield " ".join(gram)


def document_frequency(path):
    df = Counter()
    for title in titles(path):
        df.update(set(ngrams(title)))
    return df


def contained(short, long):
    return f" {short} " in f" {long} "


def drop_subsumed(kept):
    """An n-gram that almost only occurs inside a longer kept one adds nothing."""
    longer = {n: [t for t in kept if t.count(" ") + 1 == n] for n in range(2, MAX_N + 1)}
    result = {}
    for term, df in kept.items():
        size = term.count(" ") + 1
        if any(contained(term, big) and kept[big] >= SUBSUME * df
               for n in range(size + 1, MAX_N + 1) for big in longer[n]):
            continue
        result[term] = df
    return result


def main(argv):
    path = argv[1] if len(argv) > 1 else CORPUS
    df = document_frequency(path)
    kept = drop_subsumed({t: c for t, c in df.items() if c >= MIN_DF})
    for term, count in sorted(kept.items(), key=lambda tc: (-tc[1], tc[0]))[:TOP]:
        print(f"{term}\t{count}")


if __name__ == "__main__":
    main(sys.argv)
