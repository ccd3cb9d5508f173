"""Source files -> `Paper` records.

Formats: seeds-style text (an optional header line, abstracts separated by blank lines), JSON
Lines (optionally gzipped) and CSV with a header row; in `.json`/`.jsonl` files, arXiv metadata
snapshot lines and OpenReview notes are recognised by their fields (`ragqa.sources`); `.bib`
through bibtexparser. Every problem is a `CorpusError` that names the file and the 1-based line,
raised before anything is written anywhere. JSON Lines stream: a file is read a line at a time,
and only the records a `Selection` keeps are held.
"""

from __future__ import annotations

import codecs
import csv
import functools
import gzip
import hashlib
import io
import itertools
import json
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragqa.sources.latex import to_text

TEXT_SUFFIXES = (".txt", ".md")
# .json: JSON Lines, or one JSON array (an OpenReview export), told apart by the first byte.
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".json.gz", ".ndjson.gz", ".json")
CSV_SUFFIXES = (".csv", ".csv.gz")
BIB_SUFFIXES = (".bib",)
SUPPORTED = TEXT_SUFFIXES + JSONL_SUFFIXES + CSV_SUFFIXES + BIB_SUFFIXES
PROGRESS_EVERY = 10_000  # records between two progress reports while reading

KNOWN_FIELDS = {"id", "_id", "title", "abstract", "text", "authors", "venue", "year", "url"}
MetaValue = str | int | float | bool


class CorpusError(ValueError):
    """Bad input, located at a file and line."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    text: str
    source: str  # file name + 1-based position, e.g. "000_5a03819fc22e34a3.txt#4"
    authors: str = ""
    venue: str = ""
    year: int | None = None
    url: str = ""
    title_derived: bool = False
    line: int = 0  # where the record starts in its file, for messages
    extra: dict[str, MetaValue] = field(default_factory=dict)
    # The file's resolved path: which file a paper came from, where `source` only names it
    # (two folders may each hold a "corpus.jsonl.gz"). Internal: not in the JSON output.
    source_path: str = ""

    @functools.cached_property  # asked once per chunk: recomputed, a 10 MB paper was quadratic
    def content_hash(self) -> str:
        """Changes whenever what is embedded or shown changes; not when the paper only moves."""
        payload = json.dumps(
            [self.title, self.text, self.authors, self.venue, self.year, self.url,
             sorted(self.extra.items())],
            ensure_ascii=False, default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @property
    def code_urls(self) -> list[str]:
        raw = self.extra.get("code_urls", "")
        return [u for u in str(raw).split() if u]


@dataclass
class ReadReport:
    papers: list[Paper]
    skipped: list[CorpusError]
    records_read: int = 0  # records parsed, kept or not
    without_abstract: int = 0  # BibTeX entries that are no paper (no abstract): not errors
    partial: bool = False  # a --where/--limit slice: the files hold more than was read


# ---------------------------------------------------------------- ids and text normalisation

def normalise_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def text_id(text: str) -> str:
    """The id of a record that has none of its own: same abstract, same id.

    Hashed from the text as the source wrote it (before LaTeX and Markdown become text): the ids
    of collections built before the converter, of saved chats and of the judged sets
    (bench/lists/seeds.qrels.tsv, tests/fixtures/seed_lists.json) stay valid; only the stored
    text of a paper with marks changes, and its content hash re-embeds it once, in place."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]


_URL = re.compile(r"https?://[^\s<>()\[\]{}\"']+")


def extract_urls(text: str) -> list[str]:
    # Trailing punctuation and Markdown emphasis (`_https://x/CPO_.`) are not part of a link.
    return [u.rstrip(".,;:!?*_`'\"”’。，；") for u in _URL.findall(text)]


# ---------------------------------------------------------------- derived titles

def strip_marks(text: str) -> str:
    """Markdown emphasis and LaTeX removed: `**DVPD**`, `$\\textbf{EGG}$`, `$2.13\\times$` read
    "DVPD", "EGG", "2.13×" (one converter for every format: `ragqa.sources.latex`)."""
    return to_text(text)


_INTRO = re.compile(
    r"\b(?:we|this (?:paper|work)|here we)\s+(?:\w+\s+){0,2}?"
    r"(?:introduce|present|propose|develop|release|build|design|construct|call|name)s?\b\s*"
    r"(?:a new |a novel |the novel )?",
    re.IGNORECASE,
)
_NAMED = re.compile(r"\b(?:called|named|dubbed|termed|coined)\s+", re.IGNORECASE)
# A derived title's length, and the words a contribution or subject phrase may have.
TITLE_CHARS = 80
_PHRASE_WORDS = 9
# Where the noun phrase of "we propose a … " ends.
_CLAUSE_END = re.compile(r"[,;:.(]|\s(?:that|which|whose|where|to|by|using|via|together|and "
                         r"(?:a|an|the|show|demonstrate|evaluate|prove)|as a|in order)\s",
                         re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the|our|two|three|new|novel)\s+(?:new\s+|novel\s+)?",
                      re.IGNORECASE)
# The verb of an abstract's first sentence, where its subject ends.
_FIRST_VERB = re.compile(
    r"\s(?:is|are|was|were|has|have|had|can|could|may|might|must|will|would|remains?|"
    r"shows?|enables?|requires?|relies|rely|struggles?|suffers?|achieves?|provides?|"
    r"allows?|offers?|plays?|poses?|faces?|depends?|often|typically|commonly|increasingly|"
    r"usually)\b", re.IGNORECASE)
# Bounded and without nested quantifiers: a long unclosed "(" must not backtrack for minutes.
_ACRONYM_CANDIDATE = re.compile(r"\(([^()\s]{2,40}(?: [A-Z][\w-]{0,40})?)\)")
_NAME_TOKEN = re.compile(r"^[^\s,;:()]+")
# Titles come from an abstract's start. Scanning all of a 10 MB "abstract" took minutes: every
# unnamed "we propose" re-read the text after it (quadratic).
_TITLE_SCAN = 20_000


def _find_acronym(text: str) -> str | None:
    """The first "(XYZ)" in text that reads as a name: two capitals or a capital and a digit."""
    for match in _ACRONYM_CANDIDATE.finditer(text):
        inner = match.group(1)
        if sum(ch.isupper() for ch in inner) >= 2 or (
                any(ch.isupper() for ch in inner) and any(ch.isdigit() for ch in inner)):
            return inner
    return None


def _looks_like_name(token: str, followed_by: str) -> bool:
    core = token.strip(".-")
    if len(core) < 2 or not any(ch.isalpha() for ch in core):
        return False
    if any(ch.isupper() for ch in core[1:]) or any(ch.isdigit() for ch in core):
        return True
    if not core.isascii() and "-" in core:  # e.g. τ-Voice
        return True
    # A single capitalised word directly followed by "," or "(" after "we introduce".
    return core[0].isupper() and followed_by[:1] in (",", "(")


def _name_after(phrase: str) -> str | None:
    phrase = phrase.lstrip()
    clause = re.split(r",|;|\.\s| which | that | to | for |: ", phrase, maxsplit=1)[0]
    acronym = _find_acronym(clause)
    if acronym:
        return acronym
    token = _NAME_TOKEN.match(phrase)
    if token and _looks_like_name(token.group(0), phrase[token.end():]):
        return token.group(0).rstrip(".")
    # "a unified framework: adaptive ... gradients (A2SG)": the name follows a colon.
    head = re.split(r"\.\s", phrase, maxsplit=1)[0][:200]
    if ":" in head:
        acronym = _find_acronym(head.split(":", 1)[1].split(",")[0])
        if acronym:
            return acronym
    return None


def derive_title(text: str, max_words: int = 10) -> str:
    """A short human title for an abstract that has none: the system it names ("We introduce
    τ-Voice, …"), else its contribution ("We propose a goal-oriented clarification framework
    that …" → "Goal-oriented clarification framework"), else the subject of its first sentence
    ("Predictive coding (PC) is …" → "Predictive coding (PC)"), else its first words. Never a
    whole long sentence: at most `max_words` words and TITLE_CHARS characters."""
    plain = strip_marks(text[:_TITLE_SCAN])
    for pattern in (_INTRO, _NAMED):
        for match in pattern.finditer(plain):
            name = _name_after(plain[match.end():])
            if name:
                return name
    first_sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0].rstrip(".")
    phrase = _contribution(plain) or _subject(first_sentence)
    if phrase:
        return phrase
    words = first_sentence.split() or plain.split() or ["Untitled"]
    if len(words) <= max_words and len(first_sentence) <= TITLE_CHARS:
        return " ".join(words)
    return _shorten(" ".join(words[:max_words])) + "…"


def contribution_sentence(text: str) -> str | None:
    """The sentence that states what the abstract contributes ("We propose …", "This work
    introduces …"), or None."""
    return next((s for s in split_sentences(text) if _INTRO.search(s)), None)


def _contribution(plain: str) -> str | None:
    """The noun phrase after the first "we propose / this work introduces …", if it reads as
    one: "a low-overhead compatibility certificate for learned operator pairs, …" →
    "Low-overhead compatibility certificate for learned operator pairs"."""
    match = _INTRO.search(plain)
    if not match:
        return None
    phrase = _CLAUSE_END.split(plain[match.end():].lstrip(), maxsplit=1)[0]
    phrase = _ARTICLE.sub("", phrase).strip(" :-")
    words = phrase.split()
    if not 2 <= len(words) <= _PHRASE_WORDS or not words[0][:1].isalpha():
        return None
    return _shorten(phrase[:1].upper() + phrase[1:])


def _subject(sentence: str) -> str | None:
    """What the first sentence is about: the words before its verb ("Reinforcement
    fine-tuning (RFT) has shown promise …" → "Reinforcement fine-tuning (RFT)")."""
    head = _FIRST_VERB.split(sentence, maxsplit=1)
    if len(head) < 2:
        return None
    words = head[0].split()
    if not 2 <= len(words) <= _PHRASE_WORDS or re.search(r"\b(?:we|our|this|these)\b",
                                                          head[0], re.IGNORECASE):
        return None
    return _shorten(head[0].strip(" ,;:"))


def _shorten(title: str) -> str:
    """At most TITLE_CHARS characters, cut at a word."""
    if len(title) <= TITLE_CHARS:
        return title
    return title[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:")


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


def _read_text(path: Path) -> str:
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
                lines = enumerate(_read_text(path).split("\n"), start=1)
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

# "ICML 2026 Papers", "NeurIPS 2025 Accepted Papers", "ACL 2024 论文", "ICLR 2026 (oral)",
# "Accepted papers at EMNLP 2023", "NeurIPS'25"
_HEADER_VENUE = re.compile(r"([A-Za-z][A-Za-z&\-]*)\s*(?:'?(\d{4})|'(\d{2}))(?!\d)")


def _is_header(block: str) -> bool:
    """A header is a single short line that is no sentence, e.g. 'ICML 2026 论文列表'."""
    return "\n" not in block and len(block) <= 100 and not block.rstrip().endswith((".", "?", "!"))


def venue_from_header(header: str) -> tuple[str, int | None]:
    match = _HEADER_VENUE.search(header)
    if not match:
        return header.strip(), None
    return match.group(1), int(match.group(2) or f"20{match.group(3)}")


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


def _read_seeds(path: Path, text: str) -> Iterator[Paper | CorpusError]:
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


Admit = Callable[[str, int | None, list[str]], bool]


def record_to_paper(record: dict, source: str, line: int, admit: Admit | None = None
                    ) -> Paper | None:
    """A JSON record of any known shape -> Paper (None: read, and `admit` turned it down).
    arXiv snapshot lines have `authors_parsed`/`versions`, OpenReview notes a `content` of
    fields; anything else uses ragqa's own field names."""
    from ragqa.sources import arxiv, openreview

    if arxiv.is_arxiv(record):
        return arxiv.paper_from_arxiv(record, source, line, admit)
    if openreview.is_note(record):
        return openreview.paper_from_note(record, source, line, admit)
    paper = paper_from_record(record, source, line)
    if admit is not None and not admit(paper.venue, paper.year, _categories(paper)):
        return None
    return paper


def _categories(paper: Paper) -> list[str]:
    from ragqa.sources.select import split_categories

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
                       admit: Admit | None) -> Iterator[Paper | CorpusError | None]:
    for position, (line_number, record) in enumerate(records, start=1):
        if isinstance(record, CorpusError):
            yield record
            continue
        try:
            yield record_to_paper(record, f"{path.name}#{position}", line_number, admit)
        except ValueError as exc:
            yield CorpusError(path, line_number, str(exc))


_NOTES_KEY = re.compile(r'"notes"\s*:\s*\[')


def _read_jsonl(path: Path, admit: Admit | None = None) -> Iterator[Paper | CorpusError | None]:
    """JSON Lines, streamed; or, in a .json file, one JSON array (an OpenReview export) or an
    OpenReview API response (`{"notes": [...]}`), read whole."""
    lines = _stream_lines(path)
    first = next(lines, None)
    if first is None:
        raise CorpusError(path, None, "file is empty")
    head = first[1].lstrip()
    if head.startswith("[") or (path.name.lower().endswith(".json") and
                                head.startswith("{") and _wraps_notes(head)):
        text = _read_text(path)  # whole: element line numbers count the blank lines too
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


def _read_csv(path: Path, text: str) -> Iterator[Paper | CorpusError]:
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


# ---------------------------------------------------------------- entry points

def _read_bib(path: Path, admit: Admit | None = None):
    from ragqa.sources.bibtex import read_bibtex

    return read_bibtex(path, _read_text(path), admit)


def _admitted(items: Iterator[Paper | CorpusError], admit: Admit | None
              ) -> Iterator[Paper | CorpusError | None]:
    for item in items:
        if admit is not None and isinstance(item, Paper) and \
                not admit(item.venue, item.year, _categories(item)):
            yield None
        else:
            yield item


def _reader_for(path: Path):
    name = path.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return _read_jsonl
    if name.endswith(CSV_SUFFIXES):
        return lambda p, admit: _admitted(_read_csv(p, _read_text(p)), admit)
    if name.endswith(TEXT_SUFFIXES):
        return lambda p, admit: _admitted(_read_seeds(p, _read_text(p)), admit)
    if name.endswith(BIB_SUFFIXES):
        return _read_bib
    raise CorpusError(path, None, f"unknown format; use one of {', '.join(SUPPORTED)}")


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
    admit = selection.admits if selection and selection.conditions else None
    limit = selection.limit if selection else None
    report = ReadReport(papers=[], skipped=[], partial=bool(selection))
    first_seen: dict[str, str] = {}
    for path in expand_sources(paths):
        if limit is not None and len(report.papers) >= limit:
            break
        resolved = str(path.resolve())
        for item in _reader_for(path)(path, admit):
            if not isinstance(item, CorpusError):
                report.records_read += 1
                if on_progress and report.records_read % PROGRESS_EVERY == 0:
                    on_progress(report.records_read, len(report.papers))
            if item is None:
                continue
            if not isinstance(item, Paper | CorpusError):  # a BibTeX entry without abstract
                report.without_abstract += 1
                continue
            if isinstance(item, Paper) and item.paper_id in first_seen:
                item = CorpusError(
                    path, item.line or None,
                    f"duplicate paper id {item.paper_id!r} (first at {first_seen[item.paper_id]})",
                )
            if isinstance(item, CorpusError):
                if not skip_bad:
                    raise item
                report.skipped.append(item)
                continue
            first_seen[item.paper_id] = item.source
            report.papers.append(replace(item, source_path=resolved))
            if limit is not None and len(report.papers) >= limit:
                break
    if on_progress:
        on_progress(report.records_read, len(report.papers))
    if not report.records_read and not report.skipped and not report.without_abstract:
        raise CorpusError(", ".join(str(p) for p in paths), None, "no abstracts found")
    return report


# A sentence ends at . ! or ? followed by space and what starts a sentence in an abstract. Linear
# (no backtracking), so a megabyte abstract splits in milliseconds.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$*τ])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]
