"""The Python API's results: one frozen dataclass per `--json` object (docs/json.md), field for
field, so that a notebook reads `answer.citations[0].title` where a script reads
`["citations"][0]["title"]`. Each is built from the object the operation returns
(`from_json`) and gives it back (`to_json`); tests/test_python_api.py checks, on real output,
that every key of every object is a field and every field a key.

Nested objects that are papers or parts of an answer are typed; the open-ended ones (timings,
labels, screening, marks, a summary's trend) stay dicts, as documented in docs/json.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Result")


@dataclass(frozen=True)
class Result:
    """A `--json` object as a dataclass."""

    #: field name -> the Result type of each element of that list field
    _items: ClassVar[dict[str, type[Result]]] = {}

    @classmethod
    def from_json(cls: type[R], obj: dict[str, Any]) -> R:
        """The result of `obj`: each of its keys a field (an unknown key is an error, so that
        a new key in the JSON cannot go missing here unnoticed)."""
        names = {f.name for f in fields(cls)}
        unknown = set(obj) - names
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)}")
        values = {}
        for name, value in obj.items():
            item = cls._items.get(name)
            values[name] = [item.from_json(v) for v in value] if item and value is not None \
                else value
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """The `--json` object again."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = [v.to_json() for v in value] if f.name in self._items and \
                value is not None else value
        return out


@dataclass(frozen=True)
class PaperRef(Result):
    """A paper named in an answer: what every paper of every object carries."""

    paper_id: str
    title: str
    source: str


@dataclass(frozen=True)
class Paper(Result):
    """A stored paper (`ragqa show --json`)."""

    paper_id: str
    title: str
    text: str
    source: str
    authors: str
    venue: str
    year: int | None
    url: str
    title_derived: bool
    line: int
    extra: dict[str, Any]
    code_urls: list[str]


@dataclass(frozen=True)
class SearchHit(Result):
    """One paper of a search, with the signals it was ranked by."""

    rank: int
    paper_id: str
    title: str
    source: str
    score: float
    similarity: float
    bm25: float
    z: float
    coverage: float
    best_sentence: str
    venue: str
    year: int | None
    authors: str
    url: str
    tier: str


@dataclass(frozen=True)
class SearchResults(Result):
    """`ragqa search --json`."""

    _items: ClassVar[dict[str, type[Result]]] = {"results": SearchHit}

    query: str
    collection: str
    total_papers: int
    filters: dict[str, Any]
    relevance_cut: bool
    candidates: int
    results: list[SearchHit]


@dataclass(frozen=True)
class Citation(Result):
    """A paper the answer cites: `n` is its number in the text, `quote` the sentence that backs
    it, `answer_span` where in `quote` a fact answer's figure or phrase is."""

    n: int
    paper_id: str
    title: str
    source: str
    quote: str
    answer_span: list[int] | None


@dataclass(frozen=True)
class AnswerPaper(Result):
    """A paper retrieved as a source, with its tier: `core` (the answer), `tail` (a list's less
    certain papers), `review` (new candidates after marks); `excluded` when it was folded for
    being nearer what the question says it does not want."""

    paper_id: str
    title: str
    source: str
    score: float
    sentence: str
    tier: str
    excluded: bool = False


@dataclass(frozen=True)
class Answer(Result):
    """`ragqa ask --json`: the answer text with its checked citations."""

    _items: ClassVar[dict[str, type[Result]]] = {
        "citations": Citation, "papers": AnswerPaper, "closest": PaperRef}

    question: str
    mode: str
    answer: str
    citations: list[Citation]
    unsupported: list[dict[str, Any]]
    repaired: list[dict[str, Any]]
    fallback: str
    timings: dict[str, Any]
    dropped_citations: int
    language: str
    retrieval_query: str
    notice: str
    model: str
    total_papers: int
    papers: list[AnswerPaper]
    closest: list[PaperRef]
    labels: dict[str, str]
    screening: dict[str, Any] | None
    marks: dict[str, Any] | None

    @property
    def core(self) -> list[AnswerPaper]:
        """The papers of the answer (a list's confident core), without the folded tail."""
        return [p for p in self.papers if p.tier == "core"]


@dataclass(frozen=True)
class ChatTurn(Answer):
    """`ragqa chat --json`: one turn, an Answer plus what the conversation adds."""

    standalone_question: str
    session_id: str | None
    turn: int


@dataclass(frozen=True)
class Reference(Result):
    n: int
    paper_id: str
    title: str
    source: str


@dataclass(frozen=True)
class Theme(Result):
    """A theme of a summary: its paragraph (`text`) and papers."""

    _items: ClassVar[dict[str, type[Result]]] = {"papers": PaperRef}

    name: str
    size: int
    text: str
    papers: list[PaperRef]
    repaired: int
    unsupported: list[dict[str, Any]]
    heading: str


@dataclass(frozen=True)
class Summary(Result):
    """`ragqa summarize --json`, and `markdown`: what `summarize --out` writes."""

    _items: ClassVar[dict[str, type[Result]]] = {"themes": Theme, "references": Reference}

    topic: str | None
    mode: str
    papers_considered: int
    overview: str
    themes: list[Theme]
    references: list[Reference]
    llm_calls: int
    tokens: int
    dropped_citations: int
    language: str
    screening: dict[str, Any] | None
    notice: str
    labels: dict[str, str]
    trend: dict[str, Any] | None
    markdown: str = ""


@dataclass(frozen=True)
class PapersPage(Result):
    """A page of the collection's papers (`ragqa papers --json` reads them all)."""

    _items: ClassVar[dict[str, type[Result]]] = {"papers": Paper}

    total: int
    offset: int
    limit: int | None
    papers: list[Paper]


@dataclass(frozen=True)
class IngestReport(Result):
    """`ragqa ingest --json`: what an ingest added, replaced, removed and skipped."""

    collection: str
    added: int
    updated: int
    deleted: int
    moved: int
    unchanged: int
    skipped_bad: int
    records_read: int
    without_abstract: int
    tallies: dict[str, int]
    not_in_sources: int
    chunks: int
    papers_total: int
    lexical_rebuilt: bool
    seconds: float
    skipped_messages: list[str]
    multilingual: bool
    multilingual_embedded: int
    multilingual_chunks: int
    multilingual_seconds: float
