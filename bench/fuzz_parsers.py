"""A time-boxed fuzz run of the seeds-format parser and the citation parser (issue 7, case 9).

Hypothesis mutates the two real seed files (`seeds/*.txt`) byte by byte and block by block
(inserted fragments: escape sequences, LaTeX, Markdown, URLs, brackets, CR/CRLF/NUL, BOMs,
UTF-16, invalid UTF-8; deleted, duplicated, swapped and truncated ranges) and feeds each result
to `ragqa.corpus.read_sources`; it builds LLM-like answers from the seeds' sentences with
mutated citation groups and feeds them to `ragqa.answer.check_citations`. What must hold:

seeds parser  only `CorpusError` is raised; every paper has a non-empty text and title, its id is
              `text_id(text)`, ids are unique, sources are `NAME#1..n`, parsing the same bytes
              again gives the same ids; no example takes longer than `--slow` seconds.
citations     no exception; citations are numbered 1..k, each names a source, every `[n]` left in
              the text names a listed citation and every listed one is used; checking the checked
              text again (with the cited sources) changes nothing.

Batches of examples alternate between the two targets, each batch under a fresh Hypothesis seed,
until the time is up. A failure is shrunk by Hypothesis, printed, and written to
`bench/results/fuzz_failures.txt` (removed by a run without failures); the run goes on. The last
line is a JSON summary; the exit code is 1 when anything failed.

Run it (no data or network needed):

    /tmp/venv/bin/python bench/fuzz_parsers.py                 # 60 s, both targets
    /tmp/venv/bin/python bench/fuzz_parsers.py --seconds 300 --target seeds
"""

from __future__ import annotations

import argparse
import codecs
import json
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ragqa.answer import CITATION, check_citations, expand_citation
from ragqa.corpus import CorpusError, Paper, read_sources, split_sentences, text_id
from ragqa.resources import seed_files
from ragqa.retrieve import Hit

RESULTS = Path(__file__).resolve().parent / "results"
SEEDS = [path.read_bytes() for path in seed_files()]
SENTENCES = [s for data in SEEDS for s in split_sentences(data.decode("utf-8"))]

FRAGMENTS = [
    b"\x1b[2J", b"\x1b]8;;https://x\x1b\\", b"\x9b", "\u202e".encode(), b"\x00", b"\r", b"\r\n",
    b"\n", b"\n\n", b"\n \n\t\n", b"\t", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, b"\xff\xfe\x00",
    b"\xc3", b"\xe2\x80", "é".encode(), "τ-".encode(), "论文列表".encode(), b"ICML 2026 Papers",
    b"We propose ", b"we introduce ", b"This paper presents ", b" called ", b"**", b"__", b"`",
    b"$\\textbf{", b"}$", b"$", b"\\emph{", b"{", b"}", b"(", b")", b"(ABC)", b"A$^2$SG",
    b"https://github.com/a/b", b"https://x.org/(", b"[1]", b"[", b"]", b". ", b", ", b": ",
    b"(" * 50, b"We propose (" + b"A" * 500, b"\xef\xbf\xbd", "\u2028".encode(), b"\x0c",
]


@dataclass
class Target:
    name: str
    test: Callable[[int, int], None]  # (hypothesis seed, examples) -> raises on a failure
    examples: int = 0
    batches: int = 0
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0


# ---------------------------------------------------------------- seeds parser

@st.composite
def mutated_seed(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["insert", "insert", "delete", "duplicate", "swap", "flip",
                                   "truncate", "newlines", "utf16"]))
        i = draw(st.integers(0, len(data)))
        j = min(len(data), i + draw(st.integers(0, 400)))
        if op == "insert":
            piece = draw(st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=12),
                                   st.text(max_size=12).map(
                                       lambda t: t.encode("utf-8", "surrogatepass"))))
            data[i:i] = piece * draw(st.integers(1, 3))
        elif op == "delete":
            del data[i:j]
        elif op == "duplicate":
            data[i:i] = data[i:j]
        elif op == "swap" and j < len(data):
            k = min(len(data), j + (j - i))
            data[i:k] = data[j:k] + data[i:j]
        elif op == "flip" and data:
            data[min(i, len(data) - 1)] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[i:]
        elif op == "newlines":
            data = bytearray(bytes(data).replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r"]))))
        elif op == "utf16":
            text = bytes(data).decode("utf-8", "replace")
            data = bytearray(codecs.BOM_UTF16_LE + text.encode("utf-16-le", "surrogatepass"))
    return bytes(data)


def check_seeds_file(data: bytes, folder: Path, slow: float) -> float:
    path = folder / "fuzz.txt"
    path.write_bytes(data)
    started = time.monotonic()
    try:
        first = read_sources([path])
    except CorpusError as exc:
        assert exc.path == str(path), exc.path
        return time.monotonic() - started
    elapsed = time.monotonic() - started
    assert elapsed < slow, f"read_sources took {elapsed:.1f} s on {len(data)} bytes"
    again = read_sources([path])
    papers = first.papers
    assert [p.paper_id for p in papers] == [p.paper_id for p in again.papers]
    assert len({p.paper_id for p in papers}) == len(papers)
    assert [p.source for p in papers] == [f"fuzz.txt#{i}" for i in range(1, len(papers) + 1)]
    for paper in papers:
        assert paper.text.strip() and paper.title.strip(), paper
        assert paper.paper_id == text_id(paper.text)
        assert "\r" not in paper.text and "\ufeff" not in paper.text
        json.dumps([paper.title, paper.text, paper.extra], allow_nan=False)
    return elapsed


# ---------------------------------------------------------------- citation parser

def hits(n: int) -> list[Hit]:
    return [Hit(i, 0.0, 0.0, 0.0, paper=Paper(f"p{i + 1}", f"T{i + 1}", "Text.", f"f#{i + 1}"))
            for i in range(n)]


_NUMBER = st.one_of(st.integers(0, 20).map(str), st.integers(0, 10**9).map(str),
                    st.integers(1, 6).map(lambda k: "9" * (k * 1000)),
                    st.integers(0, 20).map(lambda n: "0" * 8 + str(n)))
_GROUP = st.tuples(
    st.lists(st.one_of(_NUMBER, st.tuples(_NUMBER, st.sampled_from(["-", "–", " - "]), _NUMBER)
                       .map("".join)), min_size=1, max_size=5),
    st.sampled_from([", ", ",", "; ", " ,  "]), st.sampled_from(["", " "]),
).map(lambda t: "[" + t[2] + t[1].join(t[0]) + t[2] + "]")


@st.composite
def llm_answer(draw) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["sentence", "group", "group", "noise", "nest"]))
        if kind == "sentence":
            parts.append(draw(st.sampled_from(SENTENCES)) + draw(st.sampled_from([" ", "", "\n",
                                                                                 "\n\n- "])))
        elif kind == "group":
            parts.append(draw(st.sampled_from(["", " ", "  "])) + draw(_GROUP))
        elif kind == "nest":
            inner, outer = draw(_GROUP), draw(_GROUP)
            cut = draw(st.integers(1, len(outer) - 1))
            parts.append(outer[:cut] + inner + outer[cut:])
        else:
            parts.append(draw(st.one_of(st.sampled_from(["[", "]", "[[", "]]", "-", ",", "[ ",
                                                         "1]", "[2", ". ", "τ"]),
                                        st.text(max_size=8))))
    return "".join(parts)


def check_answer(text: str, n: int, slow: float) -> float:
    started = time.monotonic()
    checked = check_citations(text, hits(n))
    elapsed = time.monotonic() - started
    assert elapsed < slow, f"check_citations took {elapsed:.1f} s on {len(text)} characters"
    listed = [c.n for c in checked.citations]
    assert listed == list(range(1, len(listed) + 1)), listed
    used: set[int] = set()
    for match in CITATION.finditer(checked.text):
        for number in expand_citation(match.group(1)):
            assert 1 <= number <= len(listed), (number, checked.text)
            used.add(number)
    assert used == set(listed), (used, listed)
    sources = [hits(n)[int(c.paper_id[1:]) - 1] for c in checked.citations]
    again = check_citations(checked.text, sources)
    assert (again.text, again.dropped) == (checked.text, 0), (checked.text, again.text)
    return elapsed


# ---------------------------------------------------------------- the run

def make_targets(slow: float, folder: Path) -> dict[str, Target]:
    targets: dict[str, Target] = {}
    common = settings(deadline=None, database=None, print_blob=False,
                      suppress_health_check=list(HealthCheck))

    def seeds_test(hypothesis_seed: int, examples: int) -> None:
        target = targets["seeds"]

        @seed(hypothesis_seed)
        @settings(common, max_examples=examples)
        @given(data=mutated_seed())
        def run(data: bytes) -> None:
            target.examples += 1
            target.slowest = max(target.slowest, check_seeds_file(data, folder, slow))

        run()

    def citations_test(hypothesis_seed: int, examples: int) -> None:
        target = targets["citations"]

        @seed(hypothesis_seed)
        @settings(common, max_examples=examples)
        @given(text=llm_answer(), n=st.integers(0, 15))
        def run(text: str, n: int) -> None:
            target.examples += 1
            target.slowest = max(target.slowest, check_answer(text, n, slow))

        run()

    targets["seeds"] = Target("seeds", seeds_test)
    targets["citations"] = Target("citations", citations_test)
    return targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--target", choices=["all", "seeds", "citations"], default="all")
    parser.add_argument("--batch", type=int, default=100, help="examples per Hypothesis run")
    parser.add_argument("--slow", type=float, default=5.0,
                        help="an example slower than this is a failure (a hang)")
    parser.add_argument("--seed", type=int, default=None, help="first Hypothesis seed")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        targets = make_targets(args.slow, Path(tmp))
        chosen = list(targets.values()) if args.target == "all" else [targets[args.target]]
        started = time.monotonic()
        deadline = started + args.seconds
        turn = 0
        while time.monotonic() < deadline:
            target = chosen[turn % len(chosen)]
            turn += 1
            hypothesis_seed = rng.getrandbits(32)
            target.batches += 1
            try:
                target.test(hypothesis_seed, args.batch)
            except Exception as exc:  # noqa: BLE001 - a finding: report it, keep fuzzing
                report = (f"[{target.name}] seed {hypothesis_seed}: {type(exc).__name__}: "
                          f"{str(exc)[:2000]}\n{''.join(traceback.format_exception(exc))}")
                target.failures.append(report)
                sys.stderr.write(report + "\n")
        elapsed = time.monotonic() - started

    failures = [f for t in chosen for f in t.failures]
    report = RESULTS / "fuzz_failures.txt"
    if failures:
        RESULTS.mkdir(exist_ok=True)
        report.write_text("\n\n".join(failures), encoding="utf-8")
    else:
        report.unlink(missing_ok=True)  # an earlier run's findings, fixed since
    summary = {"seconds": round(elapsed, 1), "targets": {
        t.name: {"examples": t.examples, "batches": t.batches, "failures": len(t.failures),
                 "examples_per_second": round(t.examples / max(elapsed, 1e-9), 1),
                 "slowest_example_seconds": round(t.slowest, 3)} for t in chosen}}
    for t in chosen:
        print(f"{t.name}: {t.examples} examples in {t.batches} batches, "
              f"{len(t.failures)} failures, slowest example {t.slowest:.3f} s")
    print(json.dumps(summary))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
