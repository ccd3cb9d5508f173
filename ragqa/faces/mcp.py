"""The Model Context Protocol face: ragqa's operations as MCP tools (the official `mcp` SDK),
over stdio (`ragqa mcp`, for Claude Desktop, Cursor, ...) or streamable HTTP (`/mcp` of
`ragqa serve`). Each tool returns the `--json` object of the matching command.

Tools are plain functions over one `ragqa.app.App`, run in worker threads, so a long answer
never blocks the HTTP server's other requests. The expensive ones (ragqa.requests.EXPENSIVE:
ask, summarize, the map) first take one of the server's `Slots`, the same ones `ragqa serve`'s
/api and /v1 routes take: at most --max-concurrent run at once, whichever face asked."""

# No `from __future__ import annotations`: the tools' parameter annotations are built from the
# request types (`_param`) and must be objects the SDK can read when each tool is defined.

import asyncio
import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_type_hints

from ragqa.errors import ServiceError, error_message
from ragqa.requests import (
    EXPENSIVE,
    AskRequest,
    MapRequest,
    PapersPage,
    SearchRequest,
    ShowRequest,
    SummarizeRequest,
    TrendsRequest,
    options_of,
)
from ragqa.version import __version__

if TYPE_CHECKING:
    from ragqa.app import App

INSTRUCTIONS = (
    "Search and cite ML-paper abstracts. search_papers finds the papers relevant to a question; "
    "ask answers with citations [n] that point at real, retrieved papers; get_paper gives one "
    "paper's full abstract and metadata; list_papers pages through the collection; summarize "
    "writes a themed, cited literature summary of a topic or of the whole collection; "
    "collection_map names the collection's themes and says in which the papers of a question "
    "fall; topic_trends counts a topic's papers per year.")


# Expensive operations running at once (`ragqa serve --max-concurrent`; `ragqa mcp` has this).
DEFAULT_MAX_CONCURRENT = 4
RETRY_AFTER_SECONDS = 2


class Busy(ServiceError):
    """More expensive operations asked for than a server runs and queues at once (HTTP 503)."""


class Slots:
    """At most `limit` expensive operations run at once (0: no limit), up to `queue` more wait
    in order, and any beyond that are refused at once (`Busy`), so that the latency of the
    operations taken stays bounded instead of growing with every client that arrives.

    One set per server, shared by its faces: `ragqa serve`'s routes (faces/http.py, Shed) and
    its MCP tools count against the same limit. It lives here, not in faces/http.py, because
    `ragqa mcp` over stdio needs it without the HTTP server (which imports this module).
    One event loop uses it (the tools wait for a slot on the loop, then run in a thread): no
    lock is needed."""

    def __init__(self, limit: int = DEFAULT_MAX_CONCURRENT, queue: int | None = None) -> None:
        self.limit = limit
        self.queue = 2 * limit if queue is None else queue
        self.running = 0
        self.waiting: collections.deque[asyncio.Future] = collections.deque()

    async def acquire(self) -> None:
        """A slot, at once or after those waiting before; `Busy` when the queue is full."""
        if not self.limit:
            return
        if self.running < self.limit:
            self.running += 1
            return
        if len(self.waiting) >= self.queue:
            raise Busy(f"the server is busy ({self.running} answers running, "
                       f"{len(self.waiting)} waiting): try again in {RETRY_AFTER_SECONDS} s")
        slot = asyncio.get_running_loop().create_future()
        self.waiting.append(slot)
        try:
            await slot  # handed over by an operation that finished (running stays the same)
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():
                self.release()  # it had been handed the slot: pass it on
            else:
                self.waiting.remove(slot)
            raise

    def release(self) -> None:
        if not self.limit:
            return
        while self.waiting:
            slot = self.waiting.popleft()
            if not slot.done():
                slot.set_result(None)
                return
        self.running -= 1


def _param(request_type: type, name: str) -> Any:
    """A tool parameter declared as the request type declares the field: its type, bounds and
    help become the tool's JSON schema."""
    from pydantic import Field

    _, spec = options_of(request_type)[name]
    kind = Literal[spec.choices] if spec.choices else get_type_hints(request_type)[name]
    return Annotated[kind, Field(description=spec.help, ge=spec.ge, le=spec.le,
                                 max_length=spec.max_length)]


def build(core: "App", slots: Slots | None = None) -> Any:
    """The MCPServer with ragqa's tools over `core`; its expensive tools take `slots` (a
    server's own, shared with its other routes; default: DEFAULT_MAX_CONCURRENT of their own)."""
    import anyio.to_thread
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("ragqa", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")
    # Every tool reads the collection; none changes it. Answers from an LLM are not
    # idempotent, and with one configured the server calls it (open world).
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
    writes_prose = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                   idempotent_hint=False, open_world_hint=True)

    def run(fn, *args: Any, **kwargs: Any) -> Any:
        """The operation's result, or its error as the tool's error (one line, no traceback)."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is the tool's one-line error
            raise ToolError(error_message(exc)) from None

    slots = slots if slots is not None else Slots()

    async def held(operation: str, fn: Callable[[], Any]) -> Any:
        """`run(fn)` in a worker thread; an expensive operation only once it holds a slot, and
        refused at once (the tool's error, saying when to retry) when the queue is full. The
        SDK runs every request of a session concurrently (over stdio too), so this is what
        bounds a client that sends six summaries at once."""
        if operation not in EXPENSIVE:
            return await anyio.to_thread.run_sync(run, fn)
        try:
            await slots.acquire()
        except Busy as exc:
            raise ToolError(error_message(exc)) from None
        try:
            # Cancelled (the client gave up), this waits for the thread: the slot is freed
            # when the work really ends, not before.
            return await anyio.to_thread.run_sync(run, fn)
        finally:
            slots.release()

    S, A, Z = SearchRequest, AskRequest, SummarizeRequest

    @server.tool(annotations=reads, description=(
        "Find the papers of the collection that matter for a query. Returns the `ragqa search "
        "--json` object: query, total_papers, filters, and results, a list of papers (rank, "
        "paper_id, title, source, score, best_sentence, venue, year, authors, url), all that "
        "pass the relevance cut, or the top k. venue, year and category filter the papers."))
    async def search_papers(query: _param(S, "question"),
                            k: _param(S, "k") = None,
                            cut: _param(S, "cut") = True,
                            venue: _param(S, "venue") = None, year: _param(S, "year") = None,
                            category: _param(S, "category") = None) -> dict[str, Any]:
        return await held("search", lambda: core.search(SearchRequest(
            question=query, k=k, cut=cut, venue=venue, year=year, category=category)))

    @server.tool(annotations=writes_prose, description=(
        "Answer a question from the papers. Returns the `ragqa ask --json` object: answer (text "
        "whose [n] cite papers), citations (n, paper_id, title, source, quote: the sentence of "
        "the abstract that supports it), mode (extractive, or llm when the server has an LLM), "
        "papers (the ones retrieved, each with its sentence and tier: core, the answer; tail, "
        "less certain papers of a list, folded below it unless unfold), notice, screening "
        "(when an LLM screened a list's candidates: how many it read, batches, accepted, "
        "tokens, seconds). "
        "Every citation points at a retrieved paper."))
    async def ask(question: _param(A, "question"), llm: _param(A, "llm") = "auto",
                  k: _param(A, "k") = None, screen: _param(A, "screen") = None,
                  venue: _param(A, "venue") = None, year: _param(A, "year") = None,
                  category: _param(A, "category") = None,
                  unfold: _param(A, "unfold") = False) -> dict[str, Any]:
        return await held("ask", lambda: core.ask(AskRequest(
            question=question, llm=llm, k=k, screen=screen, venue=venue, year=year,
            category=category, unfold=unfold)))

    @server.tool(annotations=reads, description=(
        "One paper by its paper_id (exactly as search_papers or ask cite it). Returns the "
        "`ragqa show --json` object: paper_id, title, text (the full abstract), authors, venue, "
        "year, url, source, code_urls."))
    async def get_paper(paper_id: _param(ShowRequest, "paper_id")) -> dict[str, Any]:
        return await held("show", lambda: core.show(ShowRequest(paper_id=paper_id)))

    @server.tool(annotations=reads, description=(
        "The papers of the collection, a page at a time (limit at most 500, as over HTTP). "
        "Returns {total, offset, limit, papers: [the `ragqa show --json` object of each]}."))
    async def list_papers(offset: _param(PapersPage, "offset") = 0,
                          limit: _param(PapersPage, "limit") = 50) -> dict[str, Any]:
        return await held("papers", lambda: core.papers(PapersPage(offset=offset, limit=limit)))

    @server.tool(annotations=writes_prose, description=(
        "A literature summary of the papers on a topic, or of the whole collection (all=true, "
        "no topic; max_papers samples it). Returns the `ragqa summarize --json` object: "
        "overview, themes (name, size, text with [n] citations, papers), references (n, "
        "paper_id, title, source), mode."))
    async def summarize(topic: _param(Z, "topic") = None,
                        all: _param(Z, "all") = False,  # noqa: A002
                        max_papers: _param(Z, "max_papers") = None,
                        llm: _param(Z, "llm") = "auto", screen: _param(Z, "screen") = None,
                        venue: _param(Z, "venue") = None, year: _param(Z, "year") = None,
                        category: _param(Z, "category") = None) -> dict[str, Any]:
        return await held("summarize", lambda: core.summarize(SummarizeRequest(
            topic=topic, all=all, max_papers=max_papers, llm=llm, screen=screen, venue=venue,
            year=year, category=category))[0])

    @server.tool(annotations=reads, description=(
        "The map of the collection: its themes (theme, name, papers, and x, y: where its label "
        "sits in the unit square) and, with highlight (a list question), the papers it returns "
        "with the theme each falls in. Returns the `ragqa map --json` object without its "
        "per-paper points (a conference's are megabytes): collection, papers, method, themes, "
        "subthemes, naming {mode: llm or offline, model, named, kept, notice}, "
        "highlight {question, paper_ids, papers: [paper_id, title, source, theme]}. The themes "
        "are named by ragqa, or by the server's LLM with llm auto or openai."))
    async def collection_map(highlight: _param(MapRequest, "highlight") = None,
                             llm: _param(MapRequest, "llm") = "none") -> dict[str, Any]:
        from ragqa.app import map_digest

        return await held("map", lambda: map_digest(core.map(MapRequest(highlight=highlight,
                                                                        llm=llm))))

    @server.tool(annotations=reads, description=(
        "A topic's papers per year against the collection's papers per year (the papers the "
        "list decision keeps for the topic). Returns the `ragqa trends --json` object: topic, "
        "papers, years [{year, papers, collection, share}] (share null: the collection has no "
        "papers of that year), venues [{venue, papers, years}] (with by_venue), without_year "
        "{papers, collection}, results [paper_id, title, source, year, venue]. Needs papers of "
        "three or more years."))
    async def topic_trends(topic: _param(TrendsRequest, "topic"),
                           by_venue: _param(TrendsRequest, "by_venue") = False,
                           venue: _param(TrendsRequest, "venue") = None,
                           year: _param(TrendsRequest, "year") = None,
                           category: _param(TrendsRequest, "category") = None
                           ) -> dict[str, Any]:
        return await held("trends", lambda: core.trends(TrendsRequest(
            topic=topic, by_venue=by_venue, venue=venue, year=year, category=category)))

    @server.tool(annotations=reads, description=(
        "The collections of this ragqa store. Returns {\"current\": the collection the tools "
        "answer from, \"papers\": how many papers it holds, \"collections\": [{\"name\"}]}."))
    async def list_collections() -> dict[str, Any]:
        return await held("collections", lambda: {
            "current": core.name, "papers": core.retriever().total_papers,
            "collections": core.collections()})

    return server


def http_app(core: "App", host: str = "127.0.0.1", slots: Slots | None = None) -> Any:
    """The streamable-HTTP app (its route is /mcp), its expensive tools taking `slots` (the
    server's). The SDK's own Host and Origin checks are off: `ragqa serve` checks the Host
    header of every route (faces/http.py, HostCheck) and `--cors` decides origins for /mcp as
    for every other route."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return build(core, slots).streamable_http_app(streamable_http_path="/mcp", host=host,
                                                  transport_security=security)


def run_stdio(core: "App", max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> None:
    """Serve over stdio. One client, but its requests run concurrently: the expensive tools
    are bounded as `ragqa serve` bounds them, at its default."""
    import anyio

    anyio.run(build(core, Slots(max_concurrent)).run_stdio_async)
