"""A time-boxed fuzz run of the source parsers and the citation parser (issue 7, case 9;
issue 17 for the arXiv, OpenReview and BibTeX readers).

Hypothesis mutates the two real seed files (`seeds/*.txt`) byte by byte and block by block
(inserted fragments: escape sequences, LaTeX, Markdown, URLs, brackets, CR/CRLF/NUL, BOMs,
UTF-16, invalid UTF-8; deleted, duplicated, swapped and truncated ranges) and feeds each result
to `ragqa.sources.read_sources`; it builds LLM-like answers from the seeds' sentences with
mutated citation groups and feeds them to `ragqa.answering.answer.check_citations`. What must hold:

seeds parser  only `CorpusError` is raised; every paper has a non-empty text and title, its id is
              `text_id(text)`, ids are unique, sources are `NAME#1..n`, parsing the same bytes
              again gives the same ids; no example takes longer than `--slow` seconds.
arxiv, openreview, bibtex
              the fixtures of tests/fixtures/sources/ with fields replaced by JSON of any type
              and then mutated byte by byte, read with --skip-bad: only `CorpusError` (for the
              file); without --skip-bad the first skipped record's error, or the same papers;
              every paper has a text and a title; ids unique; the papers' BibTeX export
              (`ragqa.sources.export.to_bibtex`) parses back with bibtexparser, every entry.
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

from ragqa.answering.answer import CITATION, check_citations, expand_citation
from ragqa.errors import CorpusError
from ragqa.resources import seed_files
from ragqa.retrieval.types import Hit
from ragqa.sources import read_sources
from ragqa.sources.export import to_bibtex
from ragqa.sources.paper import Paper, text_id
from ragqa.sources.plain import read_text as _read_text
from ragqa.text import split_sentences

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
    parsed: int = 0  # examples that read without error (the export check ran on them)


# ---------------------------------------------------------------- seeds parser

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sources"
ARXIV = [json.loads(line) for line in (FIXTURES / "arxiv_slice.jsonl").read_text().splitlines()]
NOTES = json.loads((FIXTURES / "openreview_notes.json").read_text())
BIBS = [(FIXTURES / name).read_bytes() for name in ("zotero.bib", "bad.bib")]
BIB_FRAGMENTS = [b"@string{x = {y}}", b"@", b"@article{", b"abstract = {", b"crossref = {",
                 b"month = jan,", b'{\\"o}', b"\\&", b"%", b"#", b"x #", b"}", b"{", b'"',
                 b"=", b",", b"\\", b"and", b" and ", b"{\\", b"\\frac{", b"$", b"~"]
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) |
    st.text(max_size=30) | st.sampled_from(["", " ", "2023", "cs.CL", "$\\x$", "{\\\"o}"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["value", "name", "created", "version", "x"]), inner, max_size=3),
    max_leaves=8)


@st.composite
def mutated_record(draw, records: list[dict]) -> dict:
    """A fixture record with some fields (top-level or under `content`) replaced or removed."""
    record = json.loads(json.dumps(draw(st.sampled_from(records))))
    for _ in range(draw(st.integers(0, 4))):
        where = record["content"] if "content" in record and draw(st.booleans()) else record
        if not isinstance(where, dict) or not where:
            continue
        key = draw(st.sampled_from(sorted(where)))
        if draw(st.booleans()):
            where[key] = draw(JSON_VALUE)
        else:
            del where[key]
    return record


@st.composite
def arxiv_file(draw) -> bytes:
    records = draw(st.lists(mutated_record(ARXIV), min_size=1, max_size=5))
    data = "\n".join(json.dumps(r) for r in records).encode()
    # half of the files keep valid JSON, so that the readers and the export see their fields
    return draw(mutated_bytes([data])) if draw(st.booleans()) else data


@st.composite
def openreview_file(draw) -> bytes:
    notes = draw(st.lists(mutated_record(NOTES), min_size=1, max_size=4))
    data = json.dumps(notes, indent=draw(st.sampled_from([None, 2]))).encode()
    return draw(mutated_bytes([data])) if draw(st.booleans()) else data


@st.composite
def bibtex_file(draw) -> bytes:
    return draw(mutated_bytes(BIBS, BIB_FRAGMENTS))


@st.composite
def mutated_seed(draw) -> bytes:
    return draw(mutated_bytes(SEEDS))


@st.composite
def mutated_bytes(draw, bases: list[bytes], extra: list[bytes] = ()) -> bytes:
    data = bytearray(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(0 if extra or len(bases) == 1 else 1, 8))):
        op = draw(st.sampled_from(["insert", "insert", "delete", "duplicate", "swap", "flip",
                                   "truncate", "newlines", "utf16"]))
        i = draw(st.integers(0, len(data)))
        j = min(len(data), i + draw(st.integers(0, 400)))
        if op == "insert":
            piece = draw(st.one_of(st.sampled_from(FRAGMENTS + list(extra)),
                                   st.binary(max_size=12),
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
    lines = _read_text(path).split("\n")
    for paper in papers:
        assert paper.text.strip() and paper.title.strip(), paper
        # the id hashes the abstract as the file wrote it (its lines up to a blank one)
        block = []
        for line in lines[paper.line - 1:]:
            if not line.strip():
                break
            block.append(line.strip())
        assert paper.paper_id == text_id(" ".join(block))
        assert "\r" not in paper.text and "\ufeff" not in paper.text
        json.dumps([paper.title, paper.text, paper.extra], allow_nan=False)
    return elapsed


def check_source_file(data: bytes, folder: Path, name: str, slow: float) -> float | None:
    """A mutated arXiv, OpenReview or BibTeX file, read with --skip-bad (see the docstring);
    None when the file as a whole is rejected."""
    import bibtexparser

    path = folder / name
    path.write_bytes(data)
    started = time.monotonic()
    try:
        first = read_sources([path], skip_bad=True)
    except CorpusError as exc:
        assert exc.path == str(path), exc.path
        assert time.monotonic() - started < slow, "a bad file took too long to reject"
        return None
    elapsed = time.monotonic() - started
    assert elapsed < slow, f"read_sources took {elapsed:.1f} s on {len(data)} bytes"
    try:  # without --skip-bad: the first bad record's error, or the same papers
        strict = read_sources([path]).papers
        assert not first.skipped and [p.paper_id for p in strict] == \
            [p.paper_id for p in first.papers]
    except CorpusError as exc:
        assert first.skipped and str(exc) == str(first.skipped[0]), (exc, first.skipped[:1])
    papers = first.papers
    assert len({p.paper_id for p in papers}) == len(papers)
    for paper in papers:
        assert paper.text.strip() and paper.title.strip(), paper
        assert "\r" not in paper.text and "\ufeff" not in paper.text
        json.dumps([paper.title, paper.text, paper.extra, paper.year], allow_nan=False)
    exported = to_bibtex(papers)
    library = bibtexparser.parse_string(exported)
    assert not library.failed_blocks, (exported[:500], library.failed_blocks[0].raw[:200])
    assert len(library.entries) == len(papers)
    return elapsed if papers else None


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

    def source_test(name: str, strategy, file_name: str):
        def test(hypothesis_seed: int, examples: int) -> None:
            target = targets[name]

            @seed(hypothesis_seed)
            @settings(common, max_examples=examples)
            @given(data=strategy())
            def run(data: bytes) -> None:
                target.examples += 1
                elapsed = check_source_file(data, folder, file_name, slow)
                if elapsed is not None:
                    target.parsed += 1
                    target.slowest = max(target.slowest, elapsed)

            run()

        return Target(name, test)

    targets["arxiv"] = source_test("arxiv", arxiv_file, "fuzz.jsonl")
    targets["openreview"] = source_test("openreview", openreview_file, "fuzz.json")
    targets["bibtex"] = source_test("bibtex", bibtex_file, "fuzz.bib")
    targets["seeds"] = Target("seeds", seeds_test)
    targets["citations"] = Target("citations", citations_test)
    return targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--target", choices=["all", "seeds", "citations", "arxiv", "openreview",
                                             "bibtex", "sources"], default="all")
    parser.add_argument("--batch", type=int, default=100, help="examples per Hypothesis run")
    parser.add_argument("--slow", type=float, default=5.0,
                        help="an example slower than this is a failure (a hang)")
    parser.add_argument("--seed", type=int, default=None, help="first Hypothesis seed")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        targets = make_targets(args.slow, Path(tmp))
        chosen = (list(targets.values()) if args.target == "all" else
                  [targets[n] for n in ("arxiv", "openreview", "bibtex")]
                  if args.target == "sources" else [targets[args.target]])
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
                 "slowest_example_seconds": round(t.slowest, 3),
                 **({"read_without_error": t.parsed} if t.parsed else {})} for t in chosen}}
    for t in chosen:
        print(f"{t.name}: {t.examples} examples in {t.batches} batches, "
              f"{len(t.failures)} failures, slowest example {t.slowest:.3f} s")
    print(json.dumps(summary))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
