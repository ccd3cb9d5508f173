"""The plain formats: seeds-style text (an optional header line, abstracts separated by blank
lines), JSON Lines (optionally gzipped; or one JSON array, an OpenReview export) and CSV with a
header row. In JSON records, arXiv metadata snapshot lines and OpenReview notes are recognised by
their fields (ragqa/sources/arxiv.py, openreview.py). Every problem is a `CorpusError` that names
the file and the 1-based line; JSON Lines stream a line at a time."""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import itertools
import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from ragqa.errors import CorpusError
from ragqa.sources.arxiv import is_arxiv, paper_from_arxiv
from ragqa.sources.latex import to_text
from ragqa.sources.openreview import is_note, paper_from_note
from ragqa.sources.paper import (
    MetaValue,
    Paper,
    Tally,
    derive_title,
    extract_urls,
    strip_marks,
    text_id,
    venue_from_header,
)
from ragqa.sources.select import split_categories

KNOWN_FIELDS = {"id", "_id", "title", "abstract", "text", "authors", "venue", "year", "url"}
Admit = Callable[[str, int | None, list[str]], bool]

# ---------------------------------------------------------------- decoding

def _decode(path: Path, data: bytes) -> str:
    if not data.strip():
        raise CorpusError(path, None, "file is empty")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise CorpusError(path, None, f"not valid UTF-16: {exc.reason}") from None
    if b"\x00" in data[:8192]:
        raise CorpusError(path, None, "binary file (contains NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise CorpusError(path, None, f"cannot read: {exc}") from None
    # A BOM inside the text (files joined with `cat`, each with its own) is no character of an
    # abstract: kept, it changed the abstract's id (found by bench/fuzz_parsers.py).
    text = _decode(path, raw).replace("\ufeff", "")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _stream_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of every non-blank line, read a line at a time: a
    2.5-million-line snapshot is never held whole. Files that are UTF-16 are read whole."""
    try:
        handle = (gzip.open(path, "rb") if path.name.endswith(".gz")  # noqa: SIM115 - closed below
                  else path.open("rb"))
    except OSError as exc:
        raise CorpusError(path, None, f"cannot read: {exc}") from None
    with handle:
        try:
            head = handle.read(8192)
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in head:
                lines = enumerate(read_text(path).split("\n"), start=1)
                yield from ((n, line) for n, line in lines if line.strip())
                return
            number, buffer = 0, head
            while True:
                chunk = handle.read(1 << 20)
                if chunk:
                    *parts, buffer = (buffer + chunk).split(b"\n")
                else:
                    parts, buffer = buffer.split(b"\n"), b""
                for raw in parts:
                    # A lone CR ends a line too (old Mac files), as in the whole-file readers.
                    for line in _decode_line(path, number + 1, raw).split("\r"):
                        number += 1
                        if line.strip():
                            yield number, line
                if not chunk:
                    return
        except (OSError, EOFError, zlib.error) as exc:
            raise CorpusError(path, None, f"cannot read: {exc}") from None


def _decode_line(path: Path, number: int, raw: bytes) -> str:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(path, number, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save "
                          "the file as UTF-8") from None
    line = line.replace("\ufeff", "")
    return line[:-1] if line.endswith("\r") else line


# ---------------------------------------------------------------- seeds-style text


def _is_header(block: str) -> bool:
    """A header is a single short line that is no sentence, e.g. 'ICML 2026 论文列表'."""
    return "\n" not in block and len(block) <= 100 and not block.rstrip().endswith((".", "?", "!"))



def _blocks(text: str) -> Iterator[tuple[int, str]]:
    """(1-based first line, block) for each run of non-blank lines."""
    start, lines = 0, []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not lines:
                start = number
            lines.append(line.strip())
        elif lines:
            yield start, "\n".join(lines)
            lines = []
    if lines:
        yield start, "\n".join(lines)


def read_seeds(path: Path, text: str) -> Iterator[Paper | CorpusError]:
    blocks = list(_blocks(text))
    venue, year, label = "", None, ""
    if len(blocks) > 1 and _is_header(blocks[0][1]):
        label = blocks[0][1]
        venue, year = venue_from_header(label)
        blocks = blocks[1:]
    if len(blocks) == 1 and _is_header(blocks[0][1]):
        yield CorpusError(path, blocks[0][0], "only a header line, no abstracts")
        return
    for position, (line, block) in enumerate(blocks, start=1):
        body = " ".join(block.split("\n"))
        if len(body) < 20:
            yield CorpusError(path, line, f"too short to be an abstract: {body[:40]!r}")
            continue
        extra: dict[str, MetaValue] = {}
        if label:
            extra["venue_label"] = label
        urls = extract_urls(body)
        if urls:
            extra["code_urls"] = " ".join(urls)
        text = to_text(body)
        yield Paper(
            paper_id=text_id(body), title=derive_title(text), text=text,
            source=f"{path.name}#{position}", venue=venue, year=year,
            url=urls[0] if urls else "", title_derived=True, line=line, extra=extra,
        )


# ---------------------------------------------------------------- records (JSONL, CSV)

def _scalar(value: object) -> MetaValue:
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(value)
    return json.dumps(value, ensure_ascii=False)


def _string_field(record: dict, name: str) -> str:
    value = record.get(name)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"field {name!r} must be text, not {type(value).__name__}")
    return str(value).strip()


def _authors(value: object) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        names = []
        for item in value:
            name = item.get("name") if isinstance(item, dict) else item
            if name is None:
                continue
            # {"name": 5} or [["x"]] is no name; calling .strip() on it used to crash the read
            if isinstance(name, bool) or not isinstance(name, str | int | float):
                raise ValueError("field 'authors' must list names (text, or objects with a "
                                 f"text 'name'), not {type(name).__name__}")
            names.append(str(name).strip())
        return "; ".join(n for n in names if n)
    raise ValueError(f"field 'authors' must be text or a list, not {type(value).__name__}")


def _year(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("field 'year' must be a year, not a boolean")
    year = None
    if isinstance(value, int):
        year = value
    elif isinstance(value, str) and value.strip().isdigit():
        year = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        year = int(value)
    # 1e20 was accepted and then stored by Chroma as a float, breaking the int `year` of the JSON
    if year is None or not 1 <= year <= 9999:
        raise ValueError(f"field 'year' must be a year, not {value!r}")
    return year


def paper_from_record(record: dict, source: str, line: int = 0) -> Paper:
    """One JSON/CSV record -> Paper; ValueError says what is wrong with it."""
    text = _string_field(record, "abstract") or _string_field(record, "text")
    title = strip_marks(_string_field(record, "title"))
    if not text:
        raise ValueError("record has no text (an empty or missing 'abstract' or 'text' field)")
    own_id = _string_field(record, "id") or _string_field(record, "_id")
    if own_id and any(ord(ch) < 32 for ch in own_id):
        raise ValueError(f"id {own_id!r} contains control characters")
    body, text = text, to_text(text)
    extra = {k: _scalar(v) for k, v in record.items() if k not in KNOWN_FIELDS and v is not None}
    if isinstance(record.get("code_urls"), list):  # kept space-separated, as extracted ones
        extra["code_urls"] = " ".join(str(u) for u in record["code_urls"])
    urls = extract_urls(body)
    if urls and "code_urls" not in extra:
        extra["code_urls"] = " ".join(urls)
    return Paper(
        paper_id=own_id or text_id(body), title=title or derive_title(text), text=text,
        source=source, authors=_authors(record.get("authors")),
        venue=_string_field(record, "venue"), year=_year(record.get("year")),
        url=_string_field(record, "url"), title_derived=not title, line=line, extra=extra,
    )


def _no_constant(name: str) -> None:
    """NaN and Infinity are no JSON: kept, they made `ragqa papers --json` print invalid JSON."""
    raise ValueError(f"{name} is not a valid JSON value")




def record_to_paper(record: dict, source: str, line: int, admit: Admit | None = None
                    ) -> Paper | Tally | None:
    """A JSON record of any known shape -> Paper (None: read, and `admit` turned it down).
    arXiv snapshot lines have `authors_parsed`/`versions`, OpenReview notes a `content` of
    fields; anything else uses ragqa's own field names."""
    if is_arxiv(record):
        return paper_from_arxiv(record, source, line, admit)
    if is_note(record):
        return paper_from_note(record, source, line, admit)
    paper = paper_from_record(record, source, line)
    if admit is not None and not admit(paper.venue, paper.year, categories_of(paper)):
        return None
    return paper


def categories_of(paper: Paper) -> list[str]:
    return split_categories(paper.extra.get("categories", ""))


def _json_record(path: Path, line_number: int, line: str) -> dict | CorpusError:
    try:
        record = json.loads(line, parse_constant=_no_constant)
    # JSONDecodeError, NaN/Infinity, a number of 5,000 digits, arrays nested 100,000 deep
    except (ValueError, RecursionError) as exc:
        reason = (exc.msg if isinstance(exc, json.JSONDecodeError) else
                  "nested too deeply" if isinstance(exc, RecursionError) else str(exc))
        return CorpusError(path, line_number, f"malformed JSON: {reason}")
    if not isinstance(record, dict):
        return CorpusError(path, line_number, "each line must be a JSON object")
    return record


def _records_to_papers(path: Path, records: Iterator[tuple[int, dict | CorpusError]],
                       admit: Admit | None) -> Iterator[Paper | CorpusError | Tally | None]:
    for position, (line_number, record) in enumerate(records, start=1):
        if isinstance(record, CorpusError):
            yield record
            continue
        try:
            yield record_to_paper(record, f"{path.name}#{position}", line_number, admit)
        except ValueError as exc:
            yield CorpusError(path, line_number, str(exc))


_NOTES_KEY = re.compile(r'"notes"\s*:\s*\[')


def read_jsonl(path: Path, admit: Admit | None = None
               ) -> Iterator[Paper | CorpusError | Tally | None]:
    """JSON Lines, streamed; or, in a .json file, one JSON array (an OpenReview export) or an
    OpenReview API response (`{"notes": [...]}`), read whole."""
    lines = _stream_lines(path)
    first = next(lines, None)
    if first is None:
        raise CorpusError(path, None, "file is empty")
    head = first[1].lstrip()
    if head.startswith("[") or (path.name.lower().endswith(".json") and
                                head.startswith("{") and _wraps_notes(head)):
        text = read_text(path)  # whole: element line numbers count the blank lines too
        start = 0 if head.startswith("[") else _notes_start(text)
        if start is not None:
            records = _array_records(path, text[start:], text.count("\n", 0, start) + 1,
                                     wrapped=bool(start))
            yield from _records_to_papers(path, records, admit)
            return

    def records() -> Iterator[tuple[int, dict | CorpusError]]:
        for line_number, line in itertools.chain([first], lines):
            yield line_number, _json_record(path, line_number, line)

    yield from _records_to_papers(path, records(), admit)


def _wraps_notes(first_line: str) -> bool:
    """Whether a .json file starting with this line is an API response `{"notes": [...]}`:
    a first line that is a whole record is JSON Lines (an arXiv snapshot is named .json)."""
    try:
        record = json.loads(first_line)
    except (ValueError, RecursionError):
        return bool(_NOTES_KEY.search(first_line)) or first_line.strip() == "{"
    return isinstance(record, dict) and isinstance(record.get("notes"), list)


def _notes_start(text: str) -> int | None:
    match = _NOTES_KEY.search(text)
    return match.end() - 1 if match else None


def _array_records(path: Path, text: str, first_line: int, wrapped: bool = False
                   ) -> Iterator[tuple[int, dict | CorpusError]]:
    """The objects of a JSON array, each with the line it starts on (`wrapped`: the array is a
    field of an object, whose other fields may follow it)."""
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    at = text.index("[") + 1
    line, counted = first_line, 0

    def line_of(offset: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, offset)
        counted = offset
        return line

    while True:
        at = _skip_space(text, at)
        if at < len(text) and text[at] == "]":
            if text[at + 1:].strip() and not wrapped:
                yield line_of(at), CorpusError(path, line_of(at), "text after the JSON array")
            return
        start_line = line_of(at)
        try:
            record, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            yield start_line, CorpusError(path, start_line, f"malformed JSON: {reason}")
            return  # nothing after a broken element can be trusted
        yield start_line, (record if isinstance(record, dict) else CorpusError(
            path, start_line, "each element of the array must be a JSON object"))
        at = _skip_space(text, at)
        if at < len(text) and text[at] == ",":
            at += 1
        elif at >= len(text) or text[at] != "]":
            yield line_of(at), CorpusError(path, line_of(at),
                                           "malformed JSON: expected ',' or ']' in the array")
            return


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def read_csv(path: Path, text: str) -> Iterator[Paper | CorpusError]:
    csv.field_size_limit(16 * 1024 * 1024)  # a long abstract is one field
    # strict: an unclosed quote is an error, not a record that swallows the rest of the file
    reader = csv.DictReader(io.StringIO(text), strict=True)
    try:
        columns = {c.strip().lower() for c in reader.fieldnames or []}
    except csv.Error as exc:
        yield CorpusError(path, 1, f"malformed CSV header: {exc}")
        return
    if not columns & {"abstract", "text"}:
        yield CorpusError(path, 1, "CSV header needs an 'abstract' or 'text' column")
        return
    position = 0
    while True:
        start = reader.line_num + 1  # a quoted field may span lines: report where it starts
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield CorpusError(path, start, f"malformed CSV: {exc}")
            return
        position += 1
        record = {(k or "").strip().lower(): v for k, v in row.items() if k}
        try:
            yield paper_from_record(record, f"{path.name}#{position}", start)
        except ValueError as exc:
            yield CorpusError(path, start, str(exc))

