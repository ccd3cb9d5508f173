"""Source files -> `Paper` records: the registry of readers, one per format, and `read_sources`.

Formats: seeds-style text, JSON Lines and CSV (plain.py, with arXiv snapshot lines and OpenReview
notes recognised by their fields: arxiv.py, openreview.py), and `.bib` (bibtex.py). Every
problem is a `CorpusError` (paper.py) that names the file and the 1-based line, raised before
anything is written anywhere. Only the records a `Selection` (select.py) keeps are held, and
each is bounded: no line over plain.MAX_LINE_BYTES is read, no file read whole holds more than
plain.MAX_WHOLE_BYTES, and texts are cut at paper.MAX_TEXT_CHARS (titles MAX_TITLE_CHARS).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragqa.errors import CorpusError
from ragqa.sources.bibtex import read_bibtex
from ragqa.sources.paper import TALLIES, Paper, Tally
from ragqa.sources.plain import Admit, categories_of, read_csv, read_jsonl, read_seeds, read_text

TEXT_SUFFIXES = (".txt", ".md")
# .json: JSON Lines, or one JSON array (an OpenReview export), told apart by the first byte.
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".json.gz", ".ndjson.gz", ".json")
CSV_SUFFIXES = (".csv", ".csv.gz")
BIB_SUFFIXES = (".bib", ".bib.gz")
SUPPORTED = TEXT_SUFFIXES + JSONL_SUFFIXES + CSV_SUFFIXES + BIB_SUFFIXES
PROGRESS_EVERY = 10_000  # records between two progress reports while reading


@dataclass
class ReadReport:
    papers: list[Paper]
    skipped: list[CorpusError]
    records_read: int = 0  # records parsed, kept or not
    # Records read and counted, not errors (paper.TALLIES): entries that are no paper, and
    # quirks of real libraries read through.
    tallies: dict[str, int] = field(default_factory=dict)
    partial: bool = False  # a --where/--limit slice: the files hold more than was read
    # The values the --where conditions were tested on: field -> value -> records
    seen: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def without_abstract(self) -> int:
        return self.tallies.get("without_abstract", 0)

    def count(self, kind: str) -> None:
        self.tallies[kind] = self.tallies.get(kind, 0) + 1


# ---------------------------------------------------------------- the registry

Item = Paper | CorpusError | Tally | None  # None: read, and the selection turned it down


@dataclass(frozen=True)
class Reader:
    """One format: the file name endings it reads, and the reader, which yields a Paper, a
    CorpusError (a bad record: fatal unless --skip-bad), a Tally (a record that is no paper, or
    a quirk read through: counted) or None (read, and the selection turned it down) per
    record."""

    suffixes: tuple[str, ...]
    read: Callable[[Path, Admit | None], Iterator[Item]]


def _admitted(items: Iterator[Paper | CorpusError | Tally], admit: Admit | None
              ) -> Iterator[Item]:
    for item in items:
        if admit is not None and isinstance(item, Paper) and \
                not admit(item.venue, item.year, categories_of(item)):
            yield None
        else:
            yield item


# In the order they are tried: ".json.gz" is JSON Lines, not text.
READERS = (
    Reader(JSONL_SUFFIXES, read_jsonl),
    Reader(CSV_SUFFIXES, lambda p, admit: _admitted(read_csv(p), admit)),
    Reader(TEXT_SUFFIXES, lambda p, admit: _admitted(read_seeds(p), admit)),
    Reader(BIB_SUFFIXES, lambda p, admit: read_bibtex(p, read_text(p), admit)),
)


def reader_for(path: Path) -> Reader:
    name = path.name.lower()
    for reader in READERS:
        if name.endswith(reader.suffixes):
            return reader
    raise CorpusError(path, None, f"unknown format; use one of {', '.join(SUPPORTED)}")


# ---------------------------------------------------------------- reading

def expand_sources(paths: Iterable[Path]) -> list[Path]:
    """Files named directly, and supported files inside named folders (sorted)."""
    files: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*")
                           if p.is_file() and p.name.lower().endswith(SUPPORTED))
            if not found:
                raise CorpusError(path, None, "folder holds no supported files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise CorpusError(path, None, "no such file or folder")
    # The same file named twice (or inside a named folder too) is read once.
    unique = []
    for file in files:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            unique.append(file)
    return unique


def read_sources(paths: Iterable[Path], skip_bad: bool = False, selection=None,
                 on_progress: Callable[[int, int], None] | None = None) -> ReadReport:
    """Parse every source. Raises the first CorpusError unless `skip_bad`.

    `selection` (a `ragqa.sources.select.Selection`): only the records it admits are kept, at
    most its `limit` of them; the others are read (and checked) but not held, so memory follows
    what is kept, not the size of the files. `on_progress(records read, kept)` is called every
    PROGRESS_EVERY records and at the end."""
    paths = list(paths)
    limit = selection.limit if selection else None
    report = ReadReport(papers=[], skipped=[], partial=bool(selection))
    admit = _noting(selection.admits, report.seen) if selection and selection.conditions \
        else None
    first_seen: dict[str, Paper] = {}
    for path in expand_sources(paths):
        if limit is not None and len(report.papers) >= limit:
            break
        resolved = str(path.resolve())
        for item in reader_for(path).read(path, admit):
            if isinstance(item, Tally):
                if not TALLIES[item.kind][1]:  # a record that is no paper: read, and counted
                    _count_read(report, on_progress)
                report.count(item.kind)
                continue
            if not isinstance(item, CorpusError):
                _count_read(report, on_progress)
            if item is None:
                continue
            if isinstance(item, Paper) and item.paper_id in first_seen:
                item = _read_before(path, item, first_seen[item.paper_id])
                if item is None:
                    report.count("duplicate")
                    continue
            if isinstance(item, CorpusError):
                if not skip_bad:
                    raise item
                report.skipped.append(item)
                continue
            first_seen[item.paper_id] = item
            report.papers.append(replace(item, source_path=resolved))
            if limit is not None and len(report.papers) >= limit:
                break
    if on_progress:
        on_progress(report.records_read, len(report.papers))
    if not report.records_read and not report.skipped:
        raise CorpusError(", ".join(str(p) for p in paths), None, "no abstracts found")
    return report



def _count_read(report: ReadReport, on_progress: Callable[[int, int], None] | None) -> None:
    report.records_read += 1
    if on_progress and report.records_read % PROGRESS_EVERY == 0:
        on_progress(report.records_read, len(report.papers))


def _read_before(path: Path, paper: Paper, first: Paper) -> CorpusError | None:
    """A paper whose id was read before: the same paper again (None: counted, skipped), or an
    error. A library lists one paper twice often (one DOI, two entries); a JSON Lines or CSV
    file whose records share an id names two papers by one."""
    if paper.content_hash == first.content_hash or (
            paper.extra.get("source_format") == "bibtex" and
            first.extra.get("source_format") == "bibtex"):
        return None
    return CorpusError(path, paper.line or None,
                       f"duplicate paper id {paper.paper_id!r} (first at {first.source})")


def _noting(admit: Admit, seen: dict[str, dict[str, int]]) -> Admit:
    """`admit`, counting the values it is asked about: what a --where that keeps nothing
    names to say what there was."""
    def noted(venue: str, year: int | None, categories: list[str]) -> bool:
        for name, values in (("venue", [venue]), ("year", [str(year or "")]),
                             ("category", categories)):
            counts = seen.setdefault(name, {})
            for value in values:
                if value:
                    counts[value] = counts.get(value, 0) + 1
        return admit(venue, year, categories)
    return noted
