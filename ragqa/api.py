"""ragqa's Python API: open a collection, ingest papers, search, ask, chat, summarize, read its
papers. The CLI, the HTTP server and the MCP server are faces of the same operations
(ragqa.app); this one returns typed results (ragqa.results), each the `--json` object of the
command of the same name (docs/python-api.md).

    import ragqa

    papers = ragqa.open("icml", home="/tmp/ragqa-home")
    papers.ingest("icml2026.jsonl")
    answer = papers.ask("Which papers do full-duplex speech?")
    for citation in answer.citations:
        print(citation.n, citation.title)

Opening changes nothing in the process (no thread limits, no allocator options): those belong
to the CLI and the servers. Errors are ragqa.errors' (UserError for bad input, ServiceError when
a store or an LLM endpoint fails), each with a one-line message.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import ragqa.app as operations
from ragqa.answering.chat import Session, load_session, new_session, save_session
from ragqa.config import Secret, Settings, declarations, load_settings, scrub_heap_if_secrets
from ragqa.errors import UserError
from ragqa.index.store import validate_collection_name
from ragqa.models import Encoder
from ragqa.requests import (
    AskRequest,
    ChatRequest,
    IngestRequest,
    MapRequest,
    PapersRequest,
    SearchRequest,
    ShowRequest,
    SummarizeRequest,
    TrendsRequest,
)
from ragqa.results import Answer, ChatTurn, IngestReport, Paper, PapersPage, SearchResults, Summary

# Not `open`: `from ragqa.api import *` must not hide the builtin (ragqa.open is the way in).
__all__ = ["Chat", "Collection"]


def open(collection: str | None = None, *, home: str | os.PathLike | None = None,
         environ: Mapping[str, str] | None = None, **settings: Any) -> Collection:
    """A collection of the store under `home` (default RAGQA_HOME, else the user's data folder).

    Settings are read as the CLI reads them, from `environ` (default: os.environ) over the
    `.env` file that RAGQA_ENV_FILE names (default: `.env` in the current folder, which
    `environ={"RAGQA_ENV_FILE": "/dev/null"}` turns off); keyword arguments override them by
    field name, e.g. `llm_model="gpt-4o-mini"`,
    `openai_base_url="http://127.0.0.1:8080/v1"`, `chroma_host="db.lan"` (the names are the
    fields of ragqa.config.Settings; their variables are in the README's settings table).
    Nothing is loaded until the first operation; a collection that does not exist yet is
    created by its first `ingest`. The default collection, empty and never ingested into,
    takes in the bundled seeds (29 ICML 2026 abstracts) on its first question, as the CLI's
    does: name a collection of your own for your papers.
    """
    variables = {name: declared.env for name, declared in declarations()}
    given = dict(os.environ if environ is None else environ)
    if home is not None:
        settings["home"] = home
    unknown = sorted(set(settings) - set(variables))
    if unknown:
        raise UserError(f"no setting named {', '.join(unknown)} (see ragqa.config.Settings)")
    for name, value in settings.items():
        given[variables[name]] = _as_variable(value)
    loaded = load_settings(given)
    name = collection or loaded.collection
    try:
        validate_collection_name(name)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return Collection(loaded, name)


def _as_variable(value: Any) -> str:
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if not isinstance(value, str | int | float | os.PathLike):
        raise UserError(f"a setting is text, a number, a path or a bool, not "
                        f"{type(value).__name__}")
    return str(value)


class Collection:
    """One collection, kept open: the embedder, the Chroma client and the BM25 snapshot load on
    the first operation and stay warm; an ingest by this or another process is seen by the
    next operation. Safe to share between threads."""

    def __init__(self, settings: Settings, name: str) -> None:
        self._app = operations.App(settings, name)

    @property
    def name(self) -> str:
        return self._app.name

    @property
    def settings(self) -> Settings:
        return self._app.settings

    @property
    def encoder(self) -> Encoder:
        """The collection's embedder (the one it was built with), loaded on first use."""
        return self._app.retriever().store.encoder

    def __repr__(self) -> str:
        return f"<ragqa.Collection {self.name!r} in {self.settings.home}>"

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is left to flush (every write is committed when its operation returns); the
        warm parts are let go."""
        self._app = operations.App(self._app.settings, self._app.name)

    # ------------------------------------------------------------ writing

    def ingest(self, *paths: str | os.PathLike, seeds: bool = False, prune: bool = False,
               skip_bad: bool = False, rebuild: bool = False, multilingual: bool = False,
               where: tuple[str, ...] | list[str] = (), limit: int | None = None,
               on_progress: Callable[[str], None] | None = None) -> IngestReport:
        """Add the papers of files or folders (any format of docs/sources.md; `seeds`: the
        bundled ICML 2026 abstracts): incremental, as `ragqa ingest`. `on_progress` is told
        each step ("Reading: 1,200 records read, 1,200 kept", "Embedding 300/1,200").

        With a secret set (an API key, a token) and the embedded store, freed memory is
        scrubbed from then on (config.scrub_heap_if_secrets), the one change to the process
        the API makes: otherwise Chroma's index files can hold a key's bytes."""
        if not self.settings.uses_chroma_server:
            scrub_heap_if_secrets(self.settings)
        request = IngestRequest(paths=tuple(str(Path(p)) for p in paths), seeds=seeds,
                                prune=prune, skip_bad=skip_bad, rebuild=rebuild,
                                multilingual=multilingual, where=tuple(where), limit=limit)
        report = operations.ingest(self.settings, self.name, request,
                                   reading=lambda: _reading(on_progress),
                                   make_progress=lambda: _Progress(on_progress))
        return IngestReport.from_json(asdict(report))

    # ------------------------------------------------------------ reading

    def search(self, question: str, *, k: int | None = None, cut: bool = True,
               venue: str | None = None, year: int | None = None,
               category: str | None = None) -> SearchResults:
        """The papers relevant to `question`, ranked, each with its best sentence (all that
        pass the relevance cut, or the top `k`; `cut=False`: the top k, default 10)."""
        return SearchResults.from_json(self._app.search(SearchRequest(
            question=question, k=k, cut=cut, venue=venue, year=year, category=category)))

    def ask(self, question: str, *, llm: str = "auto", k: int | None = None,
            screen: str | None = None, unfold: bool = False, venue: str | None = None,
            year: int | None = None, category: str | None = None,
            on_token: Callable[[str], None] | None = None) -> Answer:
        """A cited answer: written by the configured LLM (`llm`: auto, openai or none; its
        tokens streamed to `on_token`) or extractive. A list question's answer is its
        confident core (`Answer.core`); the less certain tail is in `papers` with tier
        "tail" (`unfold=True` cites it too)."""
        request = AskRequest(question=question, llm=llm, k=k, screen=screen, unfold=unfold,
                             venue=venue, year=year, category=category)
        return Answer.from_json(self._app.ask(request, on_token=on_token))

    def chat(self, session_id: str | None = None) -> Chat:
        """A conversation whose follow-ups keep their context ("which of them use diffusion?").
        Saved under `home` after every turn: `session_id` (or `ragqa chat --resume ID`)
        continues it."""
        if session_id is None:
            return Chat(self, new_session(self.name))
        try:
            session = load_session(self.settings, session_id, exact=True)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if session.collection != self.name:
            raise UserError(f"session {session_id} is about collection {session.collection!r},"
                            f" not {self.name!r}")
        return Chat(self, session)

    def summarize(self, topic: str | None = None, *, all: bool = False,  # noqa: A002
                  max_papers: int | None = None, llm: str = "auto", screen: str | None = None,
                  venue: str | None = None, year: int | None = None,
                  category: str | None = None) -> Summary:
        """Themes, a paragraph each, references: of a topic, or of the whole collection
        (`all=True`). `Summary.markdown` is what `ragqa summarize --out` writes."""
        request = SummarizeRequest(topic=topic, all=all, max_papers=max_papers, llm=llm,
                                   screen=screen, venue=venue, year=year, category=category)
        summary, markdown = self._app.summarize(request)
        return Summary.from_json({**summary, "markdown": markdown})

    def papers(self, offset: int = 0, limit: int | None = None) -> PapersPage:
        """The collection's papers in a stable order, from `offset` (all of them without a
        `limit`)."""
        return PapersPage.from_json(self._app.papers(PapersRequest(offset=offset, limit=limit)))

    def paper(self, paper_id: str) -> Paper:
        """A paper by its id (or a unique start of one); NotFound when there is none."""
        return Paper.from_json(self._app.show(ShowRequest(paper_id=paper_id)))

    def map(self, highlight: str | None = None, *, llm: str = "none") -> dict[str, Any]:
        """The collection's map (`ragqa map --json`: docs/json.md), the papers a list question
        returns marked (`highlight`); its themes named by ragqa, or by the configured LLM with
        `llm="auto"` or `"openai"`."""
        return self._app.map(MapRequest(highlight=highlight, llm=llm))

    def trends(self, topic: str, *, by_venue: bool = False, venue: str | None = None,
               year: int | None = None, category: str | None = None) -> dict[str, Any]:
        """A topic's papers per year against the collection's (`ragqa trends --json`), and
        each venue's with `by_venue`."""
        return self._app.trends(TrendsRequest(topic=topic, by_venue=by_venue, venue=venue,
                                              year=year, category=category))

    def collections(self) -> list[str]:
        """The names of the store's collections."""
        return [c["name"] for c in self._app.collections()]


class Chat:
    """A conversation on a collection (Collection.chat). Turns of one Chat run one at a time."""

    def __init__(self, collection: Collection, session: Session) -> None:
        self._collection, self._session = collection, session
        self._lock = threading.Lock()

    @property
    def session_id(self) -> str:
        return self._session.session_id

    @property
    def turns(self) -> int:
        return len(self._session.turns)

    def ask(self, message: str, *, llm: str = "auto", screen: str | None = None,
            on_token: Callable[[str], None] | None = None) -> ChatTurn:
        """The next turn: a follow-up is read against the turns before it (offline: "the
        second one", "which of them …"; with an LLM, condensed by it). `/more 2 5 /not 3`
        marks papers of the last list, as in `ragqa chat`."""
        request = ChatRequest(message=message, llm=llm, screen=screen)
        app = self._collection._app
        with self._lock:
            if self._session.turns:  # what another Chat, or `ragqa chat --resume`, added since
                self._session = load_session(app.settings, self.session_id, exact=True)
            _, turn = operations.chat_turn(self._session, request, app.retriever(),
                                           app.llm(request.llm), on_token)
            save_session(app.settings, self._session)
        return ChatTurn.from_json(operations.turn_json(self._session, turn))


@contextmanager
def _reading(on_progress: Callable[[str], None] | None) -> Iterator[Callable[[str], None]]:
    yield on_progress or (lambda _: None)


class _Progress:
    """ingest's progress (ragqa.index.ingest.Progress) as lines for `on_progress`."""

    def __init__(self, on_progress: Callable[[str], None] | None) -> None:
        self._tell = on_progress or (lambda _: None)
        self._total = self._done = 0

    def start(self, total: int) -> None:
        self._total, self._done = total, 0
        self._tell(f"Embedding 0/{total:,}")

    def advance(self, papers: int) -> None:
        self._done += papers
        self._tell(f"Embedding {self._done:,}/{self._total:,}")

    def stage(self, message: str) -> None:
        self._tell(message)

    def finish(self) -> None:
        pass
