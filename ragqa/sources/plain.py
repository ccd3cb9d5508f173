"""The plain formats: seeds-style text (an optional header line, abstracts separated by blank
lines), JSON Lines (optionally gzipped; or one JSON array, an OpenReview export) and CSV with a
header row. In JSON records, arXiv metadata snapshot lines and OpenReview notes are recognised by
their fields (ragqa/sources/arxiv.py, openreview.py). Every problem is a `CorpusError` that names
the file and the 1-based line; JSON Lines stream a line at a time."""

from __future__ import annotations

import codecs
import csv
import functools
import gzip
import itertools
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from ragqa.errors import CorpusError
from ragqa.sources.arxiv import is_arxiv, paper_from_arxiv
from ragqa.sources.latex import to_text
from ragqa.sources.openreview import is_note, paper_from_note
from ragqa.sources.paper import (
    MAX_TEXT_CHARS,
    MetaValue,
    Paper,
    Tally,
    bounded_fields,
    cut_text,
    derive_title,
    extract_urls,
    strip_marks,
    text_id,
    venue_from_header,
)
from ragqa.sources.select import split_categories
from ragqa.text import spreadsheet_text

KNOWN_FIELDS = {"id", "_id", "title", "abstract", "text", "authors", "venue", "year", "url"}
Admit = Callable[[str, int | None, list[str]], bool]

# The longest line of a file read a line at a time (JSON Lines, CSV, seeds text), and of a
# seeds abstract or a CSV field that spans lines: 1 MiB holds 500 arXiv abstracts. A longer one
# is bad input, skipped with --skip-bad, and never held: it is read in chunks and dropped.
MAX_LINE_BYTES = 1 << 20
# The most a file read whole (BibTeX, a JSON array, UTF-16 text) may hold, decompressed:
# ~40,000 OpenReview notes. JSON Lines have no such limit.
MAX_WHOLE_BYTES = 128 << 20
_READ_BYTES = 1 << 20  # what one read takes of a file read a line at a time

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
    """The whole file as text, for what is read whole (BibTeX, a JSON array, UTF-16 files): at
    most MAX_WHOLE_BYTES of it, decompressed (a gzip bomb stops there)."""
    try:
        with _open(path) as handle:
            raw = _read_at_most(handle, MAX_WHOLE_BYTES)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise CorpusError(path, None, f"cannot read: {exc}") from None
    if raw is None:
        raise CorpusError(path, None, f"too large to read whole (over {MAX_WHOLE_BYTES >> 20} "
                          "MiB of text): split it, or write it as JSON Lines, which is read a "
                          "line at a time (`jq -c '.[]' notes.json > notes.jsonl`)")
    # A BOM inside the text (files joined with `cat`, each with its own) is no character of an
    # abstract: kept, it changed the abstract's id (found by bench/fuzz_parsers.py).
    text = _decode(path, raw).replace("\ufeff", "")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _open(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")


def _read_at_most(handle: BinaryIO, limit: int) -> bytes | None:
    """All of `handle`, or None once it holds more than `limit` bytes: read in chunks, never
    a buffer of `limit` for a small file."""
    chunks, size = [], 0
    while chunk := handle.read(_READ_BYTES):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _raw_lines(handle: BinaryIO, head: bytes) -> Iterator[bytes | None]:
    """The bytes of each line of `head` and what follows it in `handle` (no b"\\n"), or None for
    a line over MAX_LINE_BYTES: read in chunks and dropped up to its end, so that it is never
    held, however long (a .gz of 20 KB held a line of 20 MB; one of 1.5 GB ran for minutes,
    each chunk joined to all before it)."""
    pending, skipping = head, False
    while True:
        chunk = handle.read(_READ_BYTES)
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()  # the line that goes on in the next chunk
        for raw in parts:
            if skipping:  # the end of the line being skipped
                skipping = False
                yield None
            else:
                yield raw if len(raw) <= MAX_LINE_BYTES else None
        if not chunk:
            if skipping or pending:
                yield None if skipping or len(pending) > MAX_LINE_BYTES else pending
            return
        if skipping or len(pending) > MAX_LINE_BYTES:
            pending, skipping = b"", True


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(1-based number, line) of every line, blank ones too, read a line at a time: a
    2.5-million-line snapshot is never held whole, nor a line over MAX_LINE_BYTES (None: not
    read; a gzip bomb of one line included). A lone CR ends a line too (old Mac files), as in
    `read_text`. Files that are UTF-16 are read whole (`read_text`, bounded)."""
    try:
        handle = _open(path)
    except OSError as exc:
        raise CorpusError(path, None, f"cannot read: {exc}") from None
    with handle:
        try:
            head = handle.read(8192)
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in head:
                for number, line in enumerate(read_text(path).split("\n"), start=1):
                    yield number, line if len(line) <= MAX_LINE_BYTES // 4 or \
                        len(line.encode("utf-8")) <= MAX_LINE_BYTES else None
                return
            number = 0
            for raw in _raw_lines(handle, head):
                if raw is None:
                    number += 1
                    yield number, None
                    continue
                for line in _decode_line(path, number + 1, raw).split("\r"):
                    number += 1
                    yield number, line
        except (OSError, EOFError, zlib.error) as exc:
            raise CorpusError(path, None, f"cannot read: {exc}") from None


def _stream_lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """`_lines` without the blank ones."""
    return ((n, line) for n, line in _lines(path) if line is None or line.strip())


def too_long(path: Path, line: int) -> CorpusError:
    return CorpusError(path, line, f"a line over {MAX_LINE_BYTES >> 20} MiB, more than any "
                       "record needs: not read")


def _head_text(path: Path) -> str:
    """The file's first 8 KiB as text, however long its first line."""
    with _open(path) as handle:
        return handle.read(8192).decode("utf-8", errors="ignore").lstrip("\ufeff")


def _decode_line(path: Path, number: int, raw: bytes) -> str:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(path, number, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save "
                          "the file as UTF-8") from None
    line = line.replace("\ufeff", "")
    return line[:-1] if line.endswith("\r") else line


# ---------------------------------------------------------------- seeds-style text


def _is_header(block: str | CorpusError) -> bool:
    """A header is a single short line that is no sentence, e.g. 'ICML 2026 论文列表'."""
    return isinstance(block, str) and "\n" not in block and len(block) <= 100 and \
        not block.rstrip().endswith((".", "?", "!"))



def _blocks(path: Path, lines: Iterable[tuple[int, str | None]]
            ) -> Iterator[tuple[int, str | CorpusError]]:
    """(1-based first line, block) for each run of non-blank lines; a CorpusError for a block
    over MAX_LINE_BYTES or with a line that long, whose rest is then passed over unread."""
    start, held, size, bad = 0, [], 0, None
    for number, line in lines:
        if line is not None and not line.strip():
            if held or bad:
                yield start, bad or "\n".join(held)
            held, size, bad = [], 0, None
            continue
        if not held and not bad:
            start = number
        if bad:
            continue
        size += len(line) if line is not None else MAX_LINE_BYTES + 1
        if size > MAX_LINE_BYTES:
            bad, held = too_long(path, number) if line is None else CorpusError(
                path, start, f"an abstract over {MAX_LINE_BYTES >> 20} MiB, more than any "
                "record needs: not read"), []
        else:
            held.append(line.strip())
    if held or bad:
        yield start, bad or "\n".join(held)


def read_seeds(path: Path) -> Iterator[Paper | CorpusError | Tally]:
    """Seeds-style text, read a line at a time (`_lines`) and held a block at a time."""
    blocks = _blocks(path, _lines(path))
    # Whether the first block is a header, and the only one left: the first three tell.
    first = list(itertools.islice(blocks, 3))
    if not first:
        raise CorpusError(path, None, "file is empty")
    venue, year, label = "", None, ""
    if len(first) > 1 and _is_header(first[0][1]):
        label = first[0][1]
        venue, year = venue_from_header(label)
        first = first[1:]
    if len(first) == 1 and _is_header(first[0][1]):
        yield CorpusError(path, first[0][0], "only a header line, no abstracts")
        return
    for position, (line, block) in enumerate(itertools.chain(first, blocks), start=1):
        if isinstance(block, CorpusError):
            yield block
            continue
        body = " ".join(block.split("\n"))
        if len(body) > MAX_TEXT_CHARS:
            body = cut_text(body, MAX_TEXT_CHARS)
            yield Tally("cut", line)
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
        yield from _bounded_paper(path, record, line_number, functools.partial(
            record_to_paper, source=f"{path.name}#{position}", line=line_number, admit=admit))


def _bounded_paper(path: Path, record: dict, line: int,
                   build: Callable[[dict], Paper | Tally | None]
                   ) -> Iterator[Paper | CorpusError | Tally | None]:
    """`build(record)` with the record's texts cut to their limits (`bounded_fields`): the
    paper, after a "cut" Tally when a text was cut; a CorpusError for a bad record."""
    record, cut = bounded_fields(record)
    try:
        item = build(record)
    except ValueError as exc:
        yield CorpusError(path, line, str(exc))
        return
    if cut and isinstance(item, Paper):
        yield Tally("cut", line)
    yield item


_NOTES_KEY = re.compile(r'"notes"\s*:\s*\[')


def read_jsonl(path: Path, admit: Admit | None = None
               ) -> Iterator[Paper | CorpusError | Tally | None]:
    """JSON Lines, streamed; or, in a .json file, one JSON array (an OpenReview export) or an
    OpenReview API response (`{"notes": [...]}`), read whole."""
    lines = _stream_lines(path)
    first = next(lines, None)
    if first is None:
        raise CorpusError(path, None, "file is empty")
    # A JSON array (or an API response) saved on one line may well be over MAX_LINE_BYTES: what
    # it is, its start says.
    head = (first[1] if first[1] is not None else _head_text(path)).lstrip()
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
            yield line_number, (too_long(path, line_number) if line is None
                                else _json_record(path, line_number, line))

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


def read_csv(path: Path) -> Iterator[Paper | CorpusError | Tally]:
    """A CSV file with a header row, read a line at a time (`_lines`). A record that spans a
    line over MAX_LINE_BYTES is bad input (that line is never read); the others are read."""
    # A quoted field may span lines: it may hold as much as a line may (csv's default limit,
    # 128 KiB, is less than a long abstract).
    csv.field_size_limit(MAX_LINE_BYTES)
    lines = _lines(path)
    leading = []  # the lines up to the first with text, given to the parser as they are
    for number, line in lines:
        leading.append((number, line))
        if line is None or line.strip():
            break
    else:
        raise CorpusError(path, None, "file is empty")
    dropped: list[int] = []  # lines not read (over MAX_LINE_BYTES), given to the parser blank

    def text_lines() -> Iterator[str]:
        for number, line in itertools.chain(leading, lines):
            if line is None:
                dropped.append(number)
            yield "\n" if line is None else line + "\n"

    # strict: an unclosed quote is an error, not a record that swallows the rest of the file
    reader = csv.reader(text_lines(), strict=True)
    try:
        header = next(reader, [])
    except csv.Error as exc:
        yield CorpusError(path, 1, f"malformed CSV header: {exc}")
        return
    if not {c.strip().lower() for c in header} & {"abstract", "text"}:
        yield CorpusError(path, 1, "CSV header needs an 'abstract' or 'text' column")
        return
    position = 0
    while True:
        start = reader.line_num + 1  # a quoted field may span lines: report where it starts
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield CorpusError(path, start, f"malformed CSV: {exc}")
            return
        if dropped:  # the record (or the line on its own) held a line that was not read
            position += 1
            yield from (too_long(path, number) for number in dropped)
            dropped.clear()
            continue
        if not cells:  # a blank line
            continue
        position += 1
        # as csv.DictReader: a short row's missing cells are None, a long row's extra ones go
        row = dict(zip(header, cells + [None] * (len(header) - len(cells)), strict=False))
        # a cell ragqa's CSV export kept from running as a formula reads as its text
        record = {(k or "").strip().lower(): spreadsheet_text(v) if isinstance(v, str) else v
                  for k, v in row.items() if k}
        yield from _bounded_paper(path, record, start, functools.partial(
            paper_from_record, source=f"{path.name}#{position}", line=start))

