"""One request type per operation, with every option each face offers and its validation, once.

The CLI, the HTTP server and the MCP tools build these requests and render what `ragqa.app`
returns for them; none of them validates an option on its own. Each field is declared once as
an `Option` (type, default, bounds, help): the dataclass below checks it, the HTTP bodies and
the MCP tool parameters are built from it (faces/http.py, faces/mcp.py), and
tests/test_parity.py checks that every face offers every option (with the documented
exceptions listed there).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from typing import Any

from ragqa.config import LLM_CHOICES
from ragqa.errors import InvalidField, UserError
from ragqa.text import clean_question

# Characters of a question, topic or chat message: the longest a question is tested to be
# answered within a minute (tests/test_faults.py); over HTTP the 64 KB body limit comes first.
MAX_TEXT = 100_000
MAX_K = 500
MAX_SUMMARY_PAPERS = 5000
MAX_PAGE = 500


@dataclass(frozen=True)
class Option:
    """How one request field is declared to every face."""

    help: str
    ge: int | None = None
    le: int | None = None
    max_length: int | None = None
    choices: tuple[str, ...] | None = None
    pattern: str | None = None
    expected: str | None = None  # what a value that fails `pattern` should be, for people


def option(default: Any, help: str, kw_only: bool = False, **bounds: Any) -> Any:
    """A dataclass field carrying its `Option` (read back with `options_of`)."""
    return dataclass_field(default=default, kw_only=kw_only,
                           metadata={"option": Option(help, **bounds)})


def options_of(request_type: type) -> dict[str, tuple[Any, Option]]:
    """name -> (default, Option) for every field of a request type, in declaration order."""
    return {f.name: (f.default, f.metadata["option"]) for f in fields(request_type)}


def _check_bounds(request: Any) -> None:
    for f in fields(request):
        spec: Option = f.metadata["option"]
        value = getattr(request, f.name)
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidField(f"{f.name} must be a finite number")
        if spec.ge is not None and value < spec.ge:
            raise InvalidField(f"{f.name} must be at least {spec.ge}, not {value}")
        if spec.le is not None and value > spec.le:
            raise InvalidField(f"{f.name} must be at most {spec.le}, not {value}")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise InvalidField(f"{f.name} must be at most {spec.max_length} characters")
        if spec.pattern is not None and not re.fullmatch(spec.pattern, value):
            raise InvalidField(f"{f.name} must be {spec.expected}, not {value!r}"
                               if spec.expected else
                               f"{f.name} {value!r} has characters it cannot have")
        if spec.choices is not None and value not in spec.choices:
            raise UserError(f"{f.name} must be {', '.join(spec.choices[:-1])} or "
                            f"{spec.choices[-1]}, not {value!r}")


def _question(text: str | None) -> str:
    question = clean_question(text or "")
    if not question:
        raise UserError("the question is empty")
    return question


_K = "At most this many papers (default: all that pass the relevance cut)."
_VENUE = "Only papers of this venue."
_YEAR = "Only papers of this year."
_CATEGORY = "Only papers of this arXiv category (e.g. cs.CL)."
_LLM = "auto (an LLM when one is configured), openai, or none (extractive)."
_SCREEN = ("With an LLM, it reads a list's candidates and keeps the relevant ones: auto "
           "(RAGQA_SCREEN), off, or the most candidates to read, e.g. 100.")
SCREEN_PATTERN = r"^(?:auto|off|[1-9][0-9]{0,4})$"


@dataclass(frozen=True)
class _Filtered:
    """Which papers an operation reads (keyword-only: they follow each request's own fields)."""

    venue: str | None = option(None, _VENUE, kw_only=True)
    year: int | None = option(None, _YEAR, kw_only=True, ge=1, le=9999)
    category: str | None = option(None, _CATEGORY, kw_only=True)


@dataclass(frozen=True)
class SearchRequest(_Filtered):
    question: str = option("", "What to look for.", max_length=MAX_TEXT)
    k: int | None = option(None, _K, ge=1, le=MAX_K)
    cut: bool = option(True, "Apply the relevance cut (false: the top k, default 10).")

    def __post_init__(self) -> None:
        _check_bounds(self)
        object.__setattr__(self, "question", _question(self.question))


@dataclass(frozen=True)
class AskRequest(_Filtered):
    question: str = option("", "Your question about the papers.", max_length=MAX_TEXT)
    llm: str = option("auto", _LLM, choices=LLM_CHOICES)
    k: int | None = option(None, "At most this many papers as sources.", ge=1, le=MAX_K)
    screen: str | None = option(None, _SCREEN, max_length=5, pattern=SCREEN_PATTERN,
                                   expected="auto, off or a number of candidates")
    unfold: bool = option(False, "A list question: also list the less certain papers "
                          "(folded below the answer by default), cited.")

    def __post_init__(self) -> None:
        _check_bounds(self)
        object.__setattr__(self, "question", _question(self.question))


@dataclass(frozen=True)
class ChatRequest:
    message: str = option("", "The next turn of the conversation.", max_length=MAX_TEXT)
    session_id: str | None = option(None, "The session to continue (default: a new one).",
                                     max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")
    session_secret: str | None = option(
        None, "Over HTTP: the secret the session's first turn returned; an id alone does not "
        "continue a session.", max_length=200)
    llm: str = option("auto", _LLM, choices=LLM_CHOICES)
    screen: str | None = option(None, _SCREEN, max_length=5, pattern=SCREEN_PATTERN,
                                   expected="auto, off or a number of candidates")

    def __post_init__(self) -> None:
        _check_bounds(self)
        object.__setattr__(self, "message", _question(self.message))


@dataclass(frozen=True)
class SummarizeRequest(_Filtered):
    topic: str | None = option(None, "What the summary is about.", max_length=MAX_TEXT)
    all: bool = option(False, "Summarize the whole collection instead of a topic.")
    max_papers: int | None = option(None, "At most this many papers (a sample with all).",
                                    ge=2, le=MAX_SUMMARY_PAPERS)
    llm: str = option("auto", _LLM, choices=LLM_CHOICES)
    screen: str | None = option(None, _SCREEN, max_length=5, pattern=SCREEN_PATTERN,
                                   expected="auto, off or a number of candidates")

    def __post_init__(self) -> None:
        _check_bounds(self)
        topic = clean_question(self.topic or "")
        if bool(topic) == self.all:
            raise UserError("give a TOPIC or --all (one of them)")
        object.__setattr__(self, "topic", topic or None)


@dataclass(frozen=True)
class PapersRequest:
    offset: int = option(0, "Skip this many papers (the list is in a stable order).", ge=0)
    limit: int | None = option(None, "At most this many papers (default: all; 50 a page over "
                               "HTTP).", ge=1, le=None)

    def __post_init__(self) -> None:
        _check_bounds(self)


@dataclass(frozen=True)
class PapersPage(PapersRequest):
    """`papers` as a server answers it (HTTP's GET /api/papers, MCP's list_papers): one page of
    at most MAX_PAGE papers, never the whole collection in one answer (a collection of 40,000
    papers is ~100 MB of JSON, held in memory while it is sent). The CLI's PapersRequest lists
    every paper by default: it writes to the operator's own terminal or file."""

    limit: int = option(50, f"At most this many papers (a page, at most {MAX_PAGE}).", ge=1,
                        le=MAX_PAGE)

    def __post_init__(self) -> None:
        if self.limit is None:  # a JSON null: "all" is the CLI's, not a server's
            raise InvalidField(f"limit must be a number of papers, at most {MAX_PAGE}")
        super().__post_init__()


@dataclass(frozen=True)
class ShowRequest:
    # No length bound: an id is what its source says (tests/test_faults.py has one of 5,000+).
    paper_id: str = option("", "A paper id (or a unique start of one).")

    def __post_init__(self) -> None:
        _check_bounds(self)
        if not self.paper_id.strip():
            raise UserError("the paper id is empty")


@dataclass(frozen=True)
class MapRequest:
    highlight: str | None = option(None, "Mark the papers this list question returns.",
                                   max_length=MAX_TEXT)
    # Off by default: the one model measurable here (a 1.5B local one) named themes worse than
    # ragqa's own namer, judged blind (docs/benchmarks.md, "Theme names by an LLM").
    llm: str = option("none", "Name the themes with an LLM: none (ragqa's own names, the "
                      "default), auto (the configured LLM, else ragqa's own) or openai.",
                      choices=LLM_CHOICES)

    def __post_init__(self) -> None:
        _check_bounds(self)
        object.__setattr__(self, "highlight", clean_question(self.highlight or "") or None)


@dataclass(frozen=True)
class TrendsRequest(_Filtered):
    topic: str = option("", "The topic whose papers are counted per year.", max_length=MAX_TEXT)
    by_venue: bool = option(False, "Count each venue apart too: its papers on the topic "
                                   "against its papers of the year.")

    def __post_init__(self) -> None:
        _check_bounds(self)
        object.__setattr__(self, "topic", _question(self.topic))


@dataclass(frozen=True)
class IngestRequest:
    """Only the CLI ingests (a server answers from what was ingested)."""

    paths: tuple[str, ...] = option((), "Files or folders to read.")
    seeds: bool = option(False, "Ingest the bundled seeds.")
    prune: bool = option(False, "Delete papers that their source file no longer holds.")
    skip_bad: bool = option(False, "Skip bad records instead of stopping.")
    rebuild: bool = option(False, "Drop the collection and embed everything again.")
    multilingual: bool = option(False, "Also keep a multilingual vector per chunk.")
    where: tuple[str, ...] = option((), "Keep only records that meet these conditions.")
    limit: int | None = option(None, "Keep at most this many records.", ge=1)

    def __post_init__(self) -> None:
        _check_bounds(self)
        if not self.paths and not self.seeds and not self.rebuild and not self.multilingual:
            raise UserError("name files or folders to ingest, or use --seeds for the bundled "
                            "ICML 2026 abstracts")


# The operations that cost seconds of CPU or an LLM's time. A server runs at most
# --max-concurrent of them at once, whichever face asks (HTTP's routes, /v1, the MCP tools:
# faces/http.py and faces/mcp.py read this one set). Searches, pages and trends take
# milliseconds and are never held (docs/benchmarks.md, "Load shedding").
EXPENSIVE = frozenset({"ask", "chat", "summarize", "map"})

OPERATIONS = {
    "search": SearchRequest, "ask": AskRequest, "chat": ChatRequest,
    "summarize": SummarizeRequest, "papers": PapersRequest, "show": ShowRequest,
    "map": MapRequest, "trends": TrendsRequest, "ingest": IngestRequest,
}
