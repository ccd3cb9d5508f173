"""Which sentence splitter for abstracts (issue 46, item 3): every candidate library against
sentences people cut by hand.

Two labelled sets, neither written with any splitter:
- the answer sentences of the fact sets (bench/reading/facts*.jsonl): sentences helpers copied
  out of abstracts as the answer to a question; a splitter is right on one when it returns it
  whole (not broken inside, not run into the next);
- bench/understanding/sentences/gold.jsonl: 80 abstracts of mlconf (70 chosen for periods that
  may not end a sentence: "et al.", "e.g.", "Fig.", decimals, initials; 10 without), cut into
  sentences by a helper that never saw ragqa or any splitter's output. Split by
  eval.blind_half of the id: the choice is made on "calibrate", figures reported on "report".
  Measured: boundary precision and recall (a boundary is the character offset where a
  sentence starts), and abstracts split exactly right.

    python bench/understanding/sentence_splitters.py [--data DIR] [--json]

Candidates not installed are skipped (pip install pysbd sentencex nupunkt syntok blingfire);
"regex" is ragqa's splitter before issue 46 (one regular expression).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(BENCH / "lists"))

from eval import blind_half  # noqa: E402

DEFAULT_DATA = BENCH.parents[1] / "shared" / "data" / "mlconf"
GOLD = HERE / "sentences" / "gold.jsonl"
_REGEX = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$*τ])")


def splitters() -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {
        "regex (before)": lambda t: [s.strip() for s in _REGEX.split(t) if s.strip()]}
    try:
        from ragqa.text import split_sentences
        out["ragqa (now)"] = split_sentences
    except ImportError:
        pass
    try:
        import pysbd
        seg = pysbd.Segmenter(language="en", clean=False)
        out["pysbd"] = lambda t: [s.strip() for s in seg.segment(t) if s.strip()]
    except ImportError:
        pass
    try:
        from sentencex import segment
        out["sentencex"] = lambda t: [s.strip() for s in segment("en", t) if s.strip()]
    except ImportError:
        pass
    try:
        import nupunkt
        out["nupunkt"] = lambda t: [s.strip() for s in nupunkt.sent_tokenize(t) if s.strip()]
    except ImportError:
        pass
    try:
        import syntok.segmenter as syn

        def syntok_split(text: str) -> list[str]:
            sentences = []
            for paragraph in syn.analyze(text):
                for sentence in paragraph:
                    start = sentence[0].offset
                    end = sentence[-1].offset + len(sentence[-1].value)
                    sentences.append(text[start:end].strip())
            return [s for s in sentences if s]
        out["syntok"] = syntok_split
    except ImportError:
        pass
    try:
        import blingfire
        out["blingfire"] = lambda t: [s.strip() for s in blingfire.text_to_sentences(t)
                                      .split("\n") if s.strip()]
    except ImportError:
        pass
    return out


def starts(text: str, sentences: list[str]) -> set[int]:
    """The offsets in `text` where each sentence after the first starts (found in order)."""
    out, at = set(), 0
    for i, sentence in enumerate(sentences):
        found = text.find(sentence[:20], at)
        if found < 0:  # a splitter that rewrote the text: compare without spaces
            continue
        if i:
            out.add(found)
        at = found + 1
    return out


def answer_sentences(data: Path) -> list[tuple[str, str]]:
    """(abstract, a sentence helpers copied out of it) of every fact question."""
    wanted: dict[str, list[str]] = {}
    for path in sorted((BENCH / "reading").glob("facts*.jsonl")):
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            for sentence in row.get("answer_sentences", []):
                wanted.setdefault(row["paper_id"], []).append(sentence)
    texts = {}
    with gzip.open(data / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["_id"] in wanted:
                texts[row["_id"]] = row["text"]
    return [(texts[pid], s) for pid, ss in wanted.items() if pid in texts for s in ss
            if " ".join(s.split()) in " ".join(texts[pid].split())]


def measure(split, answers, gold) -> dict:
    norm = lambda s: " ".join(s.split())  # noqa: E731
    whole = [norm(s) in {norm(x) for x in split(text)} for text, s in answers]
    out = {"answer_sentences_whole": round(sum(whole) / len(whole), 3),
           "answer_sentences": len(whole)}
    for half in ("calibrate", "report"):
        rows = [g for g in gold if blind_half(g["id"]) == half]
        tp = fp = fn = exact = 0
        for g in rows:
            truth = starts(g["text"], g["sentences"])
            got = starts(g["text"], split(g["text"]))
            tp, fp, fn = tp + len(truth & got), fp + len(got - truth), fn + len(truth - got)
            exact += truth == got
        out[half] = {"abstracts": len(rows), "boundary_precision": round(tp / max(tp + fp, 1), 3),
                     "boundary_recall": round(tp / max(tp + fn, 1), 3),
                     "exact": round(exact / max(len(rows), 1), 3)}
    texts = [g["text"] for g in gold] * 5 or [text for text, _ in answers]
    start = time.perf_counter()
    for text in texts:
        split(text)
    out["ms_per_abstract"] = round((time.perf_counter() - start) * 1000 / len(texts), 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    answers = answer_sentences(args.data) if (args.data / "corpus.jsonl.gz").is_file() else []
    gold = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()] \
        if GOLD.is_file() else []
    texts = {}
    abstracts = GOLD.with_name("abstracts.jsonl")
    for row in map(json.loads, abstracts.read_text(encoding="utf-8").splitlines()
                   if abstracts.is_file() else []):
        texts[row["id"]] = row["text"]
    for g in gold:
        g["text"] = texts[g["id"]]
    report = {name: measure(split, answers, gold) for name, split in splitters().items()}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{'splitter':16} answer sentences whole | calibrate P / R / exact | "
          f"report P / R / exact | ms/abstract")
    for name, r in report.items():
        c, p = r["calibrate"], r["report"]
        print(f"{name:16} {r['answer_sentences_whole']:.3f} of {r['answer_sentences']:3} | "
              f"{c['boundary_precision']:.3f} / {c['boundary_recall']:.3f} / {c['exact']:.3f} | "
              f"{p['boundary_precision']:.3f} / {p['boundary_recall']:.3f} / {p['exact']:.3f} | "
              f"{r['ms_per_abstract']:.2f}")
    print("median ms:", statistics.median(r["ms_per_abstract"] for r in report.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
