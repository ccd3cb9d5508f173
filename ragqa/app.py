"""The composition root and the operations: Settings -> Store, encoder, Retriever and LLM, and
one function per operation (search, ask, a chat turn, summarize, papers, show), each taking its
request type (ragqa/requests.py) and returning what its `--json` output renders (docs/json.md).

Two ways in, one set of operations. The CLI opens a collection for one command
(`open_for_query`, `llm_for`) and calls the module functions below. A long-running face (`ragqa
serve`, `ragqa mcp`) builds one `App`, which keeps the embedder, the Chroma client and the BM25
snapshot warm across requests and calls the same functions.

Heavy libraries (chromadb, llama-index, onnxruntime) are imported inside functions: the CLI
imports this module for `ragqa --help`.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragqa.answering import summarize as summaries
from ragqa.answering.answer import Answer, answer_question
from ragqa.answering.chat import (
    Session,
    Turn,
    ask_in_session,
    load_session,
    new_owned_session,
    new_session,
    save_session,
)
from ragqa.answering.chat import list_sessions as chat_sessions
from ragqa.config import Settings, load_settings
from ragqa.errors import LockTimeout, NotFound, StoreError, UserError
from ragqa.index import lexical
from ragqa.index.follow import collection_lock, follow
from ragqa.index.ingest import (
    PHASES,
    REBUILD_SUFFIX,
    IngestReport,
    finish_interrupted_rebuild,
    ingest_paths,
    ingest_sources,
)
from ragqa.index.journal import JOURNAL_SUFFIX, LEASES_SUFFIX
from ragqa.index.store import (
    MULTILINGUAL_SUFFIX,
    Store,
    describe_chroma_error,
    local_dir,
    open_client,
    validate_collection_name,
)
from ragqa.maps import collection_map as maps
from ragqa.maps import naming as map_naming
from ragqa.maps import trends as topic_trends
from ragqa.models import LLM, Encoder
from ragqa.models.encoders import make_encoder, make_multilingual_encoder
from ragqa.models.language import detect_language
from ragqa.models.llm import make_llm
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
from ragqa.resources import seed_files
from ragqa.retrieval.fitted import whole_list
from ragqa.retrieval.retriever import Retriever
from ragqa.retrieval.types import Filters, SearchResult
from ragqa.screening.screen import Progress
from ragqa.sources import ReadReport, read_sources
from ragqa.sources.paper import Paper
from ragqa.sources.select import Selection
from ragqa.version import __version__

if TYPE_CHECKING:
    from ragqa.answering.summarize import Summary


# ---------------------------------------------------------------- opening a collection

def settings_for(collection: str | None) -> tuple[Settings, str]:
    settings = load_settings()
    name = collection or settings.collection
    try:
        validate_collection_name(name)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return settings, name


def start_loading_encoder(settings: Settings) -> Future[Encoder]:
    """The embedder, loading on a thread of its own (~0.5 s, mostly in onnxruntime's C++):
    the caller reads its sources or imports chromadb meanwhile. Its errors come with
    `.result()`."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragqa-model-load")
    loading = pool.submit(make_encoder, settings)
    pool.shutdown(wait=False)
    return loading


def multilingual_encoder(settings: Settings, wanted: bool):
    """The multilingual encoder when wanted (it loads its model on first use), else None."""
    if not wanted:
        return None
    return make_multilingual_encoder(settings)


def open_store(settings: Settings, name: str, loading: Future[Encoder] | None = None
               ) -> Store:
    """The collection's Store; `loading`, an encoder already loading (start_loading_encoder)."""
    # Loading the model and importing chromadb (~1 s) overlap when done side by side: a cold
    # `ragqa search` starts 0.4 s sooner.
    loading = loading or start_loading_encoder(settings)
    import chromadb  # noqa: F401 - the slow import, meanwhile

    encoder = loading.result()

    return Store(settings, name, encoder)


def is_foreign(question: str | None) -> bool:
    """Whether a question is in another language than English, as the answer reads it
    (models/language.py: plain ASCII may be French too, "Quels articles traitent de la parole
    full-duplex ?")."""
    return bool(question) and detect_language(question) != "English"


SEED_PAPERS = 29  # the bundled ICML 2026 seeds


SEEDED_COLLECTION = "default"  # the one collection the bundled seeds fill unasked
INGEST_TRIED = "ingest-tried"  # a file in a collection's folder: an ingest into it was begun


def open_for_query(settings: Settings, name: str, quiet: bool = False,
                   store: Store | None = None, question: str | None = None) -> Retriever:
    """The retriever of a collection. The default collection, never filled nor ingested into,
    gets the bundled seeds first, with multilingual vectors when the question that fills it is
    in another language (29 papers: seconds; an English first question pays nothing for them).
    Any other empty collection is a user's own, waiting for its papers: UserError."""
    store = store or open_store(settings, name)
    finish_interrupted_rebuild(store)
    if not store.exists() or store.count() == 0:
        if name != SEEDED_COLLECTION or (local_dir(settings, name) / INGEST_TRIED).exists():
            _wait_for_an_ingest(settings, store, quiet)
            if not store.exists() or store.count() == 0:
                raise UserError(f"collection {name!r} holds no papers: add them with `ragqa "
                                f"ingest FILE... -c {name}` (the bundled seeds: `ragqa ingest "
                                f"--seeds -c {name}`)")
            return Retriever(store)
        if not quiet:
            sys.stderr.write(f"ragqa: collection {name!r} is empty; ingesting the bundled "
                             "ICML 2026 seeds (29 abstracts) first\n")
        ingest_paths(store, seed_files(), only_if_empty=True,
                     multilingual=multilingual_encoder(settings, is_foreign(question)))
    elif is_foreign(question) and not store.multilingual_embedder():
        retriever = Retriever(store)
        if not holds_only_the_seeds(retriever):
            return retriever  # the answer says how to add them (ragqa ingest --multilingual)
        # The bundled seeds, filled by an English first question: their multilingual vectors
        # are seconds away, so a question in another language gets them rather than a notice.
        if not quiet:
            sys.stderr.write(f"ragqa: adding multilingual vectors to collection {name!r} (the "
                             "bundled seeds, 29 abstracts) for a question in another language\n")
        ingest_paths(store, seed_files(), multilingual=multilingual_encoder(settings, True))
    return Retriever(store)


def _wait_for_an_ingest(settings: Settings, store: Store, quiet: bool) -> None:
    """A collection that looks empty while an ingest on this machine fills it for the first
    time: wait for that ingest (it holds the collection lock), then read what it wrote."""
    folder = local_dir(settings, store.name)
    if not folder.is_dir():
        return
    try:
        with collection_lock(folder, 0):
            return  # no ingest under way
    except LockTimeout:
        pass
    if not quiet:
        sys.stderr.write(f"ragqa: collection {store.name!r} is empty; waiting for the ingest "
                         "into it to finish\n")
    with collection_lock(folder, settings.lock_timeout):
        store.reopen()


def holds_only_the_seeds(retriever: Retriever) -> bool:
    """Whether a collection holds the bundled seeds and nothing else."""
    index = retriever.lexical
    if index is None or not 0 < index.size <= SEED_PAPERS:
        return False
    held = set(index.paper_ids_by_index(range(index.size)))
    return held <= {p.paper_id for p in read_sources(seed_files()).papers}


def llm_for(settings: Settings, choice: str | None) -> LLM | None:
    """The LLM that `choice` (a request's checked `llm`: auto, openai or none) asks for."""
    if choice and choice != "auto":
        settings = settings.with_overrides(llm=choice)
    return make_llm(settings)


# ---------------------------------------------------------------- ingest

def selection_of(request: IngestRequest) -> Selection | None:
    """The request's --where/--limit as a Selection (None: every record)."""
    try:
        selection = Selection.parse(list(request.where), request.limit)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if selection and request.prune:
        raise UserError("--prune deletes what the files no longer hold; with --where or "
                        "--limit it would delete the rest of each file: use one or the other")
    return selection


def nothing_kept(where: Sequence[str], read: ReadReport) -> str:
    """What a --where that kept none of the records read had to choose from."""
    seen = "; ".join(
        f"{field}: " + ", ".join(f"{value} ({count})" for value, count in sorted(
            values.items(), key=lambda item: (-item[1], item[0]))[:8])
        for field, values in read.seen.items() if values)
    return (f"--where {' --where '.join(where)} kept none of the {read.records_read} records "
            f"read" + (f"; they have {seen}" if seen else ""))


def ingest(settings: Settings, name: str, request: IngestRequest,
           reading: Callable[[], AbstractContextManager[Callable[[str], None]]],
           make_progress: Callable[[], Any], on_started: Callable[[], None] = lambda: None
           ) -> IngestReport:
    """`ragqa ingest`: read every source (all of them parse before anything is written), then
    add, replace and (with prune) remove papers. `reading()` shows the reading phase's
    progress; `make_progress()` the embedding's; `on_started()` marks the end of start-up."""
    sources = [Path(p) for p in request.paths] + (seed_files() if request.seeds else [])
    selection = selection_of(request)
    # From now on the collection is the user's: a question never fills it with the bundled
    # seeds, even when this ingest fails (the user's papers are what they wait for).
    folder = local_dir(settings, name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / INGEST_TRIED).touch()
    # The model loads while the sources are read; the store opens (and writes) only once
    # they have all parsed.
    loading = start_loading_encoder(settings)
    with PHASES.phase("reading"), reading() as show:
        read = read_sources(sources, skip_bad=request.skip_bad, selection=selection,
                            on_progress=lambda n, kept: show(
                                f"Reading: {n:,} records read, {kept:,} kept")
                            ) if sources else None
    if read and selection and selection.conditions and read.records_read and not read.papers:
        raise UserError(nothing_kept(request.where, read))
    with PHASES.phase("opening the store"):
        store = open_store(settings, name, loading)
    on_started()
    # The bundled seeds get multilingual vectors unasked: 29 papers, seconds, and their
    # users ask in Chinese too (one seed file is headed "ICML 2026 论文列表").
    wanted = request.multilingual or (request.seeds and not request.paths)
    return ingest_sources(store, read, prune=request.prune, rebuild=request.rebuild,
                          progress=make_progress(),
                          multilingual=multilingual_encoder(settings, wanted))


# ---------------------------------------------------------------- operations and their JSON

def _hit_json(rank: int, hit: Any) -> dict:
    paper = hit.paper
    return {
        "rank": rank, "paper_id": paper.paper_id, "title": paper.title, "source": paper.source,
        "score": round(hit.score, 6), "similarity": round(hit.similarity, 4),
        "bm25": round(hit.bm25, 4), "z": round(hit.z, 3), "coverage": round(hit.coverage, 3),
        "best_sentence": hit.best_sentence, "venue": paper.venue, "year": paper.year,
        "authors": paper.authors, "url": paper.url, "tier": hit.tier,
    }


def search_json(result: SearchResult, collection: str) -> dict:
    return {
        "query": result.query, "collection": collection, "total_papers": result.total_papers,
        "filters": result.filters, "relevance_cut": result.cut_applied,
        "candidates": result.considered,
        "results": [_hit_json(i, h) for i, h in enumerate(result.hits, start=1)],
    }


def filters_of(request: SearchRequest | AskRequest | SummarizeRequest | TrendsRequest
               ) -> Filters:
    return Filters(venue=request.venue, year=request.year, category=request.category)


def search(retriever: Retriever, request: SearchRequest, sentences: bool = True
           ) -> SearchResult:
    """`ragqa search`: every relevant paper (or the top k), or the top k (10) without the cut.
    A question in another language is searched with the multilingual vectors."""
    k = request.k or (None if request.cut else 10)
    if is_foreign(request.question):
        return retriever.search_foreign(request.question, k=k, filters=filters_of(request),
                                        cut=request.cut)
    return retriever.search(request.question, k=k, filters=filters_of(request),
                            cut=request.cut, sentences=sentences)


def ask(retriever: Retriever, request: AskRequest, llm: LLM | None,
        on_token: Callable[[str], None] | None = None,
        on_screen: Progress | None = None) -> Answer:
    """`ragqa ask`: a cited answer, written by `llm` (streamed to `on_token`) or extractive; a
    list question's candidates screened by `llm` first (progress to `on_screen`)."""
    return answer_question(retriever, request.question, llm=llm,
                           on_token=on_token if llm else None, k=request.k,
                           filters=filters_of(request), screen=request.screen,
                           on_screen=on_screen, unfold=request.unfold)


def summarize(retriever: Retriever, request: SummarizeRequest, llm: LLM | None,
              on_progress: Callable[[str], None] | None = None,
              on_screen: Progress | None = None) -> Summary:
    """`ragqa summarize`: themes, a paragraph each, references (of a topic, or of the whole
    collection with `all`); a topic's papers screened by `llm` first."""
    return summaries.summarize(retriever, request.topic, llm=llm,
                               max_papers=request.max_papers, on_progress=on_progress,
                               filters=filters_of(request), screen=request.screen,
                               on_screen=on_screen)


def summary_json(summary: Summary, retriever: Retriever | None = None) -> dict:
    """`summarize --json`; with the retriever, also the topic's papers per year (`trend`) when
    the collection's papers span three or more years (else null)."""
    return summaries.as_json(summary) | {
        "trend": summary_trend(retriever, summary) if retriever is not None else None}


def summary_trend(retriever: Retriever, summary: Summary) -> dict | None:
    """The summary's papers per year against the collection's (None without a topic or without
    three years of papers)."""
    if not summary.topic or retriever.lexical is None:
        return None
    collection = retriever.lexical.all_papers()
    if len({p.year for p in collection if p.year}) < topic_trends.MIN_YEARS:
        return None
    papers = [p for theme in summary.themes for p in theme.papers]
    return topic_trends.as_json(topic_trends.count_by_year(summary.topic, papers, collection),
                                retriever.store.name)


def summary_markdown(summary: Summary, images: Sequence[tuple[str, str]] = ()) -> str:
    """The summary as the Markdown `summarize --out` writes, with `images` ((alt text, file
    name) each, written beside it) after the overview."""
    return summaries.to_markdown(summary, images)


def summary_pictures(retriever: Retriever, summary: Summary,
                     on_progress: Callable[[str], None] | None = None) -> dict:
    """What `summarize --out FILE.md` draws beside the text: the collection's map with the
    summary's papers coloured by their themes (`map`, `focus`), and, when the collection's
    papers span three or more years, the papers per year (`trend`, else None)."""
    collection_map = maps.collection_map(retriever, on_progress)
    papers = [p for theme in summary.themes for p in theme.papers]
    focus = {"topic": summary.topic or "the whole collection",
             "paper_ids": [p.paper_id for p in papers],
             "themes": [t.name for t in summary.themes],
             "theme_of": {p.paper_id: i for i, t in enumerate(summary.themes)
                          for p in t.papers}}
    return {"map": maps.as_json(collection_map, retriever.store.name), "focus": focus,
            "trend": summary_trend(retriever, summary)}


def paper_map(retriever: Retriever, request: MapRequest,
              on_progress: Callable[[str], None] | None = None,
              cached: dict | None = None, llm: LLM | None = None) -> dict:
    """`ragqa map`: every paper's place and theme, and the papers a list question returns
    (`highlight`). `cached`: this state's map as an earlier call returned it (a server's).
    With an `llm`, the themes are named by it (maps.naming; kept once named)."""
    result = cached if cached is not None and cached.get("state") == (
        retriever.lexical.fingerprint if retriever.lexical else "") else maps.as_json(
        maps.collection_map(retriever, on_progress), retriever.store.name)
    if llm is not None and result["themes"]:
        result = map_naming.llm_named(result, llm, retriever.store.settings,
                                      maps.maps_folder(retriever), on_progress)
    else:
        result = {**result, "naming": map_naming.offline_naming(result)}
    if request.highlight:
        hits = whole_list(search(retriever, SearchRequest(question=request.highlight),
                                 sentences=False).hits)
        result = {**result, "highlight": {"question": request.highlight,
                                          "paper_ids": [h.paper.paper_id for h in hits]}}
    return result


def _theme_name(result: dict, theme: int) -> str | None:
    """A theme's name; None for a paper apart from every theme (maps.regions.NOISE)."""
    return result["themes"][theme]["name"] if theme >= 0 else None


def map_digest(result: dict) -> dict:
    """A map without its per-paper points (MCP's `collection_map`): the themes, and each
    highlighted paper with its theme."""
    points = result["points"]
    row = {pid: i for i, pid in enumerate(points["paper_id"])}
    digest = {k: v for k, v in result.items() if k != "points"}
    if result.get("highlight"):
        digest["highlight"] = result["highlight"] | {"papers": [
            {"paper_id": pid, "title": points["title"][row[pid]],
             "source": points["source"][row[pid]],
             "theme": _theme_name(result, points["theme"][row[pid]])}
            for pid in result["highlight"]["paper_ids"] if pid in row]}
    return digest


def trends(retriever: Retriever, request: TrendsRequest) -> dict:
    """`ragqa trends TOPIC`: the papers the list decision keeps for the topic, per year,
    against the collection's papers per year."""
    counted = topic_trends.trend(retriever, request.topic, filters_of(request),
                                 foreign=is_foreign(request.topic),
                                 split_venues=request.by_venue)
    return topic_trends.as_json(counted, retriever.store.name)


def chat_turn(session: Session, request: ChatRequest, retriever: Retriever, llm: LLM | None,
              on_token: Callable[[str], None] | None = None,
              on_screen: Progress | None = None) -> tuple[Answer, Turn]:
    """One turn of `session` (a follow-up is condensed with the turns before it), added to
    it; the caller saves the session."""
    return ask_in_session(session, request.message, retriever, llm,
                          on_token=on_token if llm else None, screen=request.screen,
                          on_screen=on_screen)


def open_session(settings: Settings, collection: str, resume: bool,
                 session_id: str | None) -> Session:
    """A new chat session on `collection`, or a saved one (`session_id`, or the latest, which
    the CLI also finds by a unique start of its id)."""
    if not resume:
        return new_session(collection)
    try:
        return load_session(settings, session_id)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def list_sessions(settings: Settings) -> list[dict]:
    return chat_sessions(settings)


def papers_page(retriever: Retriever, request: PapersRequest) -> tuple[int, list[Paper]]:
    """The collection's size and the papers of one page (all from `offset` without a limit)."""
    index = retriever.lexical
    if index is None:
        return 0, []
    limit = request.limit if request.limit is not None else max(index.size - request.offset, 0)
    return index.size, index.papers_page(request.offset, limit)


def paper_json(paper: Paper) -> dict:
    record = asdict(paper)
    del record["source_path"]  # a path of the ingesting machine; `source` names the file
    del record["former_ids"]  # what ingest matches stored papers by
    record["code_urls"] = paper.code_urls
    return record


def papers_json(papers: list[Paper], collection: str) -> dict:
    return {"collection": collection, "count": len(papers),
            "papers": [paper_json(p) for p in papers]}


def find_paper(retriever: Retriever, collection: str, request: ShowRequest) -> Paper:
    """`ragqa show`: a paper by id or by a unique start of its id (the CLI's convenience)."""
    paper_id = request.paper_id
    index = retriever.lexical
    paper = index.paper(paper_id) if index else None
    if paper is None and index:
        matches = index.find_prefix(paper_id)
        if len(matches) > 1:
            raise UserError(f"{paper_id!r} is the start of several ids: {', '.join(matches)}")
        paper = index.paper(matches[0]) if matches else None
    if paper is None:
        raise NotFound(f"no paper with id {paper_id!r} in collection {collection!r}")
    return paper


def turn_json(session: Session, turn: Turn) -> dict:
    """`ragqa chat --json`: one turn, the ask object plus what the conversation adds."""
    return {**turn.answer, "standalone_question": turn.standalone,
            "session_id": session.session_id, "turn": len(session.turns)}


# Sibling collections ragqa keeps beside a collection, never listed as collections.
HIDDEN_SUFFIXES = (REBUILD_SUFFIX, MULTILINGUAL_SUFFIX, JOURNAL_SUFFIX, LEASES_SUFFIX)


def collections_json(settings: Settings) -> list[dict]:
    """The ragqa collections of the store, by name."""
    try:
        names = [str(getattr(c, "name", c)) for c in open_client(settings).list_collections()]
    except Exception as exc:  # noqa: BLE001 - a store that cannot list is a store error
        raise StoreError(describe_chroma_error(settings, exc)) from None
    return [{"name": n[len("ragqa_"):]} for n in sorted(names)
            if n.startswith("ragqa_") and not n.endswith(HIDDEN_SUFFIXES)]


# ---------------------------------------------------------------- one process, many requests

FOLLOW_SECONDS = 1.0  # how often a server looks for other machines' writes (issue 28)


class App:
    """One collection kept open for many requests (`ragqa serve`, `ragqa mcp`): the embedder,
    the Chroma client and the BM25 snapshot load once. Each request asks `retriever()`, which
    switches to a snapshot written by an ingest since (reading the snapshot's CURRENT file is
    the only per-request cost); requests already running finish on the old one."""
    def __init__(self, settings: Settings, name: str, encoder: Any = None,
                 follow_in_background: bool = False) -> None:
        self.settings, self.name = settings, name
        # On a shared Chroma server: a server follows other machines' writes on a thread of
        # its own (_follow_the_server); a library's App looks before each operation instead,
        # starting no thread that outlives it.
        self._follow_in_background = follow_in_background
        self._encoder = encoder  # shared with the App this one was opened from
        self._others: dict[str, App] = {}
        self._lock = threading.Lock()
        # A lock per session that a turn runs on: held only while some turn holds or waits
        # for it (weakly), so the table is as large as the turns running, not as every session
        # ever seen (a dict grew by one lock per session for the server's life).
        self._session_locks: weakref.WeakValueDictionary[str, threading.Lock] = \
            weakref.WeakValueDictionary()
        self._llms: dict[str, Any] = {}
        self._retriever: Retriever | None = None
        self._snapshot: str | None = None
        self._following = False  # see _follow_the_server
        self._map: dict | None = None  # the map of the last state asked (`map`)
        self._map_lock = threading.Lock()
        # Naming a map with an LLM (maps.naming) is asked once at a time, apart from the map
        # itself: an offline map or a highlight never waits on a model.
        self._naming_lock = threading.Lock()

    @classmethod
    def serving(cls, settings: Settings, name: str) -> App:
        """The App of a server (`ragqa serve`, `ragqa mcp`), whose parallelism is its requests:
        the embedder and BLAS on one thread per request (RAGQA_EMBED_THREADS, when set, still
        decides the embedder's). Process-wide, hence here and not in every App: a library
        user's process is their own."""
        serve_one_thread_per_request()
        if not settings.embed_threads:
            settings = settings.with_overrides(embed_threads=1)
        return cls(settings, name, follow_in_background=True)

    @classmethod
    def open(cls, collection: str | None = None) -> App:
        """A server's App with everything loaded now, not on the first request."""
        app = cls.serving(*settings_for(collection))
        app.retriever()
        return app

    # ------------------------------------------------------------ the warm parts

    def _current_snapshot(self) -> str | None:
        state = lexical.read_current(local_dir(self.settings, self.name))
        return state.get("dir") if state else None

    def _follow_the_server(self) -> None:
        """On a shared Chroma server, look for other machines' writes every FOLLOW_SECONDS, in a
        background thread started with the first request: a request never waits for it, an idle
        server stays current, and the first request after a new snapshot is written gets it
        (`retriever`)."""
        if not self.settings.uses_chroma_server or self._retriever is None:
            return
        with self._lock:
            if self._following:
                return
            self._following = True
        threading.Thread(target=self._follow, name="ragqa-follow", daemon=True).start()

    def _follow(self) -> None:
        follower: Store | None = None
        said = ""
        while True:
            time.sleep(FOLLOW_SECONDS)
            try:
                # Opened here, not before the loop: a server down at that moment is retried.
                follower = follower or Store(self.settings, self.name,
                                             self._retriever.store.encoder)
                follow(follower, wait=False)
                said = ""
            except Exception as exc:  # noqa: BLE001 - requests go on with the snapshot they have
                if str(exc) != said:  # once per distinct failure, not every second
                    said = str(exc)
                    sys.stderr.write(f"ragqa: could not follow collection {self.name!r}: "
                                     f"{said}\n")

    def retriever(self) -> Retriever:
        if self._follow_in_background:
            self._follow_the_server()
        elif self.settings.uses_chroma_server and self._retriever is not None:
            # Other machines' writes, looked for now: one request to the server.
            follow(self._retriever.store, wait=False)
        snapshot = self._current_snapshot()
        retriever = self._retriever
        if retriever is not None and snapshot == self._snapshot:
            return retriever
        with self._lock:
            if self._retriever is None:

                store = Store(self.settings, self.name, self._encoder) if self._encoder else None
                self._retriever = open_for_query(self.settings, self.name, quiet=True,
                                                 store=store)
            elif snapshot != self._snapshot:
                # An ingest (another process) wrote a new snapshot: embedded Chroma does not see
                # that process's writes until the client is opened again (Store.reopen).

                store = Store(self.settings, self.name, self._retriever.store.encoder)
                store.reopen()
                self._retriever = Retriever(store)
            index = self._retriever.lexical
            self._snapshot = index.folder.name if index else None  # the one it opened
            return self._retriever

    def other(self, name: str) -> App:
        """The App of another collection of the same store (sharing the embedder); only of a
        collection that exists, never one a request's typo would create."""
        if name == self.name:
            return self
        with self._lock:
            if name not in self._others:
                if name not in {c["name"] for c in self.collections()}:
                    raise NotFound(f"no collection {name!r} (collections: "
                                   f"{', '.join(c['name'] for c in self.collections())})")
                self._others[name] = App(self.settings, name,
                                         self._retriever.store.encoder if self._retriever
                                         else self._encoder, self._follow_in_background)
        return self._others[name]

    def llm(self, choice: str | None):
        """The LLM for `choice`, built once and shared by every request (each call returns its
        own Reply)."""
        choice = choice or "auto"
        if choice == "openai" and not self.settings.llm_configured:
            # A client may ask for the extractive answer, never for a model (and the network,
            # and a bill) that the operator did not configure.
            raise UserError("this server has no LLM configured: ask with llm 'auto' or 'none'")
        if choice not in self._llms:
            self._llms[choice] = llm_for(self.settings, choice)
        return self._llms[choice]

    # ------------------------------------------------------------ operations

    def health(self) -> dict:
        retriever = self.retriever()
        model = self.llm("auto")
        return {"status": "ok", "version": __version__, "collection": self.name,
                "papers": retriever.total_papers, "mode": "llm" if model else "extractive",
                "llm_model": model.model if model else None}

    def search(self, request: SearchRequest) -> dict:
        return search_json(search(self.retriever(), request), self.name)

    def ask(self, request: AskRequest, on_token: Callable[[str], None] | None = None,
            on_screen: Progress | None = None) -> dict:
        return ask(self.retriever(), request, self.llm(request.llm), on_token,
                   on_screen).as_json()

    def chat(self, request: ChatRequest, on_token: Callable[[str], None] | None = None,
             on_screen: Progress | None = None) -> dict:
        """One turn of a saved conversation (`ragqa chat`'s sessions: `ragqa chat --resume ID`
        continues it). A new session when `session_id` is None."""
        model = self.llm(request.llm)
        secret = None
        if request.session_id is None:
            session, secret = new_owned_session(self.name)
        else:
            session = self._owned_session(request)
        with self._session_lock(session.session_id):
            if request.session_id is not None:  # what another request may have added meanwhile
                session = load_session(self.settings, session.session_id, exact=True)
            _, turn = chat_turn(session, request, self.retriever(), model, on_token, on_screen)
            save_session(self.settings, session)
        # The secret is said once, with the first turn; later turns must send it.
        return turn_json(session, turn) | ({"session_secret": secret} if secret else {})

    def _owned_session(self, request: ChatRequest) -> Session:
        """The session a request continues: its exact id and the secret its first turn gave.
        Whether the id exists or the secret is wrong, the answer is the same "no session"."""
        refused = NotFound(f"no session {request.session_id!r} for this client (a session "
                           "continues with the exact id and the session_secret its first turn "
                           "returned)")
        try:
            session = load_session(self.settings, request.session_id, exact=True)
        except ValueError:
            raise refused from None
        if not session.owned_by(request.session_secret):
            raise refused
        if session.collection != self.name:
            raise UserError(f"session {session.session_id} is about collection "
                            f"{session.collection!r}; this server answers from {self.name!r}")
        return session

    def chat_history(self, history: list[tuple[str, str, list[dict]]], request: ChatRequest,
                     on_token: Callable[[str], None] | None = None,
                     on_screen: Progress | None = None) -> dict:
        """A turn after an earlier conversation that the client holds (OpenAI-style messages:
        (question, answer text, the papers it cited as {"n", "paper_id", "title", "source"}),
        condensed as `ragqa chat` condenses a follow-up. Nothing is saved."""
        session = new_session(self.name)
        for question, answer, cited in history:
            session.turns.append(Turn(question, question, {"answer": answer, "citations": cited},
                                      [c["paper_id"] for c in cited]))
        _, turn = chat_turn(session, request, self.retriever(), self.llm(request.llm), on_token,
                            on_screen)
        return turn_json(session, turn) | {"session_id": None}

    def summarize(self, request: SummarizeRequest, on_screen: Progress | None = None
                  ) -> tuple[dict, str]:
        """The `summarize --json` object and the Markdown `--out` writes."""
        retriever = self.retriever()
        summary = summarize(retriever, request, self.llm(request.llm), on_screen=on_screen)
        return summary_json(summary, retriever), summary_markdown(summary)

    def map(self, request: MapRequest) -> dict:
        """`map --json`; the map of each state is computed once and kept (and its LLM names,
        on disk: maps.naming)."""
        retriever = self.retriever()
        with self._map_lock:  # two first requests compute it once
            self._map = paper_map(retriever, MapRequest(), cached=self._map)
        llm = self.llm(request.llm)
        if llm is None:
            return paper_map(retriever, request, cached=self._map)
        with self._naming_lock:  # two first requests name it once (then from the disk)
            return paper_map(retriever, request, cached=self._map, llm=llm)

    def trends(self, request: TrendsRequest) -> dict:
        return trends(self.retriever(), request)

    def papers(self, request: PapersRequest) -> dict:
        """A page of `papers --json`'s list (read page by page: a collection may hold 40,000)."""
        total, items = papers_page(self.retriever(), request)
        return {"total": total, "offset": request.offset, "limit": request.limit,
                "papers": [paper_json(p) for p in items]}

    def show(self, request: ShowRequest) -> dict:
        return paper_json(find_paper(self.retriever(), self.name, request))

    def collections(self) -> list[dict]:
        return collections_json(self.settings)

    def _session_lock(self, session_id: str) -> threading.Lock:
        """The lock of `session_id`'s turns: the caller's reference keeps it in the table (a
        `with` holds it to its end), and it leaves the table with the last turn that held it."""
        with self._lock:
            return self._session_locks.setdefault(session_id, threading.Lock())


def serve_one_thread_per_request() -> None:
    """A server's parallelism is its requests: BLAS (numpy's matrix products) runs each product
    on one thread, as `App` runs the embedder (onnxruntime) on one. Their default, a team of
    threads per product on every core, costs a search 2.5 times the CPU on two cores (the team
    spins while it waits for a core that another request holds) and adds no speed: the
    products are small (2,000 x 384 by a few vectors). `bench/search_cpu.py` measures it."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
